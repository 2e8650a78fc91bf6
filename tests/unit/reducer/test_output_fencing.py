"""A fenced owner's transaction ends in `FencedError`, whichever call learns of the fencing
(reducer/output.py): the owner then stops as a zombie instead of recovering and retrying."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import reducer.output
from mars.config import KafkaSettings
from reducer.output import FencedError, OutputError, OutRecord, TransactionalOutput


class RefusingProducer:
    """Takes one record, then refuses produce() with `code` (as librdkafka does once a fatal
    error was raised, e.g. the fencing answered to AddPartitionsToTxn)."""

    code = KafkaError._FATAL

    def __init__(self, config: dict[str, Any]) -> None:
        self.produced = 0
        self.aborted = False

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic: str, value: bytes | None, key: bytes) -> None:
        if self.produced:
            raise KafkaException(KafkaError(self.code, "Unable to produce message"))
        self.produced += 1

    def abort_transaction(self, timeout: float) -> None:
        self.aborted = True


def _commit(monkeypatch: pytest.MonkeyPatch, code: int) -> tuple[OutputError, RefusingProducer]:
    monkeypatch.setattr(RefusingProducer, "code", code)
    monkeypatch.setattr(reducer.output, "Producer", RefusingProducer)
    output = TransactionalOutput(
        kafka=KafkaSettings(), transactional_id="mars-t-0", transaction_timeout_ms=60_000
    )
    records = [OutRecord("out", b"k", b"1"), OutRecord("out", b"k", b"2")]
    with pytest.raises(OutputError) as raised:
        output.commit(records)
    return raised.value, output._producer  # type: ignore[return-value]


def test_a_produce_refused_after_a_fatal_error_is_a_fencing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    error, producer = _commit(monkeypatch, KafkaError._FATAL)
    assert isinstance(error, FencedError)
    assert not producer.aborted  # a fenced producer cannot abort


def test_another_produce_error_aborts_the_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    error, producer = _commit(monkeypatch, KafkaError._MSG_TIMED_OUT)
    assert not isinstance(error, FencedError)
    assert producer.aborted
