"""The local schema registry (Apicurio Registry) answers its Confluent-compatible API the way
Avro and Protobuf producers and Mars's mappers use it: a schema registered under a subject is
read back by its id, and the default BACKWARD rule refuses a schema that could not read the
data already written. A Protobuf schema's references (imports of other subjects' versions) are
kept and returned with it; one to a version the registry lacks is refused, and a referenced
version cannot be deleted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from devtools.local import ClusterState

CONTENT_TYPE = {"Content-Type": "application/vnd.schemaregistry.v1+json"}


def _record(*fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": "Call", "namespace": "t", "fields": list(fields)})


SIP = {"name": "sip", "type": "string"}
DURATION = {"name": "duration", "type": "long"}
CARRIER_WITH_DEFAULT = {"name": "carrier", "type": "string", "default": "none"}
REGION_WITHOUT_DEFAULT = {"name": "region", "type": "string"}

PROTO = """\
syntax = "proto3";
package t;

message Call {
  string sip = 1;
  int64 duration = 2;
}
"""


@pytest.fixture
def registry(schema_registry_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=schema_registry_url, headers=CONTENT_TYPE, timeout=30) as client:
        yield client


def _register(registry: httpx.Client, subject: str, body: dict[str, Any]) -> httpx.Response:
    return registry.post(f"/subjects/{subject}/versions", json=body)


def test_the_cluster_state_and_the_fixture_agree(
    schema_registry_url: str, cluster: ClusterState
) -> None:
    assert schema_registry_url.startswith("http://127.0.0.1:")
    assert schema_registry_url.endswith("/apis/ccompat/v7")
    assert cluster.schema_registry_url == schema_registry_url
    assert cluster.env()["MARS_SCHEMA_REGISTRY__URL"] == schema_registry_url


def test_an_avro_schema_is_read_back_by_its_id(registry: httpx.Client, unique_name: str) -> None:
    subject = f"{unique_name}-value"
    schema = _record(SIP, DURATION)
    registered = _register(registry, subject, {"schema": schema})
    assert registered.status_code == 200, registered.text
    schema_id = registered.json()["id"]

    fetched = registry.get(f"/schemas/ids/{schema_id}")
    assert fetched.status_code == 200, fetched.text
    assert json.loads(fetched.json()["schema"]) == json.loads(schema)
    assert fetched.json().get("schemaType", "AVRO") == "AVRO"  # Confluent omits AVRO's type
    # the same schema again is the same id, as producers that register on every start expect
    assert _register(registry, subject, {"schema": schema}).json()["id"] == schema_id
    latest = registry.get(f"/subjects/{subject}/versions/latest").json()
    assert (latest["id"], latest["version"], latest["subject"]) == (schema_id, 1, subject)


def test_a_protobuf_schema_is_read_back_by_its_id(registry: httpx.Client, unique_name: str) -> None:
    subject = f"{unique_name}-value"
    registered = _register(registry, subject, {"schemaType": "PROTOBUF", "schema": PROTO})
    assert registered.status_code == 200, registered.text
    schema_id = registered.json()["id"]

    fetched = registry.get(f"/schemas/ids/{schema_id}").json()
    assert fetched["schemaType"] == "PROTOBUF"
    assert fetched["schema"] == PROTO
    versions = registry.get(f"/subjects/{subject}/versions").json()
    assert versions == [1]


IMPORTING = PROTO.replace("package t;\n", 'package t;\nimport "common.proto";\n').replace(
    "int64 duration = 2;", "int64 duration = 2;\n  common.Place place = 3;"
)
COMMON = 'syntax = "proto3";\npackage common;\nmessage Place { string city = 1; }\n'


def test_protobuf_references_are_kept_checked_and_protected(
    registry: httpx.Client, unique_name: str
) -> None:
    common = f"{unique_name}-common"
    first = _register(registry, common, {"schemaType": "PROTOBUF", "schema": COMMON})
    assert first.status_code == 200, first.text
    subject = f"{unique_name}-value"
    references = [{"name": "common.proto", "subject": common, "version": 1}]
    body = {"schemaType": "PROTOBUF", "schema": IMPORTING, "references": references}
    registered = _register(registry, subject, body)
    assert registered.status_code == 200, registered.text

    fetched = registry.get(f"/schemas/ids/{registered.json()['id']}").json()
    assert (fetched["schema"], fetched["references"]) == (IMPORTING, references)
    assert registry.get(f"/subjects/{subject}/versions/1").json()["references"] == references
    referenced = registry.get(f"/subjects/{common}/versions/1").json()
    assert referenced["schema"] == COMMON and "references" not in referenced

    # a reference to a version the registry does not have: refused (Confluent says 42201 too)
    missing = [{"name": "common.proto", "subject": common, "version": 9}]
    refused = _register(registry, f"{unique_name}-other", {**body, "references": missing})
    assert (refused.status_code, refused.json()["error_code"]) == (422, 42201), refused.text
    # a version a schema references cannot be deleted, softly or for good
    for params in ({}, {"permanent": "true"}):
        deleted = registry.delete(f"/subjects/{common}/versions/1", params=params)
        assert (deleted.status_code, deleted.json()["error_code"]) == (422, 42206), deleted.text
    # the import is not checked against the references: this one is taken without any
    unchecked = _register(
        registry, f"{unique_name}-noref", {"schemaType": "PROTOBUF", "schema": IMPORTING}
    )
    assert unchecked.status_code == 200, unchecked.text


def test_backward_compatibility_takes_a_field_with_a_default_and_refuses_one_without(
    registry: httpx.Client, unique_name: str
) -> None:
    assert registry.get("/config").json()["compatibilityLevel"] == "BACKWARD"
    subject = f"{unique_name}-value"
    first = _register(registry, subject, {"schema": _record(SIP, DURATION)})
    assert first.status_code == 200, first.text

    # a reader with a new field and its default still reads the records written before
    added = _record(SIP, DURATION, CARRIER_WITH_DEFAULT)
    check = registry.post(
        f"/compatibility/subjects/{subject}/versions/latest", json={"schema": added}
    )
    assert check.status_code == 200 and check.json()["is_compatible"] is True, check.text
    second = _register(registry, subject, {"schema": added})
    assert second.status_code == 200, second.text
    assert second.json()["id"] != first.json()["id"]

    # without a default, an old record has no value for it: refused, and nothing registered
    refused_schema = _record(SIP, DURATION, CARRIER_WITH_DEFAULT, REGION_WITHOUT_DEFAULT)
    check = registry.post(
        f"/compatibility/subjects/{subject}/versions/latest", json={"schema": refused_schema}
    )
    assert check.status_code == 200 and check.json()["is_compatible"] is False, check.text
    refused = _register(registry, subject, {"schema": refused_schema})
    assert refused.status_code == 409, refused.text
    assert refused.json()["error_code"] == 409
    assert registry.get(f"/subjects/{subject}/versions").json() == [1, 2]
