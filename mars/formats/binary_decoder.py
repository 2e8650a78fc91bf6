"""The record loop shared by the Avro and Protobuf decoders: frame -> writer schema -> payload
-> the task's fields, record by record; the typing and checks are the JSON decoder's
(`mars.engine.decode`), so a frame has the same types and the same bad-record reasons.

Framed records (schemas from a registry) are split by `mars.formats.wire`; the writer schema of
each (schema id, message indexes) is resolved once per batch (the registry client caches it for
good). With a schema file the record is the bare payload of that one schema.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

from mars.engine.decode import DecodedBatch, FieldPlan, _frame_from_columns
from mars.formats.errors import CorruptRecord, SchemaProblem
from mars.formats.schema_registry import UnknownSchemaId
from mars.formats.wire import Framed, FramingError


class PayloadReader(Protocol):
    """Decodes payloads of one writer schema into the plan's column values."""

    def read(self, payload: bytes | memoryview) -> dict[str, Any]: ...


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
