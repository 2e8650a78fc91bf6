"""A fenced owner's transaction ends in `FencedError`, whichever call learns of the fencing
(reducer/output.py): the owner then stops as a zombie instead of recovering and retrying."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import reducer.output
from mars.config import KafkaSettings
from reducer.output import (
    FencedError,
    OutputError,
    OutRecord,
    RecordRun,
    ToWrite,
    TransactionalOutput,
)


class RefusingProducer:
    """Takes one record, then refuses produce() with `code` (as librdkafka does once a fatal
    error was raised, e.g. the fencing answered to AddPartitionsToTxn)."""

    code = KafkaError._FATAL

    def __init__(self, config: dict[str, Any]) -> None:
        self.produced = 0
        self.aborted = False

    def begin_transaction(self) -> None:
        pass

    def produce(self, topic: str, value: bytes | None, key: bytes, partition: int = -1) -> None:
        if self.produced:
            raise KafkaException(KafkaError(self.code, "Unable to produce message"))
        self.produced += 1

    def abort_transaction(self, timeout: float) -> None:
        self.aborted = True


# the same two records one at a time, and as a window's slice of results
SHAPES = {
    "records": [OutRecord("out", b"k", b"1"), OutRecord("out", b"k", b"2")],
    "run": [RecordRun("out", [b"k", b"k"], [b"1", b"2"])],
}


def _commit(
    monkeypatch: pytest.MonkeyPatch, code: int, records: list[ToWrite]
) -> tuple[OutputError, RefusingProducer]:
    monkeypatch.setattr(RefusingProducer, "code", code)
    monkeypatch.setattr(reducer.output, "Producer", RefusingProducer)
    output = TransactionalOutput(
        kafka=KafkaSettings(), transactional_id="mars-t-0", transaction_timeout_ms=60_000
    )
    with pytest.raises(OutputError) as raised:
        output.commit(records)
    return raised.value, output._producer  # type: ignore[return-value]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_produce_refused_after_a_fatal_error_is_a_fencing(
    monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    error, producer = _commit(monkeypatch, KafkaError._FATAL, SHAPES[shape])
    assert isinstance(error, FencedError)
    assert not producer.aborted  # a fenced producer cannot abort


@pytest.mark.parametrize("shape", SHAPES)
def test_another_produce_error_aborts_the_transaction(
    monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    error, producer = _commit(monkeypatch, KafkaError._MSG_TIMED_OUT, SHAPES[shape])
    assert not isinstance(error, FencedError)
    assert producer.aborted
