"""The record loop shared by the Avro and Protobuf decoders: frame -> writer schema -> payload
-> the task's fields. A batch of one writer schema goes whole to the reader's native decoder
when it has one and that takes the batch (`mars.formats.native_avro`,
`mars.formats.native_protobuf`); otherwise record by record, typed and checked as the JSON
decoder does (`mars.engine.decode`), so a frame has the same types and the same bad-record
reasons either way.

Framed records (schemas from a registry) are split by `mars.formats.wire`; the writer schema of
each (schema id, message indexes) is resolved once per batch (the registry client caches it for
good). With a schema file the record is the bare payload of that one schema.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

import polars as pl

from mars.engine.decode import DecodedBatch, FieldPlan, _frame_from_columns, frame_from_native
from mars.engine.native_json import NativeColumns
from mars.formats.errors import CorruptRecord, SchemaProblem
from mars.formats.schema_registry import UnknownSchemaId
from mars.formats.wire import Framed, FramingError


class PayloadReader(Protocol):
    """Decodes payloads of one writer schema into the plan's column values."""

    def read(self, payload: bytes | memoryview) -> dict[str, Any]: ...

    def native_columns(self, values: Sequence[bytes], header: bytes) -> NativeColumns | None:
        """A whole batch of this schema's payloads (each after `header`) as typed columns, or
        None: not built, or declined (then `read` takes each record)."""
        ...


# (schema id, message indexes) -> the reader of that writer schema; may raise UnknownSchemaId,
# SchemaProblem, or SchemaRegistryUnavailable (which fails the whole batch: it is retried).
ReaderFor = Callable[[int, tuple[int, ...]], PayloadReader]

_RECORD_ERRORS = (FramingError, UnknownSchemaId, CorruptRecord, SchemaProblem)


class BinaryRecordDecoder:
    """Decodes framed records through `reader_for`, or bare payloads through `fixed`."""

    def __init__(
        self,
        plan: FieldPlan,
        *,
        split: Callable[[bytes], Framed] | None = None,
        reader_for: ReaderFor | None = None,
        fixed: PayloadReader | None = None,
    ) -> None:
        if fixed is None and (split is None or reader_for is None):
            raise ValueError("a decoder needs a fixed reader, or a framing and reader_for")
        self.plan = plan
        self._split = split
        self._reader_for = reader_for
        self._fixed = fixed

    def decode(self, values: Sequence[bytes]) -> DecodedBatch:
        frame = self._native_frame(values)
        if frame is not None:
            return DecodedBatch(frame=frame, bad={})
        rows: list[int] = []
        records: list[dict[str, Any]] = []
        bad: dict[int, str] = {}
        readers: dict[Hashable, PayloadReader | Exception] = {}  # this batch's writer schemas
        for row, value in enumerate(values):
            try:
                if self._fixed is not None:
                    records.append(self._fixed.read(value))
                else:
                    records.append(self._read_framed(value, readers))
            except _RECORD_ERRORS as error:
                bad[row] = str(error)
                continue
            rows.append(row)
        columns = {name: [record[name] for record in records] for name in self.plan.fields}
        return _frame_from_columns(rows, columns, self.plan, bad)

    def _native_frame(self, values: Sequence[bytes]) -> pl.DataFrame | None:
        """The batch's frame from the native decoder, when every record is a well-formed
        payload of one writer schema (the first record's) and the decoder takes them."""
        if not values:
            return None
        if self._fixed is not None:
            reader, header = self._fixed, b""
        else:
            assert self._split is not None and self._reader_for is not None
            first = values[0]
            try:
                framed = self._split(first)
                reader = self._reader_for(framed.schema_id, framed.message_indexes)
            except _RECORD_ERRORS:
                return None  # the record loop gives it its reason
            header = bytes(first[: len(first) - len(framed.payload)])
        columns = reader.native_columns(values, header)
        return None if columns is None else frame_from_native(columns, self.plan)

    def _read_framed(
        self, value: bytes, readers: dict[Hashable, PayloadReader | Exception]
    ) -> dict[str, Any]:
        assert self._split is not None and self._reader_for is not None
        framed = self._split(value)
        key = (framed.schema_id, framed.message_indexes)
        reader = readers.get(key)
        if reader is None:
            try:
                reader = self._reader_for(framed.schema_id, framed.message_indexes)
            except (UnknownSchemaId, SchemaProblem) as error:
                reader = error
            readers[key] = reader
        if isinstance(reader, Exception):
            raise reader
        return reader.read(framed.payload)
