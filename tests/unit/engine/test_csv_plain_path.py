"""The CSV decoder's whole-batch path gives exactly what the per-record csv module path gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mars.engine.decode import CsvRecordDecoder, FieldPlan
from mars.tasks.spec import CsvFormat

PLAN = FieldPlan(fields=("ts", "k", "v"), numeric_fields=frozenset({"v"}))
FORMAT = CsvFormat(columns=("ts", "k", "v"), delimiter=";")


class PerRecordOnly(CsvRecordDecoder):
    """The reference: never takes the whole-batch path."""

    def _split_plain(self, values: object) -> None:
        return None


piece = st.sampled_from(["1", "a", "", ";", '"', '"x"', "\r", "\n", "\x00", "é", "-2.5", "  "])
record = st.one_of(
    st.lists(piece, max_size=8).map(lambda parts: "".join(parts).encode()),
    st.binary(max_size=12),  # includes invalid UTF-8
    st.sampled_from([b"1;a;2", b"1;a;2\n", b"1;a;2\r\n", b"3;b;", b"4;;x"]),
)


@settings(max_examples=400, deadline=None)
@given(values=st.lists(record, max_size=12))
def test_whole_batch_path_equals_per_record_path(values: list[bytes]) -> None:
    fast = CsvRecordDecoder(PLAN, FORMAT).decode(values)
    reference = PerRecordOnly(PLAN, FORMAT).decode(values)
    assert fast.bad == reference.bad
    assert fast.frame.equals(reference.frame)
    assert fast.frame.schema == reference.frame.schema


def test_plain_batch_takes_the_whole_batch_path() -> None:
    decoder = CsvRecordDecoder(PLAN, FORMAT)
    assert decoder._split_plain([b"1;a;2\n", b"2;b;3"]) == [["1", "a", "2"], ["2", "b", "3"]]
    assert decoder._split_plain([b'1;"a";2']) is None
    assert decoder._split_plain([b"1;a;2", b""]) is None
