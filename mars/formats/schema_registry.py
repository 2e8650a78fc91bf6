"""The Schema Registry client of the mappers (writer schemas by id) and of `mars gen`
(registering a subject's schema), over the Confluent REST API with plain HTTP.

Schemas are immutable per id, so a fetched one is cached for the life of the client. A schema
may reference other registered schemas (Confluent's schema references: a .proto `import`
names a subject version); they are fetched recursively (`GET /subjects/{subject}/versions/
{version}`, each cached for good too) and the schema carries their texts by import name.

An id the registry does not know (404), or whose references cannot be resolved (one missing,
a cycle, two different schemas under one import name), is a record error (dead-lettered) and
is remembered for `UNKNOWN_ID_TTL_S`, so a topic full of such records costs one request per id
and minute, not one per batch. A registry that cannot be reached, or answers 5xx, raises
`SchemaRegistryUnavailable`: the mapper retries the batch (docs/semantics.md, "Input
formats"), it never dead-letters good records for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote

import httpx

from mars.formats.errors import SchemaProblem

UNKNOWN_ID_TTL_S = 60.0
_TIMEOUT_S = 10.0
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class SchemaRegistryUnavailable(Exception):
    """The registry could not be reached or failed (5xx): the batch is retried, not
    dead-lettered."""


class UnknownSchemaId(LookupError):
    """The registry has no schema of this id, or of a schema it references (404): the record
    is dead-lettered."""


@dataclass(frozen=True, slots=True)
class SchemaReference:
    """A schema's reference to another registered schema: `name` is how the schema imports
    it (a .proto `import` path), `subject` and `version` where the registry keeps it."""

    name: str
    subject: str
    version: int


# (import name, schema text) of every schema a schema references, directly or through
# another reference, sorted by name: hashable, so compiled schemas can be cached by it.
Imports = tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """A writer schema: `schema_type` AVRO or PROTOBUF, `text` the Avro JSON or .proto source,
    `imports` the texts of the schemas it references (empty without references)."""

    schema_type: str
    text: str
    imports: Imports = ()


class SchemaSource(Protocol):
    def schema_by_id(self, schema_id: int) -> RegisteredSchema: ...


class _SubjectVersion(NamedTuple):
    text: str
    references: tuple[SchemaReference, ...]


class SchemaRegistryClient:
    """A cached client of one registry (`url`: the base of its Confluent-compatible API)."""

    def __init__(self, url: str, *, client: httpx.Client | None = None) -> None:
        self.url = url.rstrip("/")
        self._http = client or httpx.Client(timeout=_TIMEOUT_S)
        self._schemas: dict[int, RegisteredSchema] = {}
        self._versions: dict[tuple[str, int], _SubjectVersion] = {}
        # schema id -> (until when, the record error it gave: UnknownSchemaId or SchemaProblem)
        self._failed: dict[int, tuple[float, Exception]] = {}
        self._lock = threading.Lock()

    def schema_by_id(self, schema_id: int) -> RegisteredSchema:
        """The schema of `schema_id` with its references' texts; `UnknownSchemaId` on a 404
        for it or a reference, `SchemaProblem` for references that do not resolve,
        `SchemaRegistryUnavailable` when the registry cannot answer."""
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        failed = self._failed.get(schema_id)
        if failed is not None and failed[0] > time.monotonic():
            raise type(failed[1])(str(failed[1]))  # a new one: no traceback piles up
        try:
            schema = self._fetch(schema_id)
        except (UnknownSchemaId, SchemaProblem) as error:
            with self._lock:
                self._failed[schema_id] = (time.monotonic() + UNKNOWN_ID_TTL_S, error)
            raise
        with self._lock:
            self._schemas[schema_id] = schema
        return schema

    def register(
        self,
        subject: str,
        text: str,
        schema_type: str,
        references: Sequence[SchemaReference] = (),
    ) -> int:
        """Register `text` under `subject` (TopicNameStrategy: `<topic>-value`), importing
        `references`; its id."""
        payload: dict[str, Any] = {"schema": text}
        if schema_type.upper() != "AVRO":
            payload["schemaType"] = schema_type.upper()
        if references:
            payload["references"] = [
                {"name": r.name, "subject": r.subject, "version": r.version} for r in references
            ]
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

    def _fetch(self, schema_id: int) -> RegisteredSchema:
        body = self._get(f"/schemas/ids/{schema_id}")
        if body is None:
            raise UnknownSchemaId(f"unknown schema id {schema_id} (the registry says 404)")
        texts: dict[str, str] = {}
        try:
            self._resolve(_references_in(body), texts, chain=(), expanded=set())
        except (UnknownSchemaId, SchemaProblem) as error:
            raise type(error)(f"schema id {schema_id}: {error}") from None
        return RegisteredSchema(
            schema_type=str(body.get("schemaType") or "AVRO").upper(),
            text=str(body["schema"]),
            imports=tuple(sorted(texts.items())),
        )

    def _resolve(
        self,
        references: tuple[SchemaReference, ...],
        texts: dict[str, str],
        *,
        chain: tuple[str, ...],
        expanded: set[tuple[str, int]],
    ) -> None:
        """Adds the texts of `references` and of theirs, depth first, to `texts`; `chain`
        names the references being resolved above these (a cycle repeats one of them)."""
        for reference in references:
            here = f"{reference.subject} version {reference.version}"
            if here in chain:
                raise SchemaProblem(
                    f"schema references form a cycle: {' -> '.join(chain)} -> {here}"
                )
            version = self._subject_version(reference)
            if texts.setdefault(reference.name, version.text) != version.text:
                raise SchemaProblem(
                    f"two different schemas are referenced as {reference.name!r} (one is {here})"
                )
            key = (reference.subject, reference.version)
            if key not in expanded:  # a schema referenced twice (a diamond) is walked once
                expanded.add(key)
                self._resolve(version.references, texts, chain=(*chain, here), expanded=expanded)

    def _subject_version(self, reference: SchemaReference) -> _SubjectVersion:
        key = (reference.subject, reference.version)
        cached = self._versions.get(key)
        if cached is not None:
            return cached
        body = self._get(
            f"/subjects/{quote(reference.subject, safe='')}/versions/{reference.version}"
        )
        if body is None:
            raise UnknownSchemaId(
                f"its reference {reference.name!r} ({reference.subject} version "
                f"{reference.version}) is not in the registry (404)"
            )
        version = _SubjectVersion(str(body["schema"]), _references_in(body))
        with self._lock:
            self._versions[key] = version
        return version

    def _get(self, path: str) -> dict[str, Any] | None:
        """The JSON body at `path`, None on 404; `SchemaRegistryUnavailable` otherwise."""
        try:
            response = self._http.get(f"{self.url}{path}", headers={"Accept": _CONTENT_TYPE})
        except httpx.HTTPError as error:
            raise SchemaRegistryUnavailable(f"schema registry {self.url}: {error}") from error
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise SchemaRegistryUnavailable(
                f"schema registry {self.url} answered {response.status_code} for {path}"
            )
        body = response.json()
        if not isinstance(body, dict) or "schema" not in body:
            raise SchemaRegistryUnavailable(f"schema registry {self.url}: no schema in {path}")
        return body


def _references_in(body: dict[str, Any]) -> tuple[SchemaReference, ...]:
    """The `references` of a schema's JSON (absent or null: none)."""
    try:
        return tuple(
            SchemaReference(str(r["name"]), str(r["subject"]), int(r["version"]))
            for r in body.get("references") or ()
        )
    except (KeyError, TypeError, ValueError) as error:
        raise SchemaProblem(f"a malformed schema reference: {error!r}") from None
