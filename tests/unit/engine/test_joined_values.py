"""`JoinedValues` (the native consumer's values: one buffer joined by newlines, and each
value's end) reads exactly as the list of values it holds, values with newlines included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mars.engine.joined_values import JoinedValues, join_values
from mars.engine.records import PartitionBatch, SourceBatch, SourceRecord

value = st.one_of(st.binary(max_size=6), st.sampled_from([b"", b"\n", b"a\nb", b"\n\n"]))
values_lists = st.lists(value, max_size=8)


@settings(max_examples=300, deadline=None)
@given(values=values_lists, start=st.integers(-10, 10), stop=st.integers(-10, 10))
def test_reads_as_the_list_it_joins(values: list[bytes], start: int, stop: int) -> None:
    joined = JoinedValues.of(values)
    assert len(joined) == len(values)
    assert list(joined) == values
    assert [joined[i] for i in range(-len(values), len(values))] == values + values
    assert joined[start:stop] == values[start:stop]
    assert list(joined[start:stop]) == values[start:stop]
    assert joined[::2] == values[::2]
    assert joined.value_bytes() == sum(map(len, values))


def test_values_joined_already_are_taken_as_they_are() -> None:
    joined = JoinedValues.of([b"a", b"b\nc"])
    assert JoinedValues.of(joined) is joined


@settings(max_examples=300, deadline=None)
@given(values=values_lists, separator=st.sampled_from([b"\n", b",", b""]))
def test_joined_is_the_values_joined(values: list[bytes], separator: bytes) -> None:
    assert join_values(JoinedValues.of(values), separator) == separator.join(values)
    assert join_values(values, separator) == separator.join(values)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(values_lists, max_size=4))
def test_concat_is_the_values_one_after_the_other(parts: list[list[bytes]]) -> None:
    concatenated = JoinedValues.concat([JoinedValues.of(part) for part in parts])
    assert list(concatenated) == [v for part in parts for v in part]


def test_out_of_range_raises_as_a_list_does() -> None:
    joined = JoinedValues.of([b"a", b"b"])
    for index in (2, -3):
        try:
            joined[index]
        except IndexError:
            continue
        raise AssertionError(f"index {index} did not raise")


def test_a_batch_of_joined_partitions_stays_joined() -> None:
    batch = SourceBatch.of_partitions(
        {
            1: PartitionBatch(1, [5, 6], JoinedValues.of([b"x", b"y\n"])),
            2: PartitionBatch(2, [0], JoinedValues.of([b"z"])),
            3: PartitionBatch(3),
        }
    )
    assert isinstance(batch.values, JoinedValues)
    assert batch.values.data == b"x\ny\n\nz"
    assert list(batch.values) == [b"x", b"y\n", b"z"]
    assert list(batch.partitions) == [1, 1, 2]
    assert batch.last_offsets() == {1: 6, 2: 0}
    assert batch.rejected(1, "why").value == b"y\n"


def test_a_batch_of_mixed_partitions_is_a_list() -> None:
    batch = SourceBatch.of_partitions(
        {
            1: PartitionBatch(1, [5], JoinedValues.of([b"x"])),
            2: [SourceRecord(partition=2, offset=0, value=b"z")],
        }
    )
    assert batch.values == [b"x", b"z"]
