"""`mars.clients.native_consumer`: what it hands librdkafka and how its errors look to the
mapper (pure logic; the broker side is tests/integration/mapper/test_native_consumer.py)."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaException

from mapper.mapper_process import consumer_config, source_consumer
from mars.clients.kafka_config import BACKLOG_CONSUMER
from mars.clients.native_consumer import NativeConsumer, _librdkafka_config
from mars.config import load_settings


def test_python_values_become_librdkafka_strings() -> None:
    assert _librdkafka_config(
        {"enable.auto.commit": False, "enable.partition.eof": True, "session.timeout.ms": 6000}
    ) == {
        "enable.auto.commit": "false",
        "enable.partition.eof": "true",
        "session.timeout.ms": "6000",
    }


def test_the_mapper_config_is_accepted_by_the_native_consumer() -> None:
    config = consumer_config(load_settings(), member_id="m")
    assert config["fetch.queue.backoff.ms"] == BACKLOG_CONSUMER["fetch.queue.backoff.ms"]
    NativeConsumer(config).close()  # librdkafka validates every property on creation


@pytest.mark.parametrize("batch_timeout_ms", [100, 40])
def test_a_fetch_at_the_partitions_ends_waits_no_longer_than_a_batch(
    batch_timeout_ms: int,
) -> None:
    """librdkafka sends a broker one fetch at a time: while one waits at the partitions' ends,
    a partition just assigned or sought is not fetched. With librdkafka's 500 ms a mapper got
    nothing for 0.36-0.57 s after each rebalance (docs/mapper.md, "When partitions move")."""
    settings = load_settings(mapper={"batch_timeout_ms": batch_timeout_ms})
    config = consumer_config(settings, member_id="m")
    assert config["fetch.wait.max.ms"] == batch_timeout_ms
    assert config["heartbeat.interval.ms"] <= 250  # members hear of a rebalance this soon


def test_a_bad_property_is_a_kafka_exception_naming_it() -> None:
    with pytest.raises(KafkaException, match=r"no\.such\.property"):
        NativeConsumer({"group.id": "g", "no.such.property": "1"})


@pytest.mark.parametrize(("wanted", "kind"), [("native", NativeConsumer), ("confluent", None)])
def test_mapper_consumer_picks_the_consumer(wanted: str, kind: type | None) -> None:
    consumer = source_consumer(load_settings(mapper={"consumer": wanted}), member_id="m")
    try:
        if kind is None:
            assert not isinstance(consumer, NativeConsumer)
        else:
            assert isinstance(consumer, kind)
    finally:
        consumer.close()
