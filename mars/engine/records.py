"""The values that flow into and out of the batch engine."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRecord:
    """One Kafka record of the task's source topic (only what the engine needs)."""

    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedRecord:
    """A record that did not make it into a window: bad (dead-letter) or late.

    Carries the original bytes, so the side topic receives exactly what was produced.
    """

    partition: int
    offset: int
    value: bytes
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchPartials:
    """The result of pre-aggregating one batch of one task.

    `datasets` maps bucket -> encoded data set (`mars.engine.dataset`), non-empty buckets only.
    `stream_times` / `last_offsets` are per partition after this batch: the mapper stores them
    with the applied offsets so the next batch (or a restarted mapper) continues the same
    lateness decisions. Counts: `records_in == accepted + len(late) + len(bad)`, and
    `filtered` (WHERE false or NULL) is the part of `accepted` that contributes to no window.
    """

    datasets: dict[int, bytes]
    late: list[RejectedRecord] = field(default_factory=list)
    bad: list[RejectedRecord] = field(default_factory=list)
    stream_times: dict[int, int] = field(default_factory=dict)
    last_offsets: dict[int, int] = field(default_factory=dict)
    records_in: int = 0
    accepted: int = 0
    filtered: int = 0
