"""Kafka offset ranges of a backfill: parsing `--starting-offsets` / `--ending-offsets`.

The specs follow Spark's Kafka source: `earliest`, `latest`, or JSON
`{"<topic>": {"<partition>": <offset>, ...}}` where -2 means earliest and -1 latest. Partitions a
JSON spec leaves out take the default (earliest for the start, latest for the end). The driver
resolves them to explicit offsets against the topic's current watermarks, so the range is fixed
before the job starts (and the end becomes the hand-over point to the live mappers).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

EARLIEST = -2
LATEST = -1


class OffsetSpecError(ValueError):
    """A starting/ending offsets spec that cannot be understood."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetRange:
    """Offsets `[start, end)` of one partition."""

    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


ALL_PARTITIONS = -1  # key of a parsed spec that applies to every partition not named


def parse_offsets_spec(text: str, *, topic: str) -> dict[int, int]:
    """Partition -> offset (EARLIEST/LATEST allowed); `earliest`/`latest` -> {ALL_PARTITIONS: x}."""
    spec = text.strip()
    if spec in ("earliest", "latest"):
        return {ALL_PARTITIONS: EARLIEST if spec == "earliest" else LATEST}
    try:
        data = json.loads(spec)
    except ValueError as exc:
        raise OffsetSpecError(f"offsets must be earliest, latest or JSON: {exc}") from None
    if not isinstance(data, dict) or set(data) - {topic}:
        raise OffsetSpecError(f'offsets JSON must look like {{"{topic}": {{"0": 42}}}}')
    per_partition = data.get(topic, {})
    if not isinstance(per_partition, dict):
        raise OffsetSpecError("offsets JSON: the topic must map to {partition: offset}")
    out: dict[int, int] = {}
    for partition, offset in per_partition.items():
        if not str(partition).isdigit() or not isinstance(offset, int) or offset < EARLIEST:
            raise OffsetSpecError(f"bad offset entry {partition!r}: {offset!r}")
        out[int(partition)] = offset
    return out


def resolve_ranges(
    *,
    starting: Mapping[int, int],
    ending: Mapping[int, int],
    watermarks: Mapping[int, tuple[int, int]],
) -> list[OffsetRange]:
    """Explicit `[start, end)` per partition from parsed specs and (low, high) watermarks.

    `ALL_PARTITIONS` in a parsed spec applies to every partition it does not name; an offset
    beyond the partition's watermarks is clamped into `[low, high]`.
    """

    def pick(spec: Mapping[int, int], partition: int, fallback: int) -> int:
        return spec.get(partition, spec.get(ALL_PARTITIONS, fallback))

    ranges: list[OffsetRange] = []
    for partition, (low, high) in sorted(watermarks.items()):
        start = pick(starting, partition, EARLIEST)
        end = pick(ending, partition, LATEST)
        start = low if start == EARLIEST else high if start == LATEST else start
        end = low if end == EARLIEST else high if end == LATEST else end
        start = min(max(start, low), high)
        end = min(max(end, low), high)
        ranges.append(OffsetRange(partition=partition, start=start, end=max(start, end)))
    return ranges
