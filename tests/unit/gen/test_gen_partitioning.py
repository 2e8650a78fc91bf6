"""Partition choice for produced records: Java-compatible keyed placement and round robin."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from devtools.gen import GeneratorConfig, generate
from devtools.gen.partitioning import PartitionChooser, PartitionStrategy, key_partition, murmur2

# Apache Kafka's own vectors (clients/.../common/utils/UtilsTest.java, testMurmur2).
KAFKA_MURMUR2_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


@pytest.mark.parametrize(("key", "expected"), KAFKA_MURMUR2_VECTORS.items())
def test_murmur2_matches_the_java_client(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_key_partition_is_the_positive_hash_modulo() -> None:
    assert key_partition(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7
    assert all(0 <= key_partition(bytes([i]), 5) < 5 for i in range(256))


def test_keyed_placement_keeps_each_sip_in_one_partition() -> None:
    batch = generate(GeneratorConfig(count=5000, seed=3, sip_cardinality=200))
    chooser = PartitionChooser(strategy=PartitionStrategy.KEY, partitions=6)
    first = chooser.choose(keys=batch.keys[:2500], start_index=0)
    rest = chooser.choose(keys=batch.keys[2500:], start_index=2500)
    placed: dict[str, set[int]] = defaultdict(set)
    for value, partition in zip(batch.values, first + rest, strict=True):
        placed[json.loads(value)["sip"]].add(partition)
    assert all(len(partitions) == 1 for partitions in placed.values())
    assert {p for ps in placed.values() for p in ps} == set(range(6))  # and spreads


def test_round_robin_continues_across_chunks() -> None:
    chooser = PartitionChooser(strategy=PartitionStrategy.ROUND_ROBIN, partitions=3)
    assert chooser.choose(keys=[b"x"] * 4, start_index=0) == [0, 1, 2, 0]
    assert chooser.choose(keys=[b"x"] * 4, start_index=4) == [1, 2, 0, 1]


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError):
        PartitionChooser(strategy=PartitionStrategy.KEY, partitions=0)
