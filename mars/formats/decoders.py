"""The decoder of an Avro or Protobuf task: bare payloads of its schema file, or Confluent-framed
records whose writer schemas come from the schema registry (`SchemaSource`). A .proto schema's
imports are its schema references' texts (registry) or files beside it (schema file)."""

from __future__ import annotations

import threading
from pathlib import Path

from mars.engine.decode import FieldPlan
from mars.engine.errors import EngineError
from mars.formats.avro_decoder import AvroPayloadReader, parse_avro_schema
from mars.formats.binary_decoder import BinaryRecordDecoder, PayloadReader, Sharing
from mars.formats.errors import SchemaProblem
from mars.formats.protobuf_decoder import ProtobufPayloadReader
from mars.formats.protobuf_schema import (
    compile_proto,
    compile_proto_file,
    message_at,
    message_class,
    message_named,
)
from mars.formats.schema_registry import SchemaSource
from mars.formats.wire import split_avro, split_protobuf
from mars.tasks.spec import InputFormat, TaskOptions

BINARY_FORMATS = (InputFormat.AVRO, InputFormat.PROTOBUF)
_SCHEMA_TYPES = {InputFormat.AVRO: "AVRO", InputFormat.PROTOBUF: "PROTOBUF"}


def read_schema_file(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise SchemaProblem(f"cannot read schema_file {path!r}: {error}") from None


def file_reader(
    input_format: InputFormat, path: str, *, message: str | None, fields: tuple[str, ...]
) -> PayloadReader:
    """The reader of the payloads of schema file `path` (a .proto one's imports are read from
    its directory); `SchemaProblem` when the schema is not usable."""
    text = read_schema_file(path)
    if input_format is InputFormat.AVRO:
        if message is not None:
            raise SchemaProblem("protobuf_message needs format = protobuf")
        return AvroPayloadReader(parse_avro_schema(text), fields)
    file = compile_proto_file(path)
    return ProtobufPayloadReader(message_class(message_named(file, message)), fields)


def binary_decoder_for(
    *, plan: FieldPlan, options: TaskOptions, schemas: SchemaSource | None
) -> BinaryRecordDecoder:
    """The decoder of an Avro or Protobuf task; it shares native decodes with the decoders of
    the same format and schema file contents, or of the same format and registry."""
    input_format = options.input_format
    if input_format not in BINARY_FORMATS:
        raise EngineError(f"format {input_format.value} is not Avro or Protobuf")
    if options.schema_file is not None:
        try:
            fixed = file_reader(
                input_format,
                options.schema_file,
                message=options.protobuf_message,
                fields=plan.fields,
            )
        except SchemaProblem as error:
            raise EngineError(str(error)) from None
        # Keyed by the schema read, not the path: the file may change between two tasks' builds.
        sharing = Sharing(
            key=(input_format, "schema_file", fixed.schema_key),
            decoder_for=lambda union: BinaryRecordDecoder(
                union, fixed=fixed.with_fields(union.fields)
            ),
        )
        return BinaryRecordDecoder(plan, fixed=fixed, sharing=sharing)
    if schemas is None:
        raise EngineError(
            f"format = {input_format.value} without a schema_file reads writer schemas from a "
            "schema registry: set schema_registry.url (MARS_SCHEMA_REGISTRY__URL)"
        )
    return _registry_decoder(plan, input_format, schemas)


def _registry_decoder(
    plan: FieldPlan, input_format: InputFormat, schemas: SchemaSource
) -> BinaryRecordDecoder:
    """Framed records of writer schemas from `schemas`; the registry's schema of an id never
    changes, so the decoders of one format and one registry read every record alike."""
    sharing = Sharing(
        key=(input_format, "registry", id(schemas)),  # (the decoders hold `schemas`: id stays)
        decoder_for=lambda union: _registry_decoder(union, input_format, schemas),
    )
    split = split_avro if input_format is InputFormat.AVRO else split_protobuf
    return BinaryRecordDecoder(
        plan,
        split=split,
        reader_for=RegistryReaders(schemas, input_format, plan.fields),
        sharing=sharing,
    )


class RegistryReaders:
    """(schema id, message indexes) -> the reader of that writer schema, built once: a
    registered schema never changes."""

    def __init__(
        self, schemas: SchemaSource, input_format: InputFormat, fields: tuple[str, ...]
    ) -> None:
        self._schemas = schemas
        self._format = input_format
        self._fields = fields
        self._readers: dict[tuple[int, tuple[int, ...]], PayloadReader] = {}
        self._lock = threading.Lock()

    def __call__(self, schema_id: int, message_indexes: tuple[int, ...]) -> PayloadReader:
        key = (schema_id, message_indexes)
        reader = self._readers.get(key)
        if reader is not None:
            return reader
        schema = self._schemas.schema_by_id(schema_id)
        wanted = _SCHEMA_TYPES[self._format]
        if schema.schema_type != wanted:
            raise SchemaProblem(
                f"schema id {schema_id} is a {schema.schema_type} schema; the task reads "
                f"{self._format.value}"
            )
        if self._format is InputFormat.AVRO:
            reader = AvroPayloadReader(parse_avro_schema(schema.text), self._fields)
        else:
            try:
                file = compile_proto(schema.text, schema.imports)
                descriptor = message_at(file, message_indexes)
            except SchemaProblem as error:
                raise SchemaProblem(f"schema id {schema_id}: {error}") from None
            reader = ProtobufPayloadReader(message_class(descriptor), self._fields)
        with self._lock:
            self._readers[key] = reader
        return reader
