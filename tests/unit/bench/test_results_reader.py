"""The result readers' parsing: only the fields a reader counts by are decoded, as columns
when the native decoder takes the batch and as rows when not, to the same figures; what each
reader keeps of the rows that arrived together (`GroupRows`'s: test_bench_group_scale.py); and
when a batch counts as readable (the committed ends, polled from a real broker:
tests/integration/bench/test_committed_ends.py)."""

from __future__ import annotations

import random

import msgspec
import polars as pl
import pytest

from benchmarks.committed_ends import CommittedEnds, _EndMoves
from benchmarks.exp_group_scale import GroupRows
from benchmarks.result_rows import RowCollector
from benchmarks.results_reader import ResultReader, TopicsReader, fields_columns, fields_decoder
from mars.clients.end_offsets import PartitionKey
from mars.config import KafkaSettings
from mars.engine.joined_values import JoinedValues
from mars.engine.records import PartitionBatch

KAFKA = KafkaSettings()


def encoded(*rows: dict[str, object]) -> JoinedValues:
    return JoinedValues.of([msgspec.json.encode(row) for row in rows])


def test_fields_decoder_takes_the_named_fields_in_order() -> None:
    decode = fields_decoder(("b", "a", "missing", "b"))
    values = encoded({"a": 1, "b": [2], "c": {"d": 3}}, {"b": "x\ny"})
    assert decode(values) == [([2], 1, None, [2]), ("x\ny", None, None, "x\ny")]


def test_fields_decoder_skips_empty_values() -> None:
    decode = fields_decoder(("a",))
    values = JoinedValues.of([b'{"a": 1}', b"", b'{"a": 2}'])
    assert decode(values) == [(1,), (2,)]
    assert decode(JoinedValues.of([])) == []


def test_reader_counts_per_window_and_finds_duplicates() -> None:
    reader = ResultReader(kafka=KAFKA, topic="t", count_field="count_star")
    values = encoded(
        {"window_start": 0, "sip": "a", "type": 1, "count_star": 2, "other": "x"},
        {"window_start": 0, "sip": "b", "type": 1, "count_star": 3},
        {"window_start": 60, "sip": "a", "type": 1, "count_star": 1},
        {"window_start": 0, "sip": "a", "type": 1, "count_star": 2},  # a duplicate
        {"window_start": 0, "sip": "c", "type": 1, "count_star": None},  # not counted
        {"note": "a record of no window"},
    )
    reader.add_values(values, arrival=5.0)
    assert {start: (w.rows, w.count) for start, w in reader.snapshot().items()} == {
        0: (3, 7),
        60: (1, 1),
    }
    assert reader.total(before_ms=60) == 7
    assert reader.duplicates() == 1
    assert reader.completion_time_s(before_ms=None) == 5.0


def test_row_collector_keeps_whole_rows() -> None:
    collector = RowCollector(kafka=KAFKA, topic="t", count_field="")
    collector.add_values(encoded({"a": 1, "b": {"c": 2}}), arrival=2.0)
    assert collector.taken() == [({"a": 1, "b": {"c": 2}}, 2.0)]
    assert collector.windows == {}


def test_fields_columns_take_the_named_fields_in_order_or_decline() -> None:
    decode = fields_columns(("b", "a", "missing", "b"))
    columns = decode(encoded({"a": 1, "b": "x"}, {"b": "y\nz", "c": [1]}))
    assert columns is not None
    assert columns.rows() == [("x", 1, None, "x"), ("y\nz", None, None, "y\nz")]
    assert decode(JoinedValues.of([b'{"a": 1}', b""])) is None  # an empty value: rows
    assert decode(encoded({"a": {"nested": 1}})) is None  # not a plain value: rows
    path_named = encoded({"$.a.b": 1, "a": {"b": 2}})  # a nested key's column: a flat key
    assert fields_columns(("$.a.b",))(path_named) is None
    assert fields_decoder(("$.a.b",))(path_named) == [(1,)]


