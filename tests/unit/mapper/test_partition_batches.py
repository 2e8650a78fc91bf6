"""`group_by_partition`: runs of one partition joined in offset order, errors and tombstones."""

from __future__ import annotations

from confluent_kafka import KafkaError, Message

from mapper.partition_batches import group_by_partition


def as_dict(grouped: dict) -> dict:
    return {
        topic: {p: (batch.offsets, batch.values) for p, batch in partitions.items()}
        for topic, partitions in grouped.items()
    }


def test_runs_of_one_partition_are_cut_and_joined_in_order() -> None:
    messages = [
        Message(topic="s", partition=p, offset=o, value=f"{p}:{o}".encode())
        for p, o in [(1, 10), (1, 11), (0, 5), (1, 12), (0, 6), (0, 7)]
    ]
    assert as_dict(group_by_partition(messages)) == {
        "s": {
            1: ([10, 11, 12], [b"1:10", b"1:11", b"1:12"]),
            0: ([5, 6, 7], [b"0:5", b"0:6", b"0:7"]),
        }
    }
    assert group_by_partition([]) == {}


def test_errors_are_skipped_and_tombstones_read_as_empty() -> None:
    messages = [
        Message(topic="s", partition=0, offset=1, value=None),
        Message(topic="s", partition=0, error=KafkaError(KafkaError._PARTITION_EOF)),
        Message(topic="t", partition=0, offset=2, value=b"x"),
    ]
    assert as_dict(group_by_partition(messages)) == {
        "s": {0: ([1], [b""])},
        "t": {0: ([2], [b"x"])},
    }
