"""Protobuf schemas that import others: a registered schema with its references' texts, a
schema file with the files beside it, and the well-known types with neither."""

from __future__ import annotations

from pathlib import Path

import pytest

from mars.engine.decode import ROW, FieldPlan
from mars.engine.errors import EngineError
from mars.formats.decoders import binary_decoder_for
from mars.formats.errors import SchemaProblem
from mars.formats.protobuf_schema import compile_proto, message_at
from mars.formats.wire import frame
from mars.sql import TaskError, parse_task
from mars.tasks.spec import InputFormat, TaskOptions
from tests.unit.formats.format_helpers import (
    CALL,
    CALL_PLAN_FIELDS,
    CALL_ROW,
    PROTO_CALL,
    PROTO_CALL_IMPORTS,
    PROTO_COMMON,
    FakeRegistry,
    proto_payload,
    proto_schema,
)

PLAN = FieldPlan(fields=CALL_PLAN_FIELDS)
PAYLOAD = proto_payload(PROTO_CALL, CALL, imports=PROTO_CALL_IMPORTS)


def test_a_registered_schema_reads_the_imported_message_and_enum() -> None:
    registry = FakeRegistry(
        {1: proto_schema(PROTO_CALL, PROTO_CALL_IMPORTS), 2: proto_schema(PROTO_CALL)}
    )
    options = TaskOptions(input_format=InputFormat.PROTOBUF)
    decoder = binary_decoder_for(plan=PLAN, options=options, schemas=registry)
    decoded = decoder.decode([frame(1, PAYLOAD, (0,)), frame(2, PAYLOAD, (0,))])
    assert decoded.frame.drop(ROW).to_dicts() == [CALL_ROW]
    # the same text without its references' texts: protoc cannot find the import
    assert decoded.bad[1].startswith("schema id 2: the .proto schema does not compile: ")
    assert 'Import "geo/common.proto" was not found' in decoded.bad[1]


def test_compiled_schemas_are_cached_by_text_and_imports() -> None:
    first = compile_proto(PROTO_CALL, PROTO_CALL_IMPORTS)
    assert compile_proto(PROTO_CALL, PROTO_CALL_IMPORTS) is first
    field = message_at(first, (0,)).fields_by_name["kind"]
    assert field.enum_type.full_name == "geo.Kind"


def test_an_import_named_like_the_main_file_does_not_replace_it() -> None:
    main = PROTO_CALL.replace('"geo/common.proto"', '"schema.proto"')
    file = compile_proto(main, (("schema.proto", PROTO_COMMON),))
    assert message_at(file, (0,)).full_name == "calls.Call"


@pytest.mark.parametrize("name", ["../common.proto", "/tmp/common.proto", ""])
def test_an_import_name_outside_the_directory_is_refused(name: str) -> None:
    with pytest.raises(SchemaProblem, match="is not a relative path"):
        compile_proto(PROTO_CALL, ((name, PROTO_COMMON),))


def write_call_files(directory: Path) -> Path:
    (directory / "geo").mkdir()
    (directory / "geo" / "common.proto").write_text(PROTO_COMMON)
    path = directory / "call.proto"
    path.write_text(PROTO_CALL)
    return path


def test_a_schema_file_imports_the_files_beside_it(tmp_path: Path) -> None:
    path = write_call_files(tmp_path)
    options = TaskOptions(input_format=InputFormat.PROTOBUF, schema_file=str(path))
    decoded = binary_decoder_for(plan=PLAN, options=options, schemas=None).decode([PAYLOAD])
    assert decoded.frame.drop(ROW).to_dicts() == [CALL_ROW]
    sql = "SELECT sip, count(*) FROM S GROUP BY sip WINDOWING 1 s WITH "
    spec = parse_task(sql + f"(format = protobuf, schema_file = '{path}')", task_id="t")
    assert spec.options.schema_file == str(path)

    # the imported file edited: the next decoder reads it again, no stale compilation
    (tmp_path / "geo" / "common.proto").write_text(PROTO_COMMON.replace("Place", "Spot"))
    with pytest.raises(EngineError, match=r'"geo\.Place" is not defined'):
        binary_decoder_for(plan=PLAN, options=options, schemas=None)
    (tmp_path / "geo" / "common.proto").unlink()
    with pytest.raises(TaskError, match=r"geo/common\.proto"):
        parse_task(sql + f"(format = protobuf, schema_file = '{path}')", task_id="t")
