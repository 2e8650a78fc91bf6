"""The native Protobuf decoder (native/src/protobuf_columns.rs) against the `protobuf` runtime,
the reference: on two fixed rich schemas (every scalar type, enums, proto3 `optional`, a oneof,
nested and recursive messages, repeated, packed and map fields to skip; proto2 presence, a
closed enum with an alias), random field paths and random messages (some written twice, which
merges them, some with a stray field appended, some corrupted), both give the same frame
(names, dtypes, values) and the same bad-record reasons, for bare payloads and for
Confluent-framed records."""

from __future__ import annotations

import struct
from typing import Any
from unittest.mock import patch

import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from mars.engine.decode import DecodedBatch, FieldPlan
from mars.formats import native_protobuf
from mars.formats.binary_decoder import BinaryRecordDecoder
from mars.formats.native_protobuf import NativeProtobufReader
from mars.formats.protobuf_decoder import ProtobufPayloadReader
from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.formats.wire import frame, split_protobuf

SCHEMA_ID = 7
ROW_PROTO = """syntax = "proto3";
package test.native;
message Row {
  enum Color { RED = 0; GREEN = 1; BLUE = 2; }
  message Deep { double x = 1; optional bool flag = 2; Row back = 3; }
  message Inner { int64 id = 1; optional string name = 2; Deep deep = 3; repeated int32 tags = 4;
                  Color c = 5; }
  int32 i32 = 1; int64 i64 = 2; uint32 u32 = 3; uint64 u64 = 4; sint32 s32 = 5; sint64 s64 = 6;
  bool b = 7; fixed32 fx32 = 8; sfixed32 sfx32 = 9; fixed64 fx64 = 10; sfixed64 sfx64 = 11;
  float fl = 12; double d = 13; string s = 14; bytes raw = 15; Color color = 16;
  optional int64 oi = 17; optional string os = 18; optional Color oc = 19;
  oneof choice { int64 ci = 20; string cs = 21; Inner cm = 22; }
  Inner inner = 23;
  repeated int64 ri = 24; repeated string rs = 25; repeated Inner rm = 26;
  map<string, int64> mp = 27; Row child = 28; repeated double rd = 29; repeated fixed32 rf = 30;
  sint64 far = 536870911;
}
"""
OLD_PROTO = """syntax = "proto2";
package test.native2;
message Old {
  enum Kind { option allow_alias = true; ONE = 1; TWO = 2; DUO = 2; }
  required int64 a = 1; optional string b = 2 [default = "x"]; optional Kind k = 3;
  repeated int32 packed = 4 [packed = true]; optional Old next = 5; optional float f = 6;
  repeated sint32 unpacked = 7;
}
"""
ROW = message_class(message_at(compile_proto(ROW_PROTO), (0,)))
OLD = message_class(message_at(compile_proto(OLD_PROTO), (0,)))

