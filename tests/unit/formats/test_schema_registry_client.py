"""The registry client over a fake HTTP transport: caching per id, 404s, outages."""

from __future__ import annotations

import httpx
import pytest

from mars.formats.schema_registry import (
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
