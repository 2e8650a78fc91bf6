"""The result readers' parsing: only the fields a reader counts by are decoded, and what each
reader keeps of the rows that arrived together (`GroupRows`'s: test_bench_group_scale.py)."""

from __future__ import annotations

import msgspec

from benchmarks.result_rows import RowCollector
from benchmarks.results_reader import ResultReader, fields_decoder
from mars.config import KafkaSettings
from mars.engine.joined_values import JoinedValues

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