_I32 = st.integers(-(2**31), 2**31 - 1)
_I64 = st.integers(-(2**63), 2**63 - 1)
_U32 = st.integers(0, 2**32 - 1)
_U64 = st.integers(0, 2**64 - 1)
_COLOR = st.integers(0, 2)
_DEEP = st.fixed_dictionaries({}, optional={"x": st.floats(), "flag": st.booleans()})
_INNER = st.fixed_dictionaries(
    {},
    optional={
        "id": _I64,
        "name": st.text(max_size=4),
        "deep": _DEEP,
        "tags": st.lists(_I32, max_size=3),
        "c": _COLOR,
    },
)
_SCALARS: dict[str, st.SearchStrategy[Any]] = {
    "i32": _I32,
    "i64": _I64,
    "u32": _U32,
    "u64": _U64,
    "s32": _I32,
    "s64": _I64,
    "b": st.booleans(),
    "fx32": _U32,
    "sfx32": _I32,
    "fx64": _U64,
    "sfx64": _I64,
    "fl": st.floats(width=32),
    "d": st.floats(),
    "s": st.text(max_size=8),
    "raw": st.binary(max_size=6),
    "color": _COLOR,
    "oi": _I64,
    "os": st.text(max_size=4),
    "oc": _COLOR,
    "far": _I64,
}
_SKIPPED = {
    "ri": st.lists(_I64, max_size=3),
    "rs": st.lists(st.text(max_size=3), max_size=3),
    "rm": st.lists(_INNER, max_size=2),
    "mp": st.dictionaries(st.text(max_size=3), _I64, max_size=2),
    "rd": st.lists(st.floats(), max_size=2),
    "rf": st.lists(_U32, max_size=2),
}
_CHILD = st.fixed_dictionaries(
    {},
    optional={"i64": _I64, "s": st.text(max_size=4), "inner": _INNER, "color": _COLOR},
)
_ROW = st.tuples(
    st.fixed_dictionaries(
        {},
        optional={
            **_SCALARS,
            **_SKIPPED,
            "inner": _INNER,
            "child": st.fixed_dictionaries({}, optional={"s": st.text(), "child": _CHILD}),
        },
    ),
    st.one_of(
        st.just({}),
        st.fixed_dictionaries({"ci": _I64}),
        st.fixed_dictionaries({"cs": st.text(max_size=4)}),
        st.fixed_dictionaries({"cm": _INNER}),
    ),
).map(lambda parts: {**parts[0], **parts[1]})
_OLD = st.fixed_dictionaries(
    {"a": _I64},
    optional={
        "b": st.text(max_size=4),
        "k": st.sampled_from([1, 2]),
        "packed": st.lists(_I32, max_size=3),
        "next": st.fixed_dictionaries({"a": _I64}, optional={"b": st.text(), "k": st.just(2)}),
        "f": st.floats(width=32),
        "unpacked": st.lists(_I32, max_size=2),
    },
)
# Paths a task may read: scalars, paths into nested (and recursive) messages and a oneof's
# message, fields no schema has, and paths the native decoder does not take (a column on
# bytes, a repeated field, a map or a message; a path into them or through a scalar).
ROW_PATHS = [
    *_SCALARS,
    "ci",
    "cs",
    "$.cm.id",
    "$.cm.deep.x",
    "$.inner.id",
    "$.inner.name",
    "$.inner.c",
    "$.inner.deep.x",
    "$.inner.deep.flag",
    "$.child.i64",
    "$.child.s",
    "$.child.child.inner.name",
    "$.inner.deep.back.s",
    "nope",
    "$.inner.nope",
    "$.nope.x",
    "ri",
    "$.ri[0]",
    "$.mp.a",
    "inner",
    "$.i64.x",
    "$.inner.tags[0]",
]
OLD_PATHS = ["a", "b", "k", "f", "$.next.a", "$.next.b", "$.next.k", "packed", "nope"]
# (message class, records, paths) of each schema
SCHEMAS = {"row": (ROW, _ROW, ROW_PATHS), "old": (OLD, _OLD, OLD_PATHS)}


def _varint(number: int) -> bytes:
    number &= 2**64 - 1  # a negative number as its 10-byte two's complement, as int32s are
    out = bytearray()
    while number > 0x7F:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    return bytes([*out, number])


@st.composite
def stray_fields(draw: st.DrawFn) -> bytes:
    """A field of any number and wire type (a known field's or not) with a random value."""
    number = draw(st.sampled_from([1, 2, 3, 4, 5, 7, 12, 14, 16, 19, 20, 22, 23, 26, 28, 99]))
    wire = draw(st.sampled_from([0, 0, 1, 2, 2, 3, 5, 6]))
    tag = _varint(number << 3 | wire)
    if wire == 0:
        return tag + _varint(draw(st.integers(-(2**63), 2**64 - 1)))
    if wire in (1, 5):
        size = 8 if wire == 1 else 4
        return tag + draw(st.binary(min_size=size, max_size=size))
    if wire == 2:
        body = draw(st.binary(max_size=6) | st.text(max_size=3).map(str.encode))
        return tag + _varint(len(body)) + body
    return tag