def _random_rows(rng: random.Random) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for _ in range(rng.randint(0, 40)):
        row: dict[str, object] = {
            "window_start": rng.choice([0, 60_000, 120_000, None]),
            "sip": rng.choice(["a", "b", "c"]),
            "count_star": rng.choice([1, 2, 7, None]),
            "sum_bytes": rng.choice([0, 5, 1 << 40, None]),
        }
        for name in list(row):
            if rng.random() < 0.1:
                del row[name]  # a field the record lacks
        rows.append(row)
    return rows


class _RowsOnly(GroupRows):
    """The same reader with every batch decoded as rows (the native path declined)."""

    def __post_init__(self) -> None:
        GroupRows.__post_init__(self)
        self._columns = lambda values: None


@pytest.mark.parametrize("seed", range(20))
def test_columns_and_rows_give_the_same_windows_duplicates_and_kept_rows(seed: int) -> None:
    rng = random.Random(seed)
    readers = [
        reader_type(kafka=KAFKA, topic="t", count_field="count_star")
        for reader_type in (GroupRows, _RowsOnly)
    ]
    for batch in range(rng.randint(1, 4)):
        values = encoded(*_random_rows(rng))
        for reader in readers:
            reader.add_values(values, arrival=float(batch))
    columns, rows = readers
    assert columns.frames or not any(columns.windows)  # the native path took the batches
    assert columns.snapshot() == rows.snapshot()
    assert columns.keys_seen() == rows.keys_seen()
    assert columns.duplicates() == rows.duplicates()
    assert columns.frame().sort(pl.all()).rows() == rows.frame().sort(pl.all()).rows()


def test_end_moves_say_when_an_offset_was_first_seen_committed() -> None:
    moves = _EndMoves()
    for end, at in ((5, 1.0), (5, 2.0), (9, 3.0), (7, 4.0)):  # an older answer's end is ignored
        moves.note(end, at)
    assert moves.passed(0) == 1.0
    assert moves.passed(4) == 1.0
    assert moves.passed(5) == 3.0  # the end is the next offset: 5 is readable once past it
    assert moves.passed(8) == 3.0
    assert moves.passed(9) is None


class _Seen(CommittedEnds):
    """Committed ends as if polled: (topic, partition) -> (last offset seen committed, when)."""

    def __init__(self, seen: dict[PartitionKey, tuple[int, float]]) -> None:
        super().__init__(KAFKA, list(seen))
        self.seen = seen

    def readable_at(self, partition: PartitionKey, offset: int) -> float | None:
        last, at = self.seen.get(partition, (-1, 0.0))
        return at if offset <= last else None


def batch(partition: int, *offsets: int) -> PartitionBatch:
    return PartitionBatch(partition, list(offsets), [b"{}"] * len(offsets))


def test_a_batch_is_readable_when_its_last_partition_committed_or_when_consumed() -> None:
    reader = TopicsReader(kafka=KAFKA, readers={})
    reader._committed = _Seen({("a", 0): (4, 10.0), ("a", 1): (7, 11.0), ("b", 0): (4, 13.0)})
    batches = {
        "a": {0: batch(0, 3, 4), 1: batch(1, 6, 7)},  # both seen committed: the later one
        "b": {0: batch(0, 4)},  # seen committed only after it was consumed: consumed
        "c": {0: batch(0, 0)},  # not seen committed yet: consumed
    }
    assert reader._readable(batches, consumed=12.0) == {"a": 11.0, "b": 12.0, "c": 12.0}
    batches["a"][1] = batch(1, 8)  # past what was seen committed
    assert reader._readable(batches, consumed=12.0)["a"] == 12.0


def test_a_window_keeps_its_earliest_and_latest_arrival_whatever_the_order() -> None:
    reader = ResultReader(kafka=KAFKA, topic="t", count_field="count_star")
    for arrival in (5.0, 3.0, 4.0):  # a later batch's partition may have committed first
        reader.add_values(encoded({"window_start": 0, "count_star": 1}), arrival=arrival)
    seen = reader.snapshot()[0]
    assert (seen.first_arrival_s, seen.last_arrival_s, seen.count) == (3.0, 5.0, 3)
