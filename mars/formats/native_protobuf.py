"""Protobuf payloads read by the Rust extension straight into typed columns
(`mars_native.ProtobufColumnsDecoder`, native/src/protobuf_columns.rs).

The `protobuf` runtime (`mars.formats.protobuf_decoder`) builds a message per record; the
native decoder walks the payloads with a graph of the writer's messages and appends only the
values the task reads to typed columns, which become Polars columns as the native JSON
decoder's do. It is built only for the plain case, every path running through singular
message fields to a scalar (bytes excluded) or to a field the writer lacks (NULL); otherwise
`for_message` gives None and the runtime reads every batch. Messages no path enters get one
node per type, walked only to check their bytes, so recursive types are fine. It declines
(None) a batch holding anything but well-formed payloads it reads exactly as the runtime does,
and the runtime, the reference, then decodes the batch and gives the bad records their reasons.
So a batch gives the same frame either way; tests/unit/formats/test_native_protobuf.py checks
it on random messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from mars.formats.native_payloads import NativePayloadReader
from mars.native import mars_native
from mars.tasks.field_paths import Step, field_path

_TYPE_NAMES = {
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_SINT32: "sint32",
    FieldDescriptor.TYPE_SINT64: "sint64",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_ENUM: "enum",
    FieldDescriptor.TYPE_FIXED32: "fixed32",
    FieldDescriptor.TYPE_SFIXED32: "sfixed32",
    FieldDescriptor.TYPE_FIXED64: "fixed64",
    FieldDescriptor.TYPE_SFIXED64: "sfixed64",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_DOUBLE: "double",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_MESSAGE: "message",
    FieldDescriptor.TYPE_GROUP: "group",
}

# A field for the decoder: (number, type name, argument, repeated, columns it fills, oneof slot
# or -1); the argument is a message's node index, an enum's (number, name) pairs, or None.
ProtobufField = tuple[int, str, Any, bool, list[int], int]
# A column for the decoder: (the node holding its field, its default or None: NULL).
ProtobufColumn = tuple[int, bool | int | float | str | None]
# The columns still walking at a message: (column number, the steps left of its path).
_Wanted = list[tuple[int, tuple[Step, ...]]]


class _NotPlain(Exception):
    """The message and paths are not the case the native decoder takes."""


class NativeProtobufReader(NativePayloadReader):
    """The native decoder of one Protobuf message type's payloads, reading `fields`."""

    @classmethod
    def for_message(
        cls, descriptor: Descriptor, fields: Sequence[str]
    ) -> NativeProtobufReader | None:
        """The reader of `descriptor`'s payloads, or None when the extension is not built or
        the case is not plain."""
        if mars_native is None or not fields:
            return None
        graph = _Graph(len(fields))
        try:
            graph.read(descriptor, [(n, field_path(name)) for n, name in enumerate(fields)])
        except _NotPlain:
            return None
        decoder = mars_native.ProtobufColumnsDecoder(graph.nodes, graph.columns)
        return cls(decoder, tuple(fields))


class _Graph:
    """The decoder's message nodes, the payloads' own first: one per message a path enters
    (its fields fill columns), one per other message type (only checked)."""

    def __init__(self, columns: int) -> None:
        self.nodes: list[list[ProtobufField]] = []
        self.columns: list[ProtobufColumn] = [(0, None)] * columns  # NULL unless placed
        self._checked: dict[Descriptor, int] = {}
        self._oneofs = 0

    def read(self, descriptor: Descriptor, wanted: _Wanted) -> int:
        """The node of a message that the paths of `wanted` enter."""
        if any(not rest or not isinstance(rest[0], str) for _, rest in wanted):
            raise _NotPlain  # a column on a message (a nested value), or an index into one
        node = self._node(descriptor)
        steps = {rest[0] for _, rest in wanted}
        slots = {}  # the oneofs with a member read: another member written must be seen
        for oneof in descriptor.oneofs:
            if any(member.name in steps for member in oneof.fields):
                slots[oneof.full_name] = self._oneofs
                self._oneofs += 1
        fields = []
        for field in descriptor.fields:
            oneof = field.containing_oneof
            slot = -1 if oneof is None else slots.get(oneof.full_name, -1)
            mine = [(n, rest[1:]) for n, rest in wanted if rest[0] == field.name]
            fields.append(self._field(field, mine, node, slot))
        self.nodes[node] = fields
        return node

    def _checked_node(self, descriptor: Descriptor) -> int:
        """The node of a message type no path enters, shared by every field of that type."""
        node = self._checked.get(descriptor)
        if node is None:
            node = self._checked[descriptor] = self._node(descriptor)
            self.nodes[node] = [self._field(field, [], node, -1) for field in descriptor.fields]
        return node

    def _node(self, descriptor: Descriptor) -> int:
        if descriptor.extension_ranges or descriptor.GetOptions().message_set_wire_format:
            raise _NotPlain  # extensions are parsed as the pool knows them
        self.nodes.append([])
        return len(self.nodes) - 1

    def _field(
        self, field: FieldDescriptor, wanted: _Wanted, node: int, oneof: int
    ) -> ProtobufField:
        kind = _TYPE_NAMES[field.type]
        here = [n for n, rest in wanted if not rest]
        if wanted and (field.is_repeated or kind in ("bytes", "group")):
            raise _NotPlain  # a path into a repeated field or a map, a column on bytes
        argument: Any = None
        if kind == "message":
            message = field.message_type
            argument = self.read(message, wanted) if wanted else self._checked_node(message)
        elif len(here) < len(wanted):
            raise _NotPlain  # a path through a scalar
        elif kind == "enum":
            argument = _enum_names(field)
        for n in here:
            self.columns[n] = (node, _default(field, argument))
        return (field.number, kind, argument, field.is_repeated, here, oneof)


def _enum_names(field: FieldDescriptor) -> list[tuple[int, str]]:
    """Each number's name as the runtime's reader gives it (with aliases, the first)."""
    by_number = field.enum_type.values_by_number
    return [(number, by_number.get(number).name) for number in by_number]


def _default(field: FieldDescriptor, enum_names: Any) -> bool | int | float | str | None:
    """What a field without presence reads as when not written; None (NULL) with presence."""
    if field.has_presence:
        return None
    value = field.default_value
    if enum_names is not None:
        names = dict(enum_names)
        if value not in names:
            raise _NotPlain  # the runtime's reader would give the number
        return str(names[value])
    assert isinstance(value, bool | int | float | str)
    return value
