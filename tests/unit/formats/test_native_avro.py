"""The native Avro decoder (native/src/avro_columns.rs) against fastavro, the reference: on
random writer schemas (every scalar, enums, unions with null, mixed unions, nested records,
arrays, maps, bytes and fixed to skip), random field paths and random batches, some records
corrupted, both give the same frame (names, dtypes, values) and the same bad-record reasons,
for bare payloads and for Confluent-framed records."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from mars.engine.decode import DecodedBatch, FieldPlan
from mars.formats.avro_decoder import AvroPayloadReader, parse_avro_schema
from mars.formats.binary_decoder import BinaryRecordDecoder
from mars.formats.native_avro import NativeAvroReader
from mars.formats.wire import frame, split_avro
from mars.native import native_available
from tests.unit.formats.format_helpers import corrupt_some

SCHEMA_ID = 7
_INNER = {
    "type": "record",
    "name": "Inner",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": ["null", "string"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
    ],
}
# (field name, Avro type, values a record may hold)
FIELDS: list[tuple[str, Any, Any]] = [
    ("l", "long", st.integers(-(2**63), 2**63 - 1)),
    ("i", "int", st.integers(-(2**31), 2**31 - 1)),
    ("d", "double", st.floats(allow_nan=False)),
    ("f", "float", st.floats(width=32, allow_nan=False)),
    ("s", "string", st.text(max_size=8)),
    ("b", "boolean", st.booleans()),
    ("e", {"type": "enum", "name": "E", "symbols": ["x", "y", "z"]}, st.sampled_from("xyz")),
    ("nl", ["null", "long"], st.none() | st.integers(-5, 5)),
    ("ns", ["null", "string"], st.none() | st.text(max_size=4)),
    ("mix", ["null", "long", "string"], st.none() | st.integers(0, 3) | st.sampled_from("ab")),
    ("num", ["long", "double"], st.integers(-3, 3) | st.floats(-2, 2)),
    ("raw", "bytes", st.binary(max_size=6)),
    ("fx", {"type": "fixed", "name": "F", "size": 3}, st.binary(min_size=3, max_size=3)),
    ("arr", {"type": "array", "items": "long"}, st.lists(st.integers(-9, 9), max_size=4)),
    ("map", {"type": "map", "values": "string"}, st.dictionaries(st.text(max_size=3), st.text())),
    (
        "m",
        ["null", _INNER],
        st.none()
        | st.fixed_dictionaries(
            {
                "id": st.integers(-100, 100),
                "name": st.none() | st.text(max_size=4),
                "tags": st.lists(st.text(max_size=2), max_size=3),
            }
        ),
    ),
]
# Paths a task may read: top-level fields, paths into the nested record, a field no schema
# has, and paths the native decoder does not take (into an array, into a scalar, a record).
PATHS = [name for name, _, _ in FIELDS] + ["$.m.id", "$.m.name", "nope", "$.arr[0]", "$.l.x"]


def test_the_native_extension_is_built() -> None:
    """`make setup` builds it: a missing extension is a broken set-up, not a reason to skip."""
    assert native_available(), "mars_native is not built: run `make setup`"


@st.composite
def cases(draw: st.DrawFn) -> tuple[Any, list[bytes], FieldPlan]:
    chosen = draw(st.lists(st.sampled_from(range(len(FIELDS))), min_size=1, unique=True))
    schema = parse_avro_schema(
        json.dumps(
            {
                "type": "record",
                "name": "Row",
                "fields": [{"name": FIELDS[i][0], "type": FIELDS[i][1]} for i in chosen],
            }
        )
    )
    records = draw(
        st.lists(
            st.fixed_dictionaries({FIELDS[i][0]: FIELDS[i][2] for i in chosen}),
            min_size=1,
            max_size=12,
        )
    )
    payloads = []
    for record in records:
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, schema, record)
        payloads.append(buffer.getvalue())
    corrupt_some(draw, payloads)
    fields = tuple(draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=6, unique=True)))
    numeric = frozenset(draw(st.lists(st.sampled_from(fields), max_size=2)))
    return schema, payloads, FieldPlan(fields=fields, numeric_fields=numeric)


def _same(native: DecodedBatch, reference: DecodedBatch) -> None:
    assert native.bad == reference.bad
    assert_frame_equal(native.frame, reference.frame)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_native_and_fastavro_give_the_same_frame_and_reasons(
    case: tuple[Any, list[bytes], FieldPlan],
) -> None:
    schema, payloads, plan = case
    native = AvroPayloadReader(schema, plan.fields)
    reference = AvroPayloadReader(schema, plan.fields, native=False)
    _same(
        BinaryRecordDecoder(plan, fixed=native).decode(payloads),
        BinaryRecordDecoder(plan, fixed=reference).decode(payloads),
    )
    framed = [frame(SCHEMA_ID, p) for p in payloads]
    _same(
        BinaryRecordDecoder(plan, split=split_avro, reader_for=lambda *_: native).decode(framed),
        BinaryRecordDecoder(plan, split=split_avro, reader_for=lambda *_: reference).decode(framed),
    )


def test_the_plain_case_is_decoded_natively() -> None:
    """The test above would pass with a decoder that declines everything: here it must take
    a batch of the reference tuples, and decline one with a record of another schema id."""
    schema = parse_avro_schema(
        json.dumps(
            {
                "type": "record",
                "name": "Flow",
                "fields": [
                    {"name": "ts", "type": "long"},
                    {"name": "sip", "type": "string"},
                    {"name": "m", "type": ["null", _INNER]},
                ],
            }
        )
    )
    reader = NativeAvroReader.for_schema(schema, ("ts", "sip", "$.m.id"))
    assert reader is not None
    payloads = []
    for i in range(5):
        buffer = io.BytesIO()
        inner = None if i % 2 else {"id": i, "name": None, "tags": ["a"]}
        fastavro.schemaless_writer(buffer, schema, {"ts": i, "sip": f"s{i}", "m": inner})
        payloads.append(buffer.getvalue())
    columns = reader.columns([frame(SCHEMA_ID, p) for p in payloads], frame(SCHEMA_ID, b""))
    assert columns is not None
    assert columns.series["$.m.id"].to_list() == [0, None, 2, None, 4]
    other = [frame(SCHEMA_ID, p) for p in payloads[:-1]] + [frame(SCHEMA_ID + 1, payloads[-1])]
    assert reader.columns(other, frame(SCHEMA_ID, b"")) is None
    assert NativeAvroReader.for_schema(schema, ("$.m.tags[0]",)) is None  # into an array
