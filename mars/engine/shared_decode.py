"""One decode of a batch for every task over its topic (the usual deployment: dozens of
statistics over one stream).

Tasks over one topic read different fields. `TopicDecoders` groups their decoders by what a
decode depends on besides the fields (JSON; CSV with one header and delimiter; Avro or Protobuf
with one writer schema file, or one registry: `SharedNativeDecoder.share_key`) and builds one
decoder per group for the union of the group's fields, once per task set. Per batch,
`BatchDecoding.for_decoder` hands each task exactly what its own decoder would have given:

- JSON: the union decoder's native columns (`NativeColumns`, typed by the Rust extension);
  each task takes its own fields from them, and decodes the batch itself only when a SUM/AVG
  field of its own holds strings or booleans. When the native decoder declines the batch: the
  union's Python values (`JsonColumns`); each task types and checks its own fields from them.
  Nested paths of several tasks share their Structs (one tree of all the paths), and a path
  through a value of the wrong kind marks only its own column. A record the union cannot
  decode may still decode for a task (a number out of range in a field the task does not read
  is skipped unparsed), so when the union finds a bad record every task decodes the batch
  itself (and so when the native decoder declines the union's batch: each task's own native
  decode may take it).
- CSV: the union decoder's plain-lines check and Polars read (`CsvStrings`, text columns); each
  task casts its SUM/AVG fields. When the batch is not plain, or a task's cast fails, that task
  decodes the batch itself, which gives every bad record its exact reason.
- Avro, Protobuf: the union decoder's native columns (`SharedNativeDecoder.native_columns`:
  every record a well-formed payload of the first record's writer schema, the union's paths
  the plain case); each task takes its own fields from them (`frame_from_native`, as its own
  native decode does), and decodes the batch itself when a SUM/AVG field of its own holds
  strings or booleans. The native decoders take a batch only when the runtime (fastavro, the
  `protobuf` runtime) would read every record, and then read a path alike whatever other paths
  they read, so the union's columns are the task's. When the union's native decode declines
  (a bad record, several writer schemas, a path of some task not plain, no extension), every
  task decodes the batch itself: its own native decode may take it, else the runtime gives
  each bad record its exact reason. A group shares a writer schema file only as its tasks
  read it (the key is the schema read, not the path: the file may change between two tasks'
  builds); a registry's schema of an id never changes.

The union's work is done on the first task that asks, so a batch no task reads costs nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import polars as pl

from mars.engine.decode import (
    CsvRecordDecoder,
    CsvStrings,
    DecodedBatch,
    FieldPlan,
    JsonColumns,
    JsonRecordDecoder,
    RecordDecoder,
)
from mars.engine.native_json import NativeColumns

_NOT_YET = object()  # a group's shared stage before its first use


@runtime_checkable
class SharedNativeDecoder(RecordDecoder, Protocol):
    """A decoder that can take its frame from the native columns of a decoder of more fields
    (the Avro and Protobuf decoders, `mars.formats.binary_decoder`)."""

    plan: FieldPlan

    @property
    def share_key(self) -> Hashable | None:
        """Equal for decoders that read every record alike, field for field; None: alone."""
        ...

    def for_plan(self, plan: FieldPlan) -> SharedNativeDecoder:
        """A decoder of `plan`'s fields of the same share key."""
        ...

    def native_columns(self, values: Sequence[bytes]) -> NativeColumns | None:
        """Every field of the plan natively, or None (declined, or not the plain case)."""
        ...

    def from_native(self, decoded: NativeColumns) -> pl.DataFrame | None:
        """This plan's frame from native columns of at least its fields, or None."""
        ...


@dataclass(frozen=True, slots=True)
class _Group:
    union: RecordDecoder  # decodes the union of the group's fields
    members: tuple[RecordDecoder, ...]  # held, so their id()s stay theirs


