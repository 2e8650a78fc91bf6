"""Where each partition ends now, as a broker answers it (for `mapper.caught_up`).

Asked through the mapper's AdminClient, never its consumer: a broker serves one request per
connection at a time, so on the consumer's connection the query would wait behind the fetch
long-poll, and a timed-out request makes librdkafka drop that connection (`socket.max.fails`),
fetches in flight included. Under load that repeats every heartbeat and the mapper stalls for
good (seen in the fault test). The end is the last stable offset, as the consumer reads
committed records only.
"""

from __future__ import annotations

from collections.abc import Collection

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from mapper.caught_up import PartitionKey

END_OFFSETS_TIMEOUT_S = 1.0


def end_offsets(
    admin: AdminClient,
    partitions: Collection[PartitionKey],
    *,
    timeout_s: float = END_OFFSETS_TIMEOUT_S,
) -> dict[PartitionKey, int] | None:
    """The end offset of each partition by a broker's answer to one ListOffsets round trip;
    None when no complete answer came (broker down or slow: nobody is confirmed caught up)."""
    if not partitions:
        return {}
    futures = admin.list_offsets(
        {TopicPartition(topic, partition): OffsetSpec.latest() for topic, partition in partitions},
        isolation_level=IsolationLevel.READ_COMMITTED,
        request_timeout=timeout_s,
    )
    ends: dict[PartitionKey, int] = {}
    try:
        for tp, future in futures.items():
            ends[(tp.topic, tp.partition)] = future.result().offset
    except KafkaException:
        return None
    return ends
