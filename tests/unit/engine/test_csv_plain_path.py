"""The CSV decoder's whole-batch paths (Polars reader, then plain split) give exactly what the
per-record csv module path gives."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.engine.decode import CsvRecordDecoder, FieldPlan
from mars.tasks.spec import CsvFormat

PLAN = FieldPlan(fields=("ts", "k", "v"), numeric_fields=frozenset({"v"}))
FORMAT = CsvFormat(columns=("ts", "k", "v"), delimiter=";")


class PerRecordOnly(CsvRecordDecoder):
    """The reference: never takes a whole-batch path."""

    def plain_lines(self, values: object) -> None:
        return None


class SplitOnly(CsvRecordDecoder):
    """Whole-batch split, never the Polars reader."""

    def strings(self, joined: bytes) -> None:
        return None


piece = st.sampled_from(["1", "a", "", ";", '"', '"x"', "\r", "\n", "\x00", "é", "-2.5", "  "])
record = st.one_of(
    st.lists(piece, max_size=8).map(lambda parts: "".join(parts).encode()),
    st.binary(max_size=12),  # includes invalid UTF-8
    st.sampled_from([b"1;a;2", b"1;a;2\n", b"1;a;2\r\n", b"3;b;", b"4;;x"]),
)
# Mostly well-formed lines, so that whole batches reach the Polars reader.
cell = st.sampled_from(["1", "a", "", "é", " 7 ", "-3", "+4", "007", "2.5", "1e3", "9" * 20])
plain_record = st.one_of(
    st.lists(cell, min_size=3, max_size=3).map(lambda cells: ";".join(cells).encode()),
    st.lists(cell, min_size=2, max_size=4).map(lambda cells: ";".join(cells).encode() + b"\n"),
)


def assert_same(values: list[bytes]) -> None:
    reference = PerRecordOnly(PLAN, FORMAT).decode(values)
    for decoder in (CsvRecordDecoder(PLAN, FORMAT), SplitOnly(PLAN, FORMAT)):
        decoded = decoder.decode(values)
        assert decoded.bad == reference.bad
        assert decoded.frame.equals(reference.frame)
        assert decoded.frame.schema == reference.frame.schema


@settings(max_examples=400, deadline=None)
@given(values=st.lists(record, max_size=12))
def test_whole_batch_paths_equal_the_per_record_path(values: list[bytes]) -> None:
    assert_same(values)


@settings(max_examples=400, deadline=None)
@given(values=st.lists(plain_record, max_size=12))
def test_whole_batch_paths_equal_the_per_record_path_on_plain_lines(values: list[bytes]) -> None:
    assert_same(values)


def test_plain_batch_takes_the_polars_path() -> None:
    decoder = CsvRecordDecoder(PLAN, FORMAT)
    joined = decoder.plain_lines([b"1;a;2\n", b"2;b;3"])
    assert joined == b"1;a;2\n2;b;3"
    strings = decoder.strings(joined)
    assert strings is not None
    frame = decoder.from_strings(strings)
    assert frame is not None
    assert frame.to_dicts() == [
        {"__row": 0, "ts": "1", "k": "a", "v": 2},
        {"__row": 1, "ts": "2", "k": "b", "v": 3},
    ]
    assert frame.schema["v"] == pl.Int64
    assert decoder.plain_lines([b'1;"a";2']) is None
    assert decoder.plain_lines([b"1;a;2", b""]) is None
    assert decoder.strings(b"1;a;2\n1;a") is None  # a short line: the split path
    not_integer = decoder.strings(b"1;a;2.5")
    assert not_integer is not None
    assert decoder.from_strings(not_integer) is None  # a non-integer SUM field: the split path
