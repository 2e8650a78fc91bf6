"""One decode of a batch for every task over its topic (the usual deployment: dozens of
statistics over one stream).

Tasks over one topic read different fields. `TopicDecoders` groups their decoders by what a
decode depends on besides the fields (JSON; CSV with one header and delimiter) and builds one
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

The union's work is done on the first task that asks, so a batch no task reads costs nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

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
        return decoder.decode(self.values)  # not plain CSV, or a SUM/AVG field is not numeric

    def _stage(self, union: RecordDecoder) -> NativeColumns | JsonColumns | CsvStrings | None:
        if isinstance(union, JsonRecordDecoder):
            return union.native_columns(self.values) or union.columns(self.values)
        if isinstance(union, CsvRecordDecoder):
            plain = union.plain_lines(self.values)
            return None if plain is None else union.strings(plain)
        return None


def _share_key(decoder: RecordDecoder) -> Hashable | None:
    """Decoders with equal keys can share a decode of the union of their fields."""
    if isinstance(decoder, JsonRecordDecoder):
        return ("json",)
    if isinstance(decoder, CsvRecordDecoder):
        return ("csv", decoder.csv_format.columns, decoder.csv_format.delimiter)
    return None


def _union_decoder(members: list[RecordDecoder]) -> RecordDecoder:
    fields: dict[str, None] = {}
    for decoder in members:
        if isinstance(decoder, JsonRecordDecoder | CsvRecordDecoder):
            fields.update(dict.fromkeys(decoder.plan.fields))
    plan = FieldPlan(fields=tuple(fields))  # text for CSV; each member types its own fields
    first = members[0]
    if isinstance(first, CsvRecordDecoder):
        return CsvRecordDecoder(plan, first.csv_format)
    return JsonRecordDecoder(plan)