def _corrupt(draw: st.DrawFn, payloads: list[bytes]) -> None:
    """A few payloads cut, grown, changed, written twice, or given a stray field."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(payloads) - 1))
        payload = payloads[at]
        how = draw(st.sampled_from(["cut", "grow", "flip", "twice", "stray"]))
        if how == "cut":
            payloads[at] = payload[: draw(st.integers(0, max(len(payload) - 1, 0)))]
        elif how == "grow":
            payloads[at] = payload + draw(st.binary(min_size=1, max_size=3))
        elif how == "twice":  # the second's fields win, its messages merge into the first's
            payloads[at] = payload + draw(st.sampled_from(payloads))
        elif how == "stray":
            payloads[at] = payload + draw(stray_fields())
        elif payload:
            i = draw(st.integers(0, len(payload) - 1))
            payloads[at] = (
                payload[:i] + struct.pack("B", draw(st.integers(0, 255))) + payload[i + 1 :]
            )


@st.composite
def cases(draw: st.DrawFn) -> tuple[type[Message], list[bytes], FieldPlan]:
    message_type, records, paths = SCHEMAS[draw(st.sampled_from(sorted(SCHEMAS)))]
    drawn = draw(st.lists(records, min_size=1, max_size=10))
    payloads = [bytes(message_type(**record).SerializeToString()) for record in drawn]
    _corrupt(draw, payloads)
    fields = tuple(draw(st.lists(st.sampled_from(paths), min_size=1, max_size=6, unique=True)))
    numeric = frozenset(draw(st.lists(st.sampled_from(fields), max_size=2)))
    return message_type, payloads, FieldPlan(fields=fields, numeric_fields=numeric)


def _reference(message_type: type[Message], fields: tuple[str, ...]) -> ProtobufPayloadReader:
    """The runtime's reader alone."""
    with patch.object(native_protobuf, "mars_native", None):
        return ProtobufPayloadReader(message_type, fields)


def _same(native: DecodedBatch, reference: DecodedBatch) -> None:
    assert native.bad == reference.bad
    assert_frame_equal(native.frame, reference.frame)


def _check(message_type: type[Message], payloads: list[bytes], plan: FieldPlan) -> None:
    native = ProtobufPayloadReader(message_type, plan.fields)
    reference = _reference(message_type, plan.fields)
    _same(
        BinaryRecordDecoder(plan, fixed=native).decode(payloads),
        BinaryRecordDecoder(plan, fixed=reference).decode(payloads),
    )
    framed = [frame(SCHEMA_ID, p, (0,) if i % 3 else (0, 1)) for i, p in enumerate(payloads)]
    for batch in (framed, [frame(SCHEMA_ID, p, (1, 0)) for p in payloads]):
        _same(
            BinaryRecordDecoder(plan, split=split_protobuf, reader_for=lambda *_: native).decode(
                batch
            ),
            BinaryRecordDecoder(plan, split=split_protobuf, reader_for=lambda *_: reference).decode(
                batch
            ),
        )


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_native_and_the_runtime_give_the_same_frame_and_reasons(
    case: tuple[type[Message], list[bytes], FieldPlan],
) -> None:
    _check(*case)


# Payloads of one field each at the edges of the wire format, the runtime's reading of each
# found by trying it (tests/unit/formats/test_protobuf_decoder.py has the frames' semantics).
EDGES = [
    b"\x38\x02",  # bool 2: True
    b"\x38\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # bool in 10 bytes
    b"\x08\xff\xff\xff\xff\x0f",  # int32 -1 in 5 bytes
    b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # int32 -1 in 10 bytes
    b"\x08\x85\x80\x80\x80\x10",  # int32 beyond 32 bits: its low 32
    b"\x28\x85\x80\x80\x80\x10",  # sint32 beyond 32 bits
    b"\x18\x85\x80\x80\x80\x10",  # uint32 beyond 32 bits
    b"\x20\xff\xff\xff\xff\xff\xff\xff\xff\x7f",  # uint64 at i64::MAX
    b"\x20\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01",  # uint64 beyond i64::MAX
    b"\x51\xff\xff\xff\xff\xff\xff\xff\xff",  # fixed64 beyond i64::MAX
    b"\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f",  # a varint's 10th byte beyond 64 bits
    b"\x20\xff\xff\xff\xff\xff\xff\xff\xff\xff\x81\x01",  # a varint of 11 bytes
    b"\x72\x01\xff",  # invalid UTF-8
    b"\x72\x81\x00a",  # a length in 2 bytes
    b"\x80\x01\x07",  # an enum number its enum lacks
    b"\x80\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01",  # enum -1
    b"\xa0\x01\x05\xaa\x01\x01a",  # two members of the oneof
    b"\xb2\x01\x02\x08\x07\xa0\x01\x05\xb2\x01\x02\x08\x03",  # a member, another, the first
    b"\xba\x01\x02\x08\x07\xba\x01\x02\x12\x01a",  # a message written twice: merged
    b"\xba\x01\x02\x08\x07\xba\x01\x02\x08\x08",  # its field written twice: the last
    b"\x10\x05\x15\x01\x00\x00\x00",  # a known field in another wire type
    b"\x12\x01\x05",  # a singular field packed
    b"\xc2\x01\x02\x08\x01",  # repeated int64 packed
    b"\xc0\x01\x01\xc0\x01\x02",  # repeated int64 unpacked
    b"\xc2\x01\x02\x08\x80",  # packed, a varint cut
    b"\xf2\x01\x03\x00\x00\x00",  # packed fixed32 not a multiple of 4
    b"\xf2\x01\x04\x00\x00\x00\x00",  # packed fixed32
    b"\xda\x01\x03\x08\x01\x00",  # a map entry with field 0
    b"\xe2\x01\x05\xba\x01\x02\x1a\x00",  # child.inner.deep
    b"\x00\x05",  # field 0
    b"\xe3\x07\xe4\x07",  # an unknown group
    b"\x90\x80\x80\x80\x00\x05",  # a tag in 5 bytes
    b"\x90\x80\x80\x80\x10\x05",  # a tag beyond 32 bits
    b"\x0e\x01",  # wire type 6
    b"\xf8\xff\xff\xff\x0f\x02",  # the largest field number
    b"",
]


