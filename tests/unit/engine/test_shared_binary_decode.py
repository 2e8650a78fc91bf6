"""Avro and Protobuf batches decoded once for several tasks over a topic: each task gets exactly
what its own decoder gives (frame, types, bad records and reasons) on random records, some
corrupt, random field subsets per task (some the native decoders do not take, some SUM/AVG
fields holding strings), bare payloads of a schema file and Confluent-framed records of two
writer schemas from a registry; and the union's native decode runs once per plain batch."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from unittest.mock import patch

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mars.engine.decode import ROW, FieldPlan, RecordDecoder
from mars.engine.native_json import NativeColumns
from mars.engine.shared_decode import TopicDecoders
from mars.formats import decoders as format_decoders
from mars.formats.binary_decoder import BinaryRecordDecoder
from mars.formats.decoders import binary_decoder_for
from mars.formats.protobuf_schema import (
    compile_proto,
    compile_proto_file,
    message_at,
    message_class,
)
from mars.formats.wire import frame
from mars.tasks.spec import InputFormat, TaskOptions
from tests.unit.engine.test_shared_decode import assert_shared_equals_own
from tests.unit.formats.format_helpers import (
    FakeRegistry,
    avro_schema,
    corrupt_some,
    proto_schema,
)

_INNER = {
    "type": "record",
    "name": "Inner",
    "fields": [{"name": "id", "type": "int"}, {"name": "name", "type": ["null", "string"]}],
}
AVRO_V1: dict[str, Any] = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "k", "type": "string"},
        {"name": "n", "type": ["null", "long"]},
        {"name": "mix", "type": ["null", "long", "string"]},
        {"name": "d", "type": "double"},
        {"name": "b", "type": "boolean"},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["x", "y"]}},
        {"name": "raw", "type": "bytes"},
        {"name": "m", "type": ["null", _INNER]},
        {"name": "arr", "type": {"type": "array", "items": "long"}},
    ],
}
# A newer writer: `app` added, `d` removed.
AVRO_V2 = {
    **AVRO_V1,
    "fields": [f for f in AVRO_V1["fields"] if f["name"] != "d"]
    + [{"name": "app", "type": "string"}],
}
PROTO_V1 = """syntax = "proto3";
package shared.test;
message Row {
  enum Color { RED = 0; GREEN = 1; }
  message Inner { int64 id = 1; optional string name = 2; }
  int64 ts = 1; string k = 2; optional int64 n = 3; double d = 4; bool b = 5; Color e = 6;
  bytes raw = 7; Inner m = 8; repeated int64 arr = 9;
  oneof choice { int64 ci = 10; string cs = 11; }
}
"""
PROTO_V2 = PROTO_V1.replace("double d = 4;", "reserved 4; string app = 12;")

_TEXT = st.text(max_size=5)
_COMMON = {
    "ts": st.integers(-(2**40), 2**40),
    "k": _TEXT,
    "n": st.none() | st.integers(-9, 9),
    "b": st.booleans(),
    "raw": st.binary(max_size=4),
    "arr": st.lists(st.integers(-9, 9), max_size=3),
}
AVRO_RECORDS = {
    1: st.fixed_dictionaries(
        {
            **_COMMON,
            "mix": st.none() | st.integers(0, 3) | st.sampled_from(["a", "b"]),
            "d": st.floats(allow_nan=False),
            "e": st.sampled_from("xy"),
            "m": st.none()
            | st.fixed_dictionaries({"id": st.integers(-9, 9), "name": st.none() | _TEXT}),
        }
    ),
    2: st.fixed_dictionaries(
        {
            **_COMMON,
            "mix": st.none() | st.integers(0, 3),
            "e": st.sampled_from("xy"),
            "m": st.none(),
            "app": _TEXT,
        }
    ),
}
_PROTO_COMMON = {
    **_COMMON,
    "n": st.integers(-9, 9),
    "e": st.integers(0, 1),
    "m": st.fixed_dictionaries({}, optional={"id": st.integers(-9, 9), "name": _TEXT}),
}
_CHOICE = st.one_of(
    st.just({}),
    st.fixed_dictionaries({"ci": st.integers(-9, 9)}),
    st.fixed_dictionaries({"cs": _TEXT}),
)
PROTO_RECORDS = {
    1: st.tuples(
        st.fixed_dictionaries({}, optional={**_PROTO_COMMON, "d": st.floats()}), _CHOICE
    ).map(lambda parts: {**parts[0], **parts[1]}),
    2: st.tuples(st.fixed_dictionaries({}, optional={**_PROTO_COMMON, "app": _TEXT}), _CHOICE).map(
        lambda parts: {**parts[0], **parts[1]}
    ),
}
_SHARED_PATHS = ["ts", "k", "n", "d", "b", "e", "$.m.id", "$.m.name", "app", "nope"]
PLAIN_PATHS = {
    InputFormat.AVRO: [*_SHARED_PATHS, "mix"],
    InputFormat.PROTOBUF: [*_SHARED_PATHS, "ci", "cs"],
}
NOT_PLAIN_PATHS = ["raw", "$.arr[0]"]  # a column on bytes, a path into an array
SCHEMA_ID = {1: 11, 2: 12}  # writer version -> registry id


def avro_payload(version: int, record: dict[str, Any]) -> bytes:
    buffer = io.BytesIO()
    schema = _avro_parsed(version)
    fastavro.schemaless_writer(buffer, schema, record)
    return buffer.getvalue()


@functools.cache
def _avro_parsed(version: int) -> Any:
    return fastavro.parse_schema(AVRO_V1 if version == 1 else AVRO_V2)


def proto_payload(version: int, record: dict[str, Any]) -> bytes:
    text = PROTO_V1 if version == 1 else PROTO_V2
    return bytes(message_class(message_at(compile_proto(text), (0,)))(**record).SerializeToString())


@st.composite
def payloads(draw: st.DrawFn, input_format: InputFormat, versions: list[int]) -> list[bytes]:
    """Records of the given writer versions, a few corrupted."""
    records = AVRO_RECORDS if input_format is InputFormat.AVRO else PROTO_RECORDS
    write = avro_payload if input_format is InputFormat.AVRO else proto_payload
    out = [write(version, draw(records[version])) for version in versions]
    corrupt_some(draw, out)
    return out


@st.composite
def plans(draw: st.DrawFn, input_format: InputFormat) -> list[FieldPlan]:
    """Two to four tasks' plans: random fields (none for some), some of them SUM/AVG; now and
    then one the native decoders do not take (so neither the union's)."""
    out = []
    for task in range(draw(st.integers(2, 4))):
        paths = st.sampled_from(PLAIN_PATHS[input_format])
        if task == 0 and draw(st.integers(0, 3)) == 0:
            paths |= st.sampled_from(NOT_PLAIN_PATHS)
        fields = draw(st.lists(paths, max_size=5, unique=True))
        numeric = draw(st.lists(st.sampled_from(fields), max_size=2)) if fields else []
        out.append(FieldPlan(fields=tuple(fields), numeric_fields=frozenset(numeric)))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[InputFormat, bool, list[bytes], list[FieldPlan]]:
    """(format, framed, values, plans): bare payloads of writer version 1 (the schema file's),
    or framed records of one version (mostly) or of both; a few with a bad frame or id."""
    input_format = draw(st.sampled_from([InputFormat.AVRO, InputFormat.PROTOBUF]))
    framed = draw(st.booleans())
    size = draw(st.integers(1, 8))
    if not framed:
        versions = [1] * size
    elif draw(st.booleans()):
        versions = [draw(st.sampled_from([1, 2]))] * size
    else:
        versions = draw(st.lists(st.sampled_from([1, 2]), min_size=size, max_size=size))
    values = draw(payloads(input_format, versions))
    if framed:
        indexes = None if input_format is InputFormat.AVRO else (0,)
        values = [
            frame(SCHEMA_ID[version], value, indexes)
            for version, value in zip(versions, values, strict=True)
        ]
        for _ in range(draw(st.sampled_from([0, 0, 0, 1]))):
            at = draw(st.integers(0, size - 1))
            values[at] = draw(st.sampled_from([b"\x01bad", frame(99, b"", indexes)]))
    return input_format, framed, values, draw(plans(input_format))


@pytest.fixture(scope="module")
def schema_files(tmp_path_factory: pytest.TempPathFactory) -> dict[InputFormat, str]:
    directory = tmp_path_factory.mktemp("schemas")
    (directory / "row.avsc").write_text(json.dumps(AVRO_V1))
    (directory / "row.proto").write_text(PROTO_V1)
    return {
        InputFormat.AVRO: str(directory / "row.avsc"),
        InputFormat.PROTOBUF: str(directory / "row.proto"),
    }


def registry(input_format: InputFormat) -> FakeRegistry:
    """Writer versions 1 and 2 of the format under their ids."""
    if input_format is InputFormat.AVRO:
        return FakeRegistry(
            {SCHEMA_ID[1]: avro_schema(AVRO_V1), SCHEMA_ID[2]: avro_schema(AVRO_V2)}
        )
    return FakeRegistry(
        {SCHEMA_ID[1]: proto_schema(PROTO_V1), SCHEMA_ID[2]: proto_schema(PROTO_V2)}
    )


def task_decoders(
    input_format: InputFormat, framed: bool, plans: list[FieldPlan], files: dict[InputFormat, str]
) -> list[BinaryRecordDecoder]:
    """Each task's own decoder, as the mapper builds it (one registry for all); a schema file
    compiled once for the whole test (protoc takes a quarter second: the last test checks
    that separate compilations share)."""
    if framed:
        options = TaskOptions(input_format=input_format)
        schemas = registry(input_format)
    else:
        options = TaskOptions(input_format=input_format, schema_file=files[input_format])
        schemas = None
    with patch.object(format_decoders, "compile_proto_file", _compiled_once):
        return [binary_decoder_for(plan=plan, options=options, schemas=schemas) for plan in plans]


@functools.cache
def _compiled_once(path: str) -> Any:
    return compile_proto_file(path)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_each_task_gets_what_its_own_decoder_gives(
    case: tuple[InputFormat, bool, list[bytes], list[FieldPlan]],
    schema_files: dict[InputFormat, str],
) -> None:
    input_format, framed, values, plans = case
    decoders = task_decoders(input_format, framed, plans, schema_files)
    shared: list[RecordDecoder] = list(decoders)
    assert len(TopicDecoders(shared)._group_of) == len(decoders)  # all in one group
    assert_shared_equals_own(shared, values)


def _flows(input_format: InputFormat, framed: bool, count: int) -> list[bytes]:
    """Plain records of writer version 1, then a corrupt one."""
    record = {"ts": 0, "k": "a", "b": True, "m": {"id": 3}}
    if input_format is InputFormat.AVRO:
        extra = {"n": None, "mix": 1, "d": 0.5, "e": "y", "raw": b"", "arr": []}
        record = {**record, **extra, "m": {"id": 3, "name": None}}
        write = avro_payload
    else:
        write = proto_payload
    values = [write(1, {**record, "ts": ts}) for ts in range(count)] + [b"\x02"]
    if not framed:
        return values
    indexes = None if input_format is InputFormat.AVRO else (0,)
    return [frame(SCHEMA_ID[1], value, indexes) for value in values]


@pytest.mark.parametrize("framed", [False, True], ids=["schema_file", "registry"])
@pytest.mark.parametrize("input_format", [InputFormat.AVRO, InputFormat.PROTOBUF])
def test_the_union_is_decoded_once_per_plain_batch(
    input_format: InputFormat, framed: bool, schema_files: dict[InputFormat, str]
) -> None:
    plans = [
        FieldPlan(fields=("ts", "k"), numeric_fields=frozenset({"ts"})),
        FieldPlan(fields=("$.m.id", "k")),
        FieldPlan(fields=()),
    ]
    decoders = task_decoders(input_format, framed, plans, schema_files)
    topic = TopicDecoders(list[RecordDecoder](decoders))
    union = ("ts", "k", "$.m.id")
    calls: list[tuple[str, ...]] = []  # the fields of each native decode
    native_columns = BinaryRecordDecoder.native_columns

    def counted(self: BinaryRecordDecoder, values: Sequence[bytes]) -> NativeColumns | None:
        calls.append(self.plan.fields)
        return native_columns(self, values)

    with patch.object(BinaryRecordDecoder, "native_columns", counted):
        for size in (3, 5):
            decoding = topic.decoding(_flows(input_format, framed, size)[:-1])
            frames = [decoding.for_decoder(decoder).frame for decoder in decoders]
            assert frames[0]["ts"].to_list() == list(range(size))
            assert frames[1]["$.m.id"].to_list() == [3] * size
            assert frames[2].columns == [ROW]
        assert calls == [union, union]  # once a batch, no task's own
        calls.clear()
        # A bad record: the union declines, and each task decodes alone (for its reasons).
        decoded = topic.decoding(_flows(input_format, framed, 2)).for_decoder(decoders[0])
        assert decoded.bad[2].startswith(f"corrupt {input_format.name.title()} record")
        assert calls == [union, plans[0].fields]


def test_tasks_share_across_separate_builds_of_one_schema_unless_it_changed(
    tmp_path: Path,
) -> None:
    """The key is what the file held when the task was built: a .proto and its import
    compiled twice share; after the import changed, the task built since decodes alone."""
    (tmp_path / "inner.proto").write_text(
        'syntax = "proto3";\npackage inner;\nmessage Inner { int64 id = 1; }\n'
    )
    (tmp_path / "row.proto").write_text(
        'syntax = "proto3";\nimport "inner.proto";\nmessage Row { inner.Inner m = 1; }\n'
    )
    options = TaskOptions(
        input_format=InputFormat.PROTOBUF, schema_file=str(tmp_path / "row.proto")
    )
    plan = FieldPlan(fields=("$.m.id",))
    first, second = (binary_decoder_for(plan=plan, options=options, schemas=None) for _ in "12")
    assert first.share_key is not None and first.share_key == second.share_key
    (tmp_path / "inner.proto").write_text(
        'syntax = "proto3";\npackage inner;\nmessage Inner { string id = 1; }\n'
    )
    changed = binary_decoder_for(plan=plan, options=options, schemas=None)
    assert changed.share_key != first.share_key
    topic = TopicDecoders([first, second, changed])
    assert id(changed) not in topic._group_of and id(first) in topic._group_of
    avro = tmp_path / "row.avsc"
    avro.write_text(json.dumps(AVRO_V1))
    avro_options = TaskOptions(input_format=InputFormat.AVRO, schema_file=str(avro))
    one = binary_decoder_for(plan=plan, options=avro_options, schemas=None)
    avro.write_text(json.dumps({**AVRO_V1, "doc": "documented, read alike"}, indent=2))
    assert binary_decoder_for(plan=plan, options=avro_options, schemas=None).share_key == (
        one.share_key
    )
