"""Where each partition ends now, as a broker answers it (for `mapper.caught_up` and the Spark
stream's heartbeat, `spark.stream`).

Asked through an AdminClient of its own, never the mapper's consumer: a broker serves one
request per connection at a time, so on the consumer's connection the query would wait behind
the fetch long-poll, and a timed-out request makes librdkafka drop that connection
(`socket.max.fails`), fetches in flight included. Under load that repeated every heartbeat and
the mapper stalled for good (seen in the fault test).

The client is rebuilt after a failed answer: after a broker restart librdkafka's admin
ListOffsets keeps sending the leader epoch it cached before and gets FENCED_LEADER_EPOCH for
good (librdkafka#4620 is the consumer's side of the same loop); a fresh client reads fresh
metadata. The end is the last stable offset, as the consumer reads committed records only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from confluent_kafka import IsolationLevel, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

END_OFFSETS_TIMEOUT_S = 1.0

PartitionKey = tuple[str, int]  # (topic, partition)


class EndOffsetQuery:
    """`ends(partitions)`: one ListOffsets round trip; a failure rebuilds the client."""

    def __init__(
        self, make_admin: Callable[[], AdminClient], *, timeout_s: float = END_OFFSETS_TIMEOUT_S
    ) -> None:
        self._make_admin = make_admin
        self._admin = make_admin()
        self._timeout_s = timeout_s

    def ends(self, partitions: Collection[PartitionKey]) -> dict[PartitionKey, int] | None:
        """The end offset of each partition by a broker's answer now; None when no complete
        answer came (broker down, slow or fenced: nobody is confirmed caught up)."""
        found = end_offsets(self._admin, partitions, timeout_s=self._timeout_s)
        if found is None:
            self._admin = self._make_admin()
        return found


def end_offsets(
    admin: AdminClient,
    partitions: Collection[PartitionKey],
    *,
    timeout_s: float = END_OFFSETS_TIMEOUT_S,
) -> dict[PartitionKey, int] | None:
    """The end offset of each partition by one ListOffsets round trip of `admin`; None when
    no complete answer came."""
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