@pytest.mark.parametrize("payload", EDGES)
def test_wire_edges_read_as_the_runtime_reads_them(payload: bytes) -> None:
    plan = FieldPlan(
        fields=("i32", "u32", "s32", "u64", "fx64", "b", "s", "color", "ci", "cs", "$.cm.id"),
    )
    _check(ROW, [payload], plan)
    _check(ROW, [payload, b"\x10\x01"], FieldPlan(fields=("i64", "$.inner.id", "$.inner.name")))


def test_the_plain_case_is_decoded_natively() -> None:
    """The tests above would pass with a decoder that declines everything: here it must take
    a batch of rich messages, and decline one with a record of another schema id."""
    fields = ("i32", "u64", "sfx32", "fl", "d", "s", "b", "color", "oc", "cs", "$.inner.name")
    reader = NativeProtobufReader.for_message(ROW.DESCRIPTOR, fields)
    assert reader is not None
    records = [
        ROW(i32=-3, u64=2**63 - 1, sfx32=-1, fl=0.5, s="é", b=True, color=2, oc=0, cs="x"),
        ROW(inner={"id": 1}, ci=4),
        ROW(inner={"name": "n"}, rm=[{"id": 2}], mp={"k": 1}, child={"child": {"s": "c"}}),
    ]
    payloads = [bytes(r.SerializeToString()) for r in records]
    payloads[1] += payloads[2]  # the inner messages merge
    columns = reader.columns(
        [frame(SCHEMA_ID, p, (0,)) for p in payloads], frame(SCHEMA_ID, b"", (0,))
    )
    assert columns is not None
    got = {name: columns.series[name].to_list() for name in fields}
    assert got == {
        "i32": [-3, 0, 0],
        "u64": [2**63 - 1, 0, 0],
        "sfx32": [-1, 0, 0],
        "fl": [0.5, 0.0, 0.0],
        "d": [0.0, 0.0, 0.0],
        "s": ["é", "", ""],
        "b": [True, False, False],
        "color": ["BLUE", "RED", "RED"],
        "oc": ["RED", None, None],
        "cs": ["x", None, None],
        "$.inner.name": [None, "n", "n"],
    }
    other = [frame(SCHEMA_ID, p) for p in payloads[:-1]] + [frame(SCHEMA_ID + 1, payloads[-1])]
    assert reader.columns(other, frame(SCHEMA_ID, b"")) is None
    plan = FieldPlan(fields=fields)
    _check(ROW, payloads, plan)
    for path in ("ri", "$.inner.tags[0]", "$.mp.k", "raw", "inner", "$.s.x"):
        assert NativeProtobufReader.for_message(ROW.DESCRIPTOR, (path,)) is None, path
