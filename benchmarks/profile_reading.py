"""Reading a pyinstrument text report: seconds and share of the frames that matter."""

from __future__ import annotations

import re

_FRAME = re.compile(r"^[\s|`\-]*(?P<seconds>\d+\.\d+)\s+(?P<name>\S+)")

HOT_FRAMES = (
    ("MapperLoop._process", "handling consumed batches (all tasks)"),
    ("Preaggregator.run", "pre-aggregation of a batch"),
    ("CsvRecordDecoder.decode", "CSV decode (csv.reader per record)"),
    ("Preaggregator._datasets", "data sets: bucket + msgpack encode per group"),
    ("group_by_partition", "per-message Python loop: offsets and values per partition"),
    ("SeqStore.apply_batch", "Redis apply script"),
    ("SideTopicProducer.publish", "side topics"),
    ("Consumer.consume", "Kafka consume"),
)


def frame_seconds(text: str) -> dict[str, float]:
    """Frame name -> seconds, summed over every place the frame appears (pure)."""
    seconds: dict[str, float] = {}
    for line in text.splitlines():
        match = _FRAME.match(line)
        if match:
            name = match.group("name")
            seconds[name] = seconds.get(name, 0.0) + float(match.group("seconds"))
    return seconds


def hot_frame_lines(text: str) -> list[str]:
    """One line per hot frame found: seconds and share of the busy time (batch handling)."""
    seconds = frame_seconds(text)
    busy = seconds.get("MapperLoop._process")
    if not busy:
        return []
    lines = []
    for name, meaning in HOT_FRAMES:
        value = seconds.get(name)
        if value is not None:
            lines.append(
                f"`{name}` ({meaning}): {value:.2f} s, {value / busy:.0%} of batch handling"
            )
    return lines


def hot_frame_shares(text: str) -> dict[str, float]:
    """Hot frame -> its share of the busy time (batch handling)."""
    seconds = frame_seconds(text)
    busy = seconds.get("MapperLoop._process")
    if not busy:
        return {}
    return {name: seconds[name] / busy for name, _ in HOT_FRAMES if name in seconds}
