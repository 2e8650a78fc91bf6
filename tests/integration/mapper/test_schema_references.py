"""A mapper's decoder reads Protobuf records whose writer schema imports other registered
schemas (schema references) from the live schema registry (Apicurio Registry, through its
Confluent-compatible API): `binary_decoder_for` with a `SchemaRegistryClient`, as the mapper
builds it. A schema that imports a file it has no reference for dead-letters its records with
protoc's reason (Apicurio itself refuses a reference to a subject version it does not have)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from mars.engine.decode import ROW, FieldPlan
from mars.formats.decoders import binary_decoder_for
from mars.formats.schema_registry import SchemaReference, SchemaRegistryClient
from mars.formats.wire import frame
from mars.tasks.spec import InputFormat, TaskOptions
from tests.unit.formats.format_helpers import (
    CALL,
    CALL_PLAN_FIELDS,
    CALL_ROW,
    PROTO_CALL,
    PROTO_CALL_IMPORTS,
    PROTO_COMMON,
    proto_payload,
)

pytestmark = pytest.mark.integration

# A second level: an envelope imports the call schema, which imports the common one.
PROTO_ENVELOPE = """syntax = "proto3";
package envelopes;
import "calls/call.proto";
message Envelope { calls.Call call = 1; int64 seq = 2; }
"""
ENVELOPE_IMPORTS = (("calls/call.proto", PROTO_CALL), *PROTO_CALL_IMPORTS)


@pytest.fixture
def client(schema_registry_url: str) -> Iterator[SchemaRegistryClient]:
    client = SchemaRegistryClient(schema_registry_url)
    yield client
    client.close()


def test_records_of_a_schema_with_references_decode_and_an_unresolved_import_is_bad(
    client: SchemaRegistryClient, unique_name: str
) -> None:
    common = f"{unique_name}-common"
    client.register(common, PROTO_COMMON, "PROTOBUF")
    call_id = client.register(
        f"{unique_name}-call",
        PROTO_CALL,
        "PROTOBUF",
        [SchemaReference("geo/common.proto", common, 1)],
    )
    envelope_id = client.register(
        f"{unique_name}-value",
        PROTO_ENVELOPE,
        "PROTOBUF",
        [SchemaReference("calls/call.proto", f"{unique_name}-call", 1)],
    )
    # Apicurio takes an import without its reference: the record's schema cannot compile
    unresolved_id = client.register(f"{unique_name}-noref-value", PROTO_CALL, "PROTOBUF")

    fetched = client.schema_by_id(envelope_id)
    assert (fetched.text, fetched.imports) == (PROTO_ENVELOPE, tuple(sorted(ENVELOPE_IMPORTS)))

    plan = FieldPlan(fields=(*CALL_PLAN_FIELDS, "$.call.place.city", "$.call.kind", "seq"))
    decoder = binary_decoder_for(
        plan=plan, options=TaskOptions(input_format=InputFormat.PROTOBUF), schemas=client
    )
    call = proto_payload(PROTO_CALL, CALL, imports=PROTO_CALL_IMPORTS)
    envelope = proto_payload(
        PROTO_ENVELOPE, {"call": CALL, "seq": 3}, imports=tuple(sorted(ENVELOPE_IMPORTS))
    )
    decoded = decoder.decode(
        [
            frame(call_id, call, (0,)),
            frame(unresolved_id, call, (0,)),
            frame(envelope_id, envelope, (0,)),
        ]
    )

    assert decoded.frame.drop(ROW).to_dicts() == [
        {**CALL_ROW, "$.call.place.city": None, "$.call.kind": None, "seq": None},
        {
            **dict.fromkeys(CALL_ROW),
            "$.call.place.city": "Xian",
            "$.call.kind": "VIDEO",
            "seq": 3,
        },
    ]
    assert list(decoded.bad) == [1]
    assert decoded.bad[1].startswith(
        f"schema id {unresolved_id}: the .proto schema does not compile"
    )
    assert 'Import "geo/common.proto" was not found' in decoded.bad[1]
