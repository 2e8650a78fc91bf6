"""The CSV decoder's whole-batch paths (Polars reader, then plain split) give exactly what the
per-record csv module path gives, with the lines' shape scanned by `mars_native` (which `make
setup` builds) and by the NumPy fallback."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mars.engine import decode
from mars.engine.decode import CsvRecordDecoder, FieldPlan, PlainLines
from mars.tasks.spec import CsvFormat

PLAN = FieldPlan(fields=("ts", "k", "v"), numeric_fields=frozenset({"v"}))
FORMAT = CsvFormat(columns=("ts", "k", "v"), delimiter=";")


class PerRecordOnly(CsvRecordDecoder):
    """The reference: never takes a whole-batch path."""

    def plain_lines(self, values: object) -> None:
        return None


class SplitOnly(CsvRecordDecoder):
    """Whole-batch split, never the Polars reader."""

    def strings(self, plain: PlainLines) -> None:
        return None


@pytest.fixture(params=["native", "numpy"])
def shape_scan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which scan gives the lines' shape: the native one must be built (no skip), or be
    switched off."""
    assert decode.mars_native is not None, "mars_native is not built: make setup"
    if request.param == "numpy":
        monkeypatch.setattr(decode, "mars_native", None)
    return str(request.param)


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


FIXTURE_IN_GIVEN = settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FIXTURE_IN_GIVEN
@given(values=st.lists(record, max_size=12))
def test_whole_batch_paths_equal_the_per_record_path(shape_scan: str, values: list[bytes]) -> None:
    assert_same(values)


@FIXTURE_IN_GIVEN
@given(values=st.lists(plain_record, max_size=12))
def test_whole_batch_paths_equal_the_per_record_path_on_plain_lines(
    shape_scan: str, values: list[bytes]
) -> None:
    assert_same(values)


@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=40), delimiter=st.sampled_from(b";,\n\x00a"))
def test_the_native_line_shape_equals_numpys(data: bytes, delimiter: int) -> None:
    native = decode.line_shape(data, delimiter)
    assert decode.mars_native is not None, "mars_native is not built: make setup"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(decode, "mars_native", None)
        assert native == decode.line_shape(data, delimiter)


def test_line_shape_counts_lines_lengths_and_fields() -> None:
    assert decode.line_shape(b"a;b\nccc;d;e", ord(";")) == decode.LineShape(2, 3, 7, 2, 3)
    assert decode.line_shape(b"", ord(";")) == decode.LineShape(1, 0, 0, 1, 1)
    assert decode.line_shape(b"a\n", ord(";")) == decode.LineShape(2, 0, 1, 1, 1)


def test_plain_batch_takes_the_polars_path(shape_scan: str) -> None:
    decoder = CsvRecordDecoder(PLAN, FORMAT)
    plain = decoder.plain_lines([b"1;a;2\n", b"2;b;3"])
    assert plain is not None
    assert plain.data == b"1;a;2\n2;b;3"
    strings = decoder.strings(plain)
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
    short = decoder.plain_lines([b"1;a;2", b"1;a"])
    assert short is not None
    assert decoder.strings(short) is None  # a short line: the split path
    not_integer_line = decoder.plain_lines([b"1;a;2.5"])
    assert not_integer_line is not None
    not_integer = decoder.strings(not_integer_line)
    assert not_integer is not None
    assert decoder.from_strings(not_integer) is None  # a non-integer SUM field: the split path
