"""A fenced producer's close must not raise out of the owner's `finally` (reducer/output.py)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

import reducer.output
from mars.config import KafkaSettings
from reducer.output import TransactionalOutput


class FencedProducer:
    def __init__(self, config: dict[str, Any]) -> None:
        self.flushed = False

    def flush(self, timeout: float) -> int:
        self.flushed = True
        raise KafkaException(KafkaError(KafkaError._FENCED))


def test_close_of_a_fenced_producer_does_not_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reducer.output, "Producer", FencedProducer)
    output = TransactionalOutput(
        kafka=KafkaSettings(), transactional_id="mars-t-0", transaction_timeout_ms=60_000
    )
    output.close()
    assert output._producer.flushed  # type: ignore[attr-defined]
