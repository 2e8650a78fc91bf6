"""A batch decoded once for several tasks gives each exactly what its own decoder gives: the
same frame (values and types) and the same bad records with the same reasons; and so does a
batch whose values come joined (`JoinedValues`, the native consumer's form)."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from mars.engine.decode import (
    CsvRecordDecoder,
    DecodedBatch,
    FieldPlan,
    JsonRecordDecoder,
    RecordDecoder,
)
from mars.engine.joined_values import JoinedValues
from mars.engine.shared_decode import TopicDecoders
from mars.tasks.spec import CsvFormat

HEADER = CsvFormat(columns=("ts", "k", "v", "w"), delimiter=";")
# Overlapping plans: a field numeric for one task and text for another; one plan of no field.
PLANS = (
    FieldPlan(fields=("ts", "k", "v"), numeric_fields=frozenset({"v"})),
    FieldPlan(fields=("k", "v")),
    FieldPlan(fields=("w", "ts"), numeric_fields=frozenset({"w"})),
    FieldPlan(fields=()),
)

cell = st.sampled_from(["1", "a", "", "é", "-3", "2.5", "9" * 20, '"q"', "x;y"])
csv_line = st.one_of(
    st.lists(cell, min_size=4, max_size=4).map(lambda cells: ";".join(cells).encode()),
    st.lists(cell, min_size=3, max_size=5).map(lambda cells: ";".join(cells).encode()),
    st.sampled_from([b"", b"\xff;a;1;2", b"1;a;2;3\n"]),
)
json_value = st.sampled_from(["1", '"a"', "2.5", "null", "[1]", '{"n": 1}', "true", "1e400"])
json_record = st.one_of(
    st.dictionaries(st.sampled_from(["ts", "k", "v", "w", "z"]), json_value).map(
        lambda fields: ("{" + ",".join(f'"{k}": {v}' for k, v in fields.items()) + "}").encode()
    ),
    st.sampled_from([b"[1]", b"{", b"3", b'{"v": 1}', b""]),
)


def assert_shared_equals_own(decoders: list[RecordDecoder], values: list[bytes]) -> None:
    """... and the native consumer's form of the values (`JoinedValues`) decodes alike."""
    for decoder in decoders:
        own: DecodedBatch = decoder.decode(values)
        for form in (values, JoinedValues.of(values)):
            for decoded in (
                decoder.decode(form),
                TopicDecoders(decoders).decoding(form).for_decoder(decoder),
            ):
                assert decoded.bad == own.bad
                assert decoded.frame.schema == own.frame.schema
                assert decoded.frame.equals(own.frame)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(csv_line, max_size=10))
def test_csv_tasks_share_a_decode(values: list[bytes]) -> None:
    decoders: list[RecordDecoder] = [CsvRecordDecoder(plan, HEADER) for plan in PLANS]
    assert_shared_equals_own(decoders, values)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(csv_line.filter(lambda line: line.count(b";") == 3), max_size=10))
def test_csv_tasks_share_a_decode_of_plain_lines(values: list[bytes]) -> None:
    decoders: list[RecordDecoder] = [CsvRecordDecoder(plan, HEADER) for plan in PLANS]
    assert_shared_equals_own(decoders, values)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(json_record, max_size=10))
def test_json_tasks_share_a_decode(values: list[bytes]) -> None:
    decoders: list[RecordDecoder] = [JsonRecordDecoder(plan) for plan in PLANS]
    assert_shared_equals_own(decoders, values)


def test_the_union_is_decoded_once_per_batch() -> None:
    decoders = [CsvRecordDecoder(plan, HEADER) for plan in PLANS[:2]]
    decoding = TopicDecoders(decoders).decoding([b"1;a;2;3", b"4;b;5;6"])
    first = decoding.for_decoder(decoders[0])
    assert first.frame.get_column("v").dtype == pl.Int64
    staged = dict(decoding._staged)
    assert len(staged) == 1  # one group, staged by the first task that asked
    decoding.for_decoder(decoders[1])
    assert decoding._staged == staged  # the second task reused it


def test_decoders_that_cannot_share_decode_alone() -> None:
    other_header = CsvFormat(columns=("ts", "k", "v", "w"), delimiter=",")
    alone = CsvRecordDecoder(PLANS[1], other_header)
    decoders: list[RecordDecoder] = [CsvRecordDecoder(PLANS[0], HEADER), alone]
    decoding = TopicDecoders(decoders).decoding([b"1,a,2,3"])
    assert decoding.for_decoder(alone).frame.get_column("k").to_list() == ["a"]
    assert decoding._staged == {}  # no group: each decoder decoded alone
