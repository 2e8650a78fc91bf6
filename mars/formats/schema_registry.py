"""The Schema Registry client of the mappers (writer schemas by id) and of `mars gen`
(registering a subject's schema), over the Confluent REST API with plain HTTP.

Schemas are immutable per id, so a fetched one is cached for the life of the client. An id the
registry does not know (404) is cached as unknown for `UNKNOWN_ID_TTL_S`, so a topic full of
such records costs one request per id and minute, not one per batch. A registry that cannot be
reached, or answers 5xx, raises `SchemaRegistryUnavailable`: the mapper retries the batch
(docs/semantics.md, "Input formats"), it never dead-letters good records for it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

UNKNOWN_ID_TTL_S = 60.0
_TIMEOUT_S = 10.0
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryUnavailable(Exception):
    """The registry could not be reached or failed (5xx): the batch is retried, not
    dead-lettered."""


class UnknownSchemaId(LookupError):
    """The registry has no schema of this id (404): the record is dead-lettered."""


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A writer schema: `schema_type` AVRO or PROTOBUF, `text` the Avro JSON or .proto source."""

    schema_type: str
    text: str


class SchemaSource(Protocol):
    def schema_by_id(self, schema_id: int) -> RegisteredSchema: ...


class SchemaRegistryClient:
    """A cached client of one registry (`url`: the base of its Confluent-compatible API)."""

    def __init__(self, url: str, *, client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = client or httpx.Client(timeout=_TIMEOUT_S)
        self._schemas: dict[int, RegisteredSchema] = {}
        self._unknown_until: dict[int, float] = {}
        self._lock = threading.Lock()

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema of `schema_id`; `UnknownSchemaId` on 404, `SchemaRegistryUnavailable`
        when the registry cannot answer."""
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        if self._unknown_until.get(schema_id, 0.0) > time.monotonic():
            raise UnknownSchemaId(f"unknown schema id {schema_id} (the registry says 404)")
        body = self._get(f"/schemas/ids/{schema_id}", schema_id=schema_id)
        schema = RegisteredSchema(
            schema_type=str(body.get("schemaType") or "AVRO").upper(), text=str(body["schema"])
        )
        with self._lock:
            self._schemas[schema_id] = schema
        return schema

    def register(self, subject: str, text: str, schema_type: str) -> int:
        """Register `text` under `subject` (TopicNameStrategy: `<topic>-value`); its id."""
        payload: dict[str, Any] = {"schema": text}
        if schema_type.upper() != "AVRO":
            payload["schemaType"] = schema_type.upper()
        try:
            response = self._http.post(
                f"{self.url}/subjects/{subject}/versions",
                json=payload,
                headers={"Content-Type": _CONTENT_TYPE},
            )
        except httpx.HTTPError as error:
            raise SchemaRegistryUnavailable(f"schema registry {self.url}: {error}") from error
        if response.status_code >= 300:
            raise SchemaRegistryUnavailable(
                f"schema registry {self.url} refused subject {subject}: "
                f"{response.status_code} {response.text[:200]}"
            )
        return int(response.json()["id"])

    def close(self) -> None:
        self._http.close()

    def _get(self, path: str, *, schema_id: int) -> dict[str, Any]:
        try:
            response = self._http.get(f"{self.url}{path}", headers={"Accept": _CONTENT_TYPE})
        except httpx.HTTPError as error:
            raise SchemaRegistryUnavailable(f"schema registry {self.url}: {error}") from error
        if response.status_code == 404:
            with self._lock:
                self._unknown_until[schema_id] = time.monotonic() + UNKNOWN_ID_TTL_S
            raise UnknownSchemaId(f"unknown schema id {schema_id} (the registry says 404)")
        if response.status_code != 200:
            raise SchemaRegistryUnavailable(
                f"schema registry {self.url} answered {response.status_code} for {path}"
            )
        body = response.json()
        if not isinstance(body, dict) or "schema" not in body:
            raise SchemaRegistryUnavailable(f"schema registry {self.url}: no schema in {path}")
        return body
