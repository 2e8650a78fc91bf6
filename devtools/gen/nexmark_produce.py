"""Write generated Nexmark bids (`devtools.gen.nexmark`) to a Kafka topic, as fast as it takes them.

Bid `i` goes to partition `i % partitions` (keyed by its auction): the bids are in time order,
so every partition is too. The producer is `devtools.gen.produce`'s (idempotent, `acks=all`), so the
topic holds each bid exactly once, in order per partition.
"""

from __future__ import annotations

import time
from collections import Counter

from confluent_kafka import Producer

from devtools.gen.nexmark import Bids, encode_bids, sentinel_bid
from devtools.gen.produce import (
    THROUGHPUT_CONFIG,
    DeliveryErrors,
    ProduceError,
    ProduceReport,
    produce_one,
)
from mars.clients.kafka_config import client_config
from mars.config import KafkaSettings

CHUNK = 65_536


def produce_bids(
    kafka: KafkaSettings,
    topic: str,
    bids: Bids,
    *,
    partitions: int,
    sentinel_ms: int | None = None,
    flush_timeout_s: float = 120.0,
) -> ProduceReport:
    """Produce `bids` to `topic` (which must have `partitions` partitions), then, with
    `sentinel_ms`, one sentinel bid per partition at that time; wait for delivery. Raises
    `ProduceError` when a record was not delivered."""
    errors = DeliveryErrors()
    producer = Producer(client_config(kafka, {**THROUGHPUT_CONFIG, "on_delivery": errors}))
    started = time.monotonic()
    per_partition: Counter[int] = Counter()
    for lo in range(0, len(bids), CHUNK):
        values = encode_bids(bids, lo, min(lo + CHUNK, len(bids)))
        auctions = bids.auction[lo : lo + len(values)].tolist()
        for index, (value, auction) in enumerate(zip(values, auctions, strict=True)):
            partition = (lo + index) % partitions
            produce_one(producer, topic, value, str(auction).encode(), partition)
            per_partition[partition] += 1
        producer.poll(0)
    if sentinel_ms is not None:
        for partition in range(partitions):
            produce_one(producer, topic, sentinel_bid(sentinel_ms), b"sentinel", partition)
    produced = len(bids) + (partitions if sentinel_ms is not None else 0)
    undelivered = producer.flush(flush_timeout_s)
    report = ProduceReport(
        topic=topic,
        produced=produced,
        delivered=produced - errors.count - undelivered,
        failed=errors.count,
        malformed=0,
        per_partition=dict(sorted(per_partition.items())),
        elapsed_s=time.monotonic() - started,
        first_errors=tuple(errors.first),
    )
    if report.delivered != produced:
        raise ProduceError(report)
    return report
