"""The record loop shared by the Avro and Protobuf decoders: frame -> writer schema -> payload
-> the task's fields. A batch of one writer schema goes whole to the reader's native decoder
when it has one and that takes the batch (`mars.formats.native_avro`,
`mars.formats.native_protobuf`); otherwise record by record, typed and checked as the JSON
decoder does (`mars.engine.decode`), so a frame has the same types and the same bad-record
reasons either way.

Framed records (schemas from a registry) are split by `mars.formats.wire`; the writer schema of
each (schema id, message indexes) is resolved once per batch (the registry client caches it for
good). With a schema file the record is the bare payload of that one schema.

A decoder built with a `Sharing` lets the tasks over one topic share one native decode of
each batch (`mars.engine.shared_decode`): decoders of equal `Sharing.key` read the same bytes
alike whatever their fields, and `Sharing.decoder_for` builds the one of the union of their
fields, whose native columns each takes its own from (`native_columns`, `from_native`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import polars as pl

from mars.engine.decode import DecodedBatch, FieldPlan, _frame_from_columns, frame_from_native
from mars.engine.native_json import NativeColumns
from mars.formats.errors import CorruptRecord, SchemaProblem
from mars.formats.schema_registry import UnknownSchemaId
from mars.formats.wire import Framed, FramingError


class PayloadReader(Protocol):
    """Decodes payloads of one writer schema into the plan's column values."""

    @property
    def schema_key(self) -> Hashable:
        """Equal for readers that read any payload alike, field for field (the same writer
        schema, whichever object holds it)."""
        ...

    def read(self, payload: bytes | memoryview) -> dict[str, Any]: ...

    def with_fields(self, fields: tuple[str, ...]) -> PayloadReader:
        """A reader of the same writer schema reading `fields`."""
        ...

    def native_columns(self, values: Sequence[bytes], header: bytes) -> NativeColumns | None:
        """A whole batch of this schema's payloads (each after `header`) as typed columns, or
        None: not built, or declined (then `read` takes each record)."""
        ...


# (schema id, message indexes) -> the reader of that writer schema; may raise UnknownSchemaId,
# SchemaProblem, or SchemaRegistryUnavailable (which fails the whole batch: it is retried).
ReaderFor = Callable[[int, tuple[int, ...]], PayloadReader]

_RECORD_ERRORS = (FramingError, UnknownSchemaId, CorruptRecord, SchemaProblem)


@dataclass(frozen=True, slots=True, eq=False)
class Sharing:
    """What lets decoders of other fields share a decoder's native decodes: decoders of equal
    `key` read every record alike, field for field (the same format and writer schemas);
    `decoder_for(plan)` is such a decoder of `plan`'s fields."""

    key: Hashable
    decoder_for: Callable[[FieldPlan], BinaryRecordDecoder]


class BinaryRecordDecoder:
    """Decodes framed records through `reader_for`, or bare payloads through `fixed`."""

    def __init__(
        self,
        plan: FieldPlan,
        *,
        split: Callable[[bytes], Framed] | None = None,
        reader_for: ReaderFor | None = None,
        fixed: PayloadReader | None = None,
        sharing: Sharing | None = None,
    ) -> None:
        if fixed is None and (split is None or reader_for is None):
            raise ValueError("a decoder needs a fixed reader, or a framing and reader_for")
        self.plan = plan
        self._split = split
        self._reader_for = reader_for
        self._fixed = fixed
        self._sharing = sharing

    @property
    def share_key(self) -> Hashable | None:
        """Equal for decoders that can share a native decode; None: this one decodes alone."""
        return None if self._sharing is None else self._sharing.key

    def for_plan(self, plan: FieldPlan) -> BinaryRecordDecoder:
        """A decoder of `plan`'s fields reading every record as this one does (same key)."""
        if self._sharing is None:
            raise ValueError("this decoder was built without a Sharing")
        return self._sharing.decoder_for(plan)

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
        columns = self.native_columns(values)
        return None if columns is None else self.from_native(columns)

    def native_columns(self, values: Sequence[bytes]) -> NativeColumns | None:
        """Every field of the plan as a typed column, when every record is a well-formed
        payload of one writer schema (the first record's) and its native decoder takes them;
        else None (the record loop then gives each record its reason). A registry that cannot
        answer raises `SchemaRegistryUnavailable`, as the record loop would."""
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
        return reader.native_columns(values, header)

    def from_native(self, decoded: NativeColumns) -> pl.DataFrame | None:
        """This plan's frame from the native columns of a plan holding at least its fields, or
        None (`frame_from_native`: a SUM/AVG field holds strings or booleans)."""
        return frame_from_native(decoded, self.plan)

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
