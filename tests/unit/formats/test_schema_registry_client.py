"""The registry client over a fake HTTP transport: caching per id, 404s, outages, schema
references."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from mars.formats.errors import SchemaProblem
from mars.formats.schema_registry import (
    SchemaReference,
    SchemaRegistryClient,
    SchemaRegistryUnavailable,
    UnknownSchemaId,
)


def client_of(handler: httpx.MockTransport) -> SchemaRegistryClient:
    return SchemaRegistryClient(
        "http://registry/apis/ccompat/v7/", client=httpx.Client(transport=handler)
    )


def test_schemas_are_fetched_once_per_id() -> None:
    paths: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        paths.append(request.url.path)
        if request.url.path.endswith("/schemas/ids/1"):
            return httpx.Response(200, json={"schema": '{"type":"record"}'})
        if request.url.path.endswith("/schemas/ids/2"):
            return httpx.Response(200, json={"schema": "syntax", "schemaType": "PROTOBUF"})
        return httpx.Response(404, json={"error_code": 40403, "message": "Schema not found"})

    client = client_of(httpx.MockTransport(answer))
    assert client.schema_by_id(1).schema_type == "AVRO"
    assert client.schema_by_id(1).text == '{"type":"record"}'
    assert client.schema_by_id(2).schema_type == "PROTOBUF"
    for _ in range(2):
        with pytest.raises(UnknownSchemaId, match="unknown schema id 3"):
            client.schema_by_id(3)
    assert paths == [
        "/apis/ccompat/v7/schemas/ids/1",
        "/apis/ccompat/v7/schemas/ids/2",
        "/apis/ccompat/v7/schemas/ids/3",  # the second 404 is the cached one
    ]


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors_are_an_outage(status: int) -> None:
    client = client_of(httpx.MockTransport(lambda _: httpx.Response(status)))
    with pytest.raises(SchemaRegistryUnavailable, match=str(status)):
        client.schema_by_id(1)


def test_an_unreachable_registry_is_an_outage() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(SchemaRegistryUnavailable, match="connection refused"):
        client_of(httpx.MockTransport(refuse)).schema_by_id(1)


def test_register_posts_the_subject_version() -> None:
    seen: list[tuple[str, bytes]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, request.content))
        return httpx.Response(200, json={"id": 12})

    client = client_of(httpx.MockTransport(answer))
    assert client.register("S-value", "syntax", "PROTOBUF") == 12
    assert seen[0][0] == "/apis/ccompat/v7/subjects/S-value/versions"
    assert b'"schemaType":"PROTOBUF"' in seen[0][1].replace(b" ", b"")
    assert "references" not in json.loads(seen[0][1])
    reference = SchemaReference("common.proto", "common-value", 3)
    assert client.register("C-value", "import", "PROTOBUF", [reference]) == 12
    assert json.loads(seen[1][1])["references"] == [
        {"name": "common.proto", "subject": "common-value", "version": 3}
    ]


def ref(name: str, subject: str, version: int = 1) -> dict[str, Any]:
    return {"name": name, "subject": subject, "version": version}


class FakeRegistryServer:
    """Answers `/schemas/ids/{id}` and `/subjects/{subject}/versions/{version}` from `bodies`
    (keyed by the path after the API's base); records every path asked."""

    def __init__(self, bodies: dict[str, dict[str, Any]]) -> None:
        self.bodies = bodies
        self.paths: list[str] = []
        self.failing: set[str] = set()  # paths that answer 503

    def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path.removeprefix("/apis/ccompat/v7")
        self.paths.append(path)
        if path in self.failing:
            return httpx.Response(503)
        if path not in self.bodies:
            return httpx.Response(404, json={"error_code": 40402, "message": "not found"})
        return httpx.Response(200, json=self.bodies[path])

    def client(self) -> SchemaRegistryClient:
        return client_of(httpx.MockTransport(self))


def proto(text: str, *references: dict[str, Any]) -> dict[str, Any]:
    return {"schema": text, "schemaType": "PROTOBUF", "references": list(references)}


def test_references_are_resolved_recursively_and_fetched_once() -> None:
    # call -> common, place; common -> place (a diamond); another id reuses common
    server = FakeRegistryServer(
        {
            "/schemas/ids/7": proto("call", ref("common.proto", "common"), ref("p.proto", "pl", 2)),
            "/schemas/ids/8": proto("other", ref("common.proto", "common")),
            "/subjects/common/versions/1": proto("common", ref("p.proto", "pl", 2)),
            "/subjects/pl/versions/2": {"schema": "place", "schemaType": "PROTOBUF"},
        }
    )
    client = server.client()
    schema = client.schema_by_id(7)
    assert (schema.text, schema.imports) == (
        "call",
        (("common.proto", "common"), ("p.proto", "place")),
    )
    assert client.schema_by_id(7) is schema
    assert client.schema_by_id(8).imports == (("common.proto", "common"), ("p.proto", "place"))
    assert server.paths == [
        "/schemas/ids/7",
        "/subjects/common/versions/1",
        "/subjects/pl/versions/2",
        "/schemas/ids/8",
    ]


def test_a_missing_reference_is_an_unknown_schema_remembered_for_a_while() -> None:
    server = FakeRegistryServer({"/schemas/ids/7": proto("call", ref("common.proto", "gone", 4))})
    client = server.client()
    for _ in range(2):
        with pytest.raises(
            UnknownSchemaId,
            match=r"schema id 7: its reference 'common.proto' \(gone version 4\) is not in the "
            r"registry \(404\)",
        ):
            client.schema_by_id(7)
    assert server.paths == ["/schemas/ids/7", "/subjects/gone/versions/4"]


def test_a_reference_cycle_is_a_schema_problem() -> None:
    server = FakeRegistryServer(
        {
            "/schemas/ids/7": proto("call", ref("a.proto", "a")),
            "/subjects/a/versions/1": proto("a", ref("b.proto", "b")),
            "/subjects/b/versions/1": proto("b", ref("a.proto", "a")),
        }
    )
    with pytest.raises(
        SchemaProblem,
        match="schema id 7: schema references form a cycle: a version 1 -> b version 1 -> a "
        "version 1",
    ):
        server.client().schema_by_id(7)


def test_two_schemas_under_one_import_name_are_a_schema_problem() -> None:
    server = FakeRegistryServer(
        {
            "/schemas/ids/7": proto("call", ref("c.proto", "c", 1), ref("d.proto", "d")),
            "/subjects/c/versions/1": proto("c1"),
            "/subjects/d/versions/1": proto("d", ref("c.proto", "c", 2)),
            "/subjects/c/versions/2": proto("c2"),
        }
    )
    with pytest.raises(SchemaProblem, match=r"two different schemas are referenced as 'c\.proto'"):
        server.client().schema_by_id(7)


def test_an_outage_while_resolving_references_is_retried_not_remembered() -> None:
    server = FakeRegistryServer(
        {
            "/schemas/ids/7": proto("call", ref("common.proto", "common")),
            "/subjects/common/versions/1": proto("common"),
        }
    )
    server.failing.add("/subjects/common/versions/1")
    client = server.client()
    with pytest.raises(SchemaRegistryUnavailable, match="503"):
        client.schema_by_id(7)
    server.failing.clear()
    assert client.schema_by_id(7).imports == (("common.proto", "common"),)