class TopicDecoders:
    """The shared decoders of one topic's tasks; build again when the task set changes."""

    def __init__(self, decoders: Iterable[RecordDecoder]) -> None:
        grouped: dict[Hashable, list[RecordDecoder]] = {}
        for decoder in decoders:
            key = _share_key(decoder)
            if key is not None:
                grouped.setdefault(key, []).append(decoder)
        self._group_of: dict[int, _Group] = {}
        for members in grouped.values():
            if len(members) < 2:
                continue  # nothing to share
            group = _Group(union=_union_decoder(members), members=tuple(members))
            for decoder in members:
                self._group_of[id(decoder)] = group

    def decoding(self, values: Sequence[bytes]) -> BatchDecoding:
        """The decodes of one batch's `values` (done lazily, per group)."""
        return BatchDecoding(self._group_of, values)


class BatchDecoding:
    """One batch, decoded once per group of decoders that can share."""

    def __init__(self, group_of: dict[int, _Group], values: Sequence[bytes]) -> None:
        self._group_of = group_of
        self.values = values
        # id(group) -> NativeColumns | JsonColumns | CsvStrings | None
        self._staged: dict[int, object] = {}

    def for_decoder(self, decoder: RecordDecoder) -> DecodedBatch:
        """What `decoder.decode(self.values)` gives."""
        group = self._group_of.get(id(decoder))
        if group is None:
            return decoder.decode(self.values)
        staged = self._staged.get(id(group), _NOT_YET)
        if staged is _NOT_YET:
            staged = self._stage(group.union)
            self._staged[id(group)] = staged
        if isinstance(decoder, JsonRecordDecoder) and isinstance(staged, NativeColumns):
            frame = decoder.from_native(staged)
            if frame is not None:
                return DecodedBatch(frame=frame, bad={})
        # (A record the union finds bad may be fine for this task: it then decodes alone.)
        if (
            isinstance(decoder, JsonRecordDecoder)
            and isinstance(staged, JsonColumns)
            and not staged.bad
        ):
            return decoder.from_columns(staged)
        if isinstance(decoder, CsvRecordDecoder) and isinstance(staged, CsvStrings):
            frame = decoder.from_strings(staged)
            if frame is not None:
                return DecodedBatch(frame=frame, bad={})
        if isinstance(staged, NativeColumns) and isinstance(decoder, SharedNativeDecoder):
            frame = decoder.from_native(staged)
            if frame is not None:
                return DecodedBatch(frame=frame, bad={})
        # Not plain, declined natively, or a SUM/AVG field is not numeric: decoded alone.
        return decoder.decode(self.values)

    def _stage(self, union: RecordDecoder) -> NativeColumns | JsonColumns | CsvStrings | None:
        if isinstance(union, JsonRecordDecoder):
            return union.native_columns(self.values) or union.columns(self.values)
        if isinstance(union, CsvRecordDecoder):
            plain = union.plain_lines(self.values)
            return None if plain is None else union.strings(plain)
        if isinstance(union, SharedNativeDecoder):
            return union.native_columns(self.values)
        return None


def _share_key(decoder: RecordDecoder) -> Hashable | None:
    """Decoders with equal keys can share a decode of the union of their fields."""
    if isinstance(decoder, JsonRecordDecoder):
        return ("json",)
    if isinstance(decoder, CsvRecordDecoder):
        return ("csv", decoder.csv_format.columns, decoder.csv_format.delimiter)
    if isinstance(decoder, SharedNativeDecoder) and decoder.share_key is not None:
        return ("native", decoder.share_key)
    return None


def _union_decoder(members: list[RecordDecoder]) -> RecordDecoder:
    fields: dict[str, None] = {}
    for decoder in members:
        if isinstance(decoder, JsonRecordDecoder | CsvRecordDecoder | SharedNativeDecoder):
            fields.update(dict.fromkeys(decoder.plan.fields))
    # No numeric fields: text for CSV; each member types and checks its own fields.
    plan = FieldPlan(fields=tuple(fields))
    first = members[0]
    if isinstance(first, CsvRecordDecoder):
        return CsvRecordDecoder(plan, first.csv_format)
    if isinstance(first, SharedNativeDecoder):
        return first.for_plan(plan)
    return JsonRecordDecoder(plan)
