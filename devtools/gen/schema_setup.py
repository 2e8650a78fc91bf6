"""Where `mars gen` puts the Avro / Protobuf writer schema: registered in the schema registry
as `<topic>-value` (TopicNameStrategy) when `schema_registry.url` is set, the records then
Confluent-framed with its id; else written to a schema file for the task's `schema_file`
option, the records bare payloads."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from devtools.gen.binary_encoding import BINARY_ENCODINGS, SCHEMA_TYPES, reference_schema
from devtools.gen.config import Encoding, GeneratorConfig
from mars.config import Settings
from mars.formats.schema_registry import SchemaRegistryClient

_SUFFIXES = {Encoding.AVRO: ".avsc", Encoding.PROTOBUF: ".proto"}


def subject_of(topic: str) -> str:
    return f"{topic}-value"


def with_schema(
    config: GeneratorConfig, settings: Settings, *, topic: str, schema_file: str | None
) -> GeneratorConfig:
    """`config` with the schema id the records are framed with (None: bare records)."""
    if config.encoding not in BINARY_ENCODINGS:
        return config
    text = reference_schema(config.encoding, config.time_format)
    url = settings.schema_registry.url
    if url:
        client = SchemaRegistryClient(url)
        try:
            schema_id = client.register(subject_of(topic), text, SCHEMA_TYPES[config.encoding])
        finally:
            client.close()
        print(f"schema registered as {subject_of(topic)}, id {schema_id}", file=sys.stderr)
        return dataclasses.replace(config, schema_id=schema_id)
    path = Path(schema_file or f"{topic}{_SUFFIXES[config.encoding]}")
    path.write_text(text, encoding="utf-8")
    print(
        f"no schema registry: schema written to {path} (task option schema_file)", file=sys.stderr
    )
    return dataclasses.replace(config, schema_id=None)
