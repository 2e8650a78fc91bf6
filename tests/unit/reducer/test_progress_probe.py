"""The progress reader's shared probe: one that fails is replaced, and a scan starts at the log
start offset it gives.

A 3-broker run under CPU load showed why a probe is replaced: after the controller's broker was
killed, the reducer's shared probe answered "Unknown partition" for minutes and one unit never
recovered (`tests/integration/scale/test_three_brokers.py`). The probes and scan consumers here
are stand-ins: what is tested is which client the reader asks and where it starts, not Kafka.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mars.config import KafkaSettings
from reducer import progress_reader


class StandInProbe:
    def __init__(self, answer: int | None, *, low: int = 7) -> None:
        self.answer = answer  # the high watermark; None: fails as the stale probe did
        self.low = low  # the log start offset
        self.closed = False

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        if self.answer is None:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
        return self.low, self.answer

    def close(self) -> None:
        self.closed = True


@pytest.fixture(autouse=True)
def no_probe_kept() -> Iterator[None]:
    progress_reader.close_readers()
    yield
    progress_reader.close_readers()


def stand_ins(monkeypatch: pytest.MonkeyPatch, answers: list[int | None]) -> list[StandInProbe]:
    """The probes the reader makes, in order, each answering the next of `answers`."""
    made: list[StandInProbe] = []
    left = iter(answers)

    def consumer(kafka: KafkaSettings, *, isolation: str) -> StandInProbe:
        assert isolation == "read_uncommitted"
        made.append(StandInProbe(next(left)))
        return made[-1]

    monkeypatch.setattr(progress_reader, "_consumer", consumer)
    monkeypatch.setattr(progress_reader, "_close_in_background", lambda probe: probe.close())
    return made


def test_a_probe_that_fails_is_closed_and_a_new_one_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made = stand_ins(monkeypatch, [None, 42])
    kafka = KafkaSettings()
    assert progress_reader._bounds(kafka, "mars.progress", 3) == (7, 42)
    assert [probe.closed for probe in made] == [True, False]
    # The new probe is the one kept: the next read asks it, no third client is made.
    assert progress_reader._bounds(kafka, "mars.progress", 3) == (7, 42)
    assert len(made) == 2


def test_a_read_fails_when_the_new_probe_fails_too(monkeypatch: pytest.MonkeyPatch) -> None:
    made = stand_ins(monkeypatch, [None, None])
    with pytest.raises(KafkaException):
        progress_reader._bounds(KafkaSettings(), "mars.progress", 3)
    assert [probe.closed for probe in made] == [True, True]


class StandInScan:
    """A read_committed scan consumer with nothing to give: its position is already at the end."""

    def __init__(self, end: int) -> None:
        self.end = end
        self.assigned: list[tuple[str, int, int]] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = [(tp.topic, tp.partition, tp.offset) for tp in partitions]

    def poll(self, timeout: float) -> None:
        return None

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.end) for tp in partitions]

    def close(self) -> None:
        pass


def scans_of(monkeypatch: pytest.MonkeyPatch, low: int, high: int) -> list[StandInScan]:
    """A probe answering (`low`, `high`) for every partition; the scan consumers made, in order."""
    probe, scans = StandInProbe(high, low=low), []

    def consumer(kafka: KafkaSettings, *, isolation: str) -> StandInProbe | StandInScan:
        if isolation == "read_uncommitted":
            return probe
        scans.append(StandInScan(high))
        return scans[-1]

    monkeypatch.setattr(progress_reader, "_consumer", consumer)
    monkeypatch.setattr(progress_reader, "_close_in_background", lambda client: client.close())
    return scans


def read(key: str) -> object:
    return progress_reader.read_progress(
        kafka=KafkaSettings(), topic="mars.progress", key=key, partitions=8, timeout_s=5
    )


def test_a_scan_starts_at_the_log_start_offset_as_a_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not OFFSET_BEGINNING: librdkafka resolves a logical offset on a 500 ms retry timer when
    the consumer's metadata is not there yet, which made every scan half a second longer."""
    scans = scans_of(monkeypatch, low=7, high=42)
    assert read("task/3") is None
    assert len(scans) == 1
    [(topic, _partition, offset)] = scans[0].assigned
    assert (topic, offset) == ("mars.progress", 7)


def test_a_partition_with_nothing_below_its_high_watermark_is_not_scanned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scans = scans_of(monkeypatch, low=5, high=5)
    assert read("task/3") is None
    assert scans == []
