"""The schema options of Avro and Protobuf tasks, validated at registration.

`schema_file` (a path the mappers can read): the writer schema, `.avsc` JSON or `.proto`
source; records are then bare payloads. Without it, records are Confluent-framed and their
schemas come from the schema registry. `protobuf_message`: which message of a `.proto` file
(default: its first; with a registry, each record's message indexes say). The file is read and
compiled here, so a task whose schema does not parse is refused (4xx) instead of failing later
in every mapper.
"""

from __future__ import annotations

from dataclasses import dataclass

from mars.formats.errors import SchemaProblem
from mars.tasks.spec import InputFormat

BINARY_FORMATS = (InputFormat.AVRO, InputFormat.PROTOBUF)


class SchemaOptionError(ValueError):
    """A bad schema option: `key` names it, the message says what is wrong."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True, slots=True)
class SchemaOptions:
    schema_file: str | None = None
    protobuf_message: str | None = None


def read_schema_options(
    input_format: InputFormat, *, schema_file: str | None, protobuf_message: str | None
) -> SchemaOptions:
    """The validated options; `SchemaOptionError` naming the problem."""
    if input_format not in BINARY_FORMATS:
        if schema_file is not None:
            raise SchemaOptionError("schema_file", "needs format = avro or format = protobuf")
        if protobuf_message is not None:
            raise SchemaOptionError("protobuf_message", "needs format = protobuf")
        return SchemaOptions()
    if protobuf_message is not None:
        if input_format is not InputFormat.PROTOBUF:
            raise SchemaOptionError("protobuf_message", "needs format = protobuf")
        if schema_file is None:
            raise SchemaOptionError(
                "protobuf_message",
                "needs a schema_file (records from the schema registry name their message in "
                "the Confluent header)",
            )
    if schema_file is not None:
        # Imported here: the decoders build on mars.engine, which imports mars.sql.
        from mars.formats.decoders import file_reader

        try:
            file_reader(input_format, schema_file, message=protobuf_message, fields=())
        except SchemaProblem as error:
            raise SchemaOptionError("schema_file", f"{error} ({schema_file!r})") from None
    return SchemaOptions(schema_file=schema_file, protobuf_message=protobuf_message)


def missing_schema_source(
    input_format: InputFormat, schema_file: str | None, registry_url: str | None
) -> str | None:
    """Why a task cannot find its records' schemas on a cluster whose schema registry is
    `registry_url`, or None: an Avro / Protobuf task without a `schema_file` reads
    Confluent-framed records, whose schemas only a registry has. Asked at registration, so such
    a task is refused (422) instead of being skipped by every mapper."""
    if input_format not in BINARY_FORMATS or schema_file is not None or registry_url:
        return None
    return (
        f"format = '{input_format.value}' without schema_file reads Confluent-framed records "
        "whose schemas are in a schema registry, and this cluster has none: give schema_file, "
        "or set MARS_SCHEMA_REGISTRY__URL on the API and the mappers"
    )
