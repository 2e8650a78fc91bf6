"""The progress reader's shared high-watermark probe: one that fails is replaced.

A 3-broker run under CPU load showed why: after the controller's broker was killed, the
reducer's shared probe answered "Unknown partition" for minutes and one unit never recovered
(`tests/integration/scale/test_three_brokers.py`). The probes here are stand-ins: what is
tested is which client the reader asks, not Kafka.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from mars.config import KafkaSettings
from reducer import progress_reader


class StandInProbe:
    def __init__(self, answer: int | None) -> None:
        self.answer = answer  # None: fails as the stale probe did
        self.closed = False

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        if self.answer is None:
            raise KafkaException(KafkaError(KafkaError._UNKNOWN_PARTITION))
        return 0, self.answer

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
    assert progress_reader._end_offset(kafka, "mars.progress", 3) == 42
    assert [probe.closed for probe in made] == [True, False]
    # The new probe is the one kept: the next read asks it, no third client is made.
    assert progress_reader._end_offset(kafka, "mars.progress", 3) == 42
    assert len(made) == 2


def test_a_read_fails_when_the_new_probe_fails_too(monkeypatch: pytest.MonkeyPatch) -> None:
    made = stand_ins(monkeypatch, [None, None])
    with pytest.raises(KafkaException):
        progress_reader._end_offset(KafkaSettings(), "mars.progress", 3)
    assert [probe.closed for probe in made] == [True, True]
