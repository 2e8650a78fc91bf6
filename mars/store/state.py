"""Value types of the SEQ protocol and their packed Redis encodings.

Packed values are short ASCII strings so the Lua scripts can read and compare them without a
decoder: a source state is `applied_offset:stream_time_ms:last_data_wall_ms` (an empty field
means "none"), a liveness entry is `caught_up(0|1):heartbeat_wall_ms[:caught_up_since_ms]`.
Integers are written in canonical decimal, which lets the scripts compare offsets as strings
(no float rounding in Lua).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from mars.tasks.rewind import TaskRewind

SourceId = int | str
"""Who advances an applied offset: a Kafka partition number for the live mappers, or a string
such as `backfill:<job>:<partition>` for a bulk job writing an offset range of its own."""

SourceKey = TypeVar("SourceKey", int, str)
"""A source id type in signatures: `Mapping` keys are invariant, so callers with
`dict[int, ...]` (partitions) or `dict[str, ...]` (backfill) both type-check."""

NO_OFFSET = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceState:
    """Progress of one source: last applied Kafka offset and its stream time.

    `last_data_wall_ms` is set by the store (the writer's `now_ms` of the last batch that
    advanced the offset); callers leave it None when they pass a state to `apply_batch`.
    """

    applied_offset: int = NO_OFFSET
    stream_time_ms: int | None = None
    last_data_wall_ms: int | None = None
    # watermark = 'key': the source's key clocks (mars.engine.key_clocks), stored beside it.
    key_clocks: bytes | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveState:
    """What the mapper owning a partition last reported about it (for idleness).

    `caught_up_since_ms`: since when the mapper has confirmed, check after check and from broker
    answers newer than its last consumed record, that it is at the end of the partition (None:
    not reported, e.g. by a scripted test writer; idleness then rests on the data times alone).
    """

    caught_up: bool
    heartbeat_wall_ms: int
    caught_up_since_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Backlog:
    """A task's data sets in Redis: `unmerged` wait for a reducer (what pauses mappers);
    `unreleased` are still stored (merged ones wait for the next checkpoint or window close)."""

    unmerged: int
    unreleased: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """What a mapper tells of a task's source partitions it owns (`SeqStore.heartbeats`):
    the topic's partition count, whether each is caught up (at the end of the partition and not
    paused), and since when, for those that are."""

    partition_count: int
    partitions: Mapping[int, bool]
    caught_up_since: Mapping[int, int] = field(default_factory=dict)


class ApplyStatus(StrEnum):
    APPLIED = "applied"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True, kw_only=True)
class LayoutEpoch:
    """`SeqStore.change_layout`'s answer: the task's latest bucket-layout epoch in Redis, and
    whether this call made it (None fields: generation 0, or an epoch Redis knows only by
    its start)."""

    changed: bool
    generation: int
    from_window_ms: int | None
    buckets: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApplyResult:
    """Outcome of `SeqStore.apply_batch`.

    APPLIED: `seqs` maps each written bucket to its new data set number.
    REJECTED: nothing was written; `sources` holds the stored states of the expected sources
    (re-read, drop records at or below their applied offsets, and retry).
    """

    status: ApplyStatus
    seqs: Mapping[int, int] = field(default_factory=dict)
    sources: Mapping[SourceId, SourceState] = field(default_factory=dict)

    @property
    def applied(self) -> bool:
        return self.status is ApplyStatus.APPLIED

    def covers(self, sources: Mapping[SourceKey, SourceState]) -> bool:
        """True if the batch that wrote `sources` is already in Redis, by this or another writer:
        APPLIED, or REJECTED with every stored offset at or beyond the batch's new offsets (the
        answer to a retry after a lost reply)."""
        if self.applied:
            return True
        return all(
            (stored := self.sources.get(source)) is not None
            and stored.applied_offset >= state.applied_offset
            for source, state in sources.items()
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """One bucket's high mark together with the task's watermark inputs, read atomically.

    Every data set the reducer still needs is numbered `rseq..seq`. Because the sources were read
    in the same instant as `seq`, every non-late record of a window closed by the watermark
    computed from `sources` (`end + grace <= watermark`) is inside a data set numbered <= `seq`.
    """

    bucket: int
    seq: int
    rseq: int
    sources: Mapping[int, SourceState]
    live: Mapping[int, LiveState]
    partition_count: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitSnapshot:
    """The snapshots of a reducer unit's buckets and the task's backfill holds, read in the
    same atomic step (never after them): a hold gone at that instant means every backfill data
    set is numbered at or below the seqs shown (docs/spark.md), so closing windows by these
    snapshots is safe once no hold is left."""

    backfill_holds: frozenset[str]
    snapshots: Mapping[int, Snapshot]
    # The task's rewinds, read in the same step (never before the snapshots): a data set
    # numbered above a rewind's marker S[b] exists only after the marker, so no snapshot shows
    # one without it.
    rewinds: tuple[TaskRewind, ...] = ()


def text_of(value: bytes | str) -> str:
    """A Redis reply field as text (the store's clients answer bytes)."""
    return value.decode() if isinstance(value, bytes) else value


def source_field(source: SourceId) -> str:
    return str(source)


def parse_source_field(name: str) -> SourceId:
    return int(name) if name.isdigit() else name


def _opt_int(text: str) -> int | None:
    return int(text) if text else None


def _opt_str(value: int | None) -> str:
    return "" if value is None else str(value)


def pack_source(state: SourceState) -> str:
    return (
        f"{state.applied_offset}:{_opt_str(state.stream_time_ms)}:"
        f"{_opt_str(state.last_data_wall_ms)}"
    )


def unpack_source(packed: str | bytes) -> SourceState:
    text = packed.decode() if isinstance(packed, bytes) else packed
    offset, stream_time, last_data = text.split(":")
    return SourceState(
        applied_offset=int(offset),
        stream_time_ms=_opt_int(stream_time),
        last_data_wall_ms=_opt_int(last_data),
    )


def pack_live(state: LiveState) -> str:
    packed = f"{int(state.caught_up)}:{state.heartbeat_wall_ms}"
    return packed if state.caught_up_since_ms is None else f"{packed}:{state.caught_up_since_ms}"


def unpack_live(packed: str | bytes) -> LiveState:
    text = packed.decode() if isinstance(packed, bytes) else packed
    caught_up, heartbeat, *since = text.split(":")
    return LiveState(
        caught_up=caught_up == "1",
        heartbeat_wall_ms=int(heartbeat),
        caught_up_since_ms=int(since[0]) if since else None,
    )
