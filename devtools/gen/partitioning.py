"""Which Kafka partition each generated record goes to.

The producer picks partitions itself instead of leaving it to librdkafka, so the placement is
known to the tests (per-partition order matters for lateness) and does not depend on the
client library: keyed placement uses the Java client's default partitioner,
`toPositive(murmur2(key)) % partitions`, so Mars and any Java/Kafka Streams producer agree on
where a `sip` lives.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


class PartitionStrategy(StrEnum):
    KEY = "key"  # by the record's key (its `sip`): one sip stays in one partition
    ROUND_ROBIN = "round_robin"  # record i of the stream to partition i mod partitions


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` as a signed 32-bit int (seed 0x9747b28c)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def key_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a keyed record."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class PartitionChooser:
    """Assigns partitions to consecutive chunks of one stream.

    Keyed placement memoises the hash per distinct key (the generator's keys are a small pool).
    """

    def __init__(self, *, strategy: PartitionStrategy, partitions: int) -> None:
        if partitions <= 0:
            raise ValueError(f"partitions must be > 0, got {partitions}")
        self._strategy = strategy
        self._partitions = partitions
        self._by_key: dict[bytes, int] = {}

    def choose(self, *, keys: Sequence[bytes], start_index: int) -> list[int]:
        """Partitions for the records `start_index ..` whose keys are `keys`."""
        n = self._partitions
        if self._strategy is PartitionStrategy.ROUND_ROBIN:
            return [i % n for i in range(start_index, start_index + len(keys))]
        cache = self._by_key
        chosen = []
        for key in keys:
            partition = cache.get(key)
            if partition is None:
                partition = cache[key] = key_partition(key, n)
            chosen.append(partition)
        return chosen
