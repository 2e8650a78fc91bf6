"""Protobuf payloads -> a task's fields, with the `protobuf` runtime.

Fields are read by name along the task's paths (`a.b` into nested messages and maps, `a[0]`
into repeated fields). A field the writer's message lacks is NULL (schema evolution), and so is
a field with presence (`optional`, proto2, message fields, oneof members) that is not set; a
proto3 field without presence reads as its default (0, "", false), which is what the bytes
mean. Enums read as their value's name.

A whole batch goes first to the native decoder when the task's paths are plain and the
extension is built (`mars.formats.native_protobuf`); the runtime reads each record of a batch
it declines, and is the reference it is tested against.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import Any

from google.protobuf.descriptor import FieldDescriptor, FileDescriptor
from google.protobuf.message import DecodeError, Message

from mars.engine.json_paths import BadValue
from mars.engine.native_json import NativeColumns
from mars.formats.errors import CorruptRecord
from mars.formats.native_protobuf import NativeProtobufReader
from mars.tasks.field_paths import FieldPath, Step, display_path, field_path


class ProtobufPayloadReader:
    """Reads the plan's fields out of payloads of one message type: a batch at a time by the
    native decoder when it takes the batch, else record by record with the runtime."""

    def __init__(self, message_type: type[Message], fields: tuple[str, ...]) -> None:
        self._message_type = message_type
        self._paths = {name: field_path(name) for name in fields}
        self._native = NativeProtobufReader.for_message(message_type.DESCRIPTOR, fields)

    @cached_property
    def schema_key(self) -> tuple[str, tuple[tuple[str, bytes], ...]]:
        """The message's full name and its compiled .proto files (its own and every import):
        two compilations of the same files read alike, though each has its own classes."""
        descriptor = self._message_type.DESCRIPTOR
        return descriptor.full_name, tuple(sorted(_compiled_files(descriptor.file).items()))

    def with_fields(self, fields: tuple[str, ...]) -> ProtobufPayloadReader:
        """A reader of the same message type reading `fields`."""
        return ProtobufPayloadReader(self._message_type, fields)

    def native_columns(self, values: Sequence[bytes], header: bytes) -> NativeColumns | None:
        """The batch's columns, each payload after `header`, decoded natively; None when
        declined or not built."""
        return None if self._native is None else self._native.columns(values, header)

    def read(self, payload: bytes | memoryview) -> dict[str, Any]:
        message = self._message_type()
        try:
            message.ParseFromString(bytes(payload))
        except (DecodeError, ValueError, RuntimeError) as error:
            raise CorruptRecord(f"corrupt Protobuf record: {error}") from None
        return {name: _read_path(message, path) for name, path in self._paths.items()}


def _compiled_files(file: FileDescriptor) -> dict[str, bytes]:
    """Each file's serialized descriptor by name: `file`'s and its imports', recursively."""
    found: dict[str, bytes] = {}
    todo = [file]
    while todo:
        current = todo.pop()
        if current.name not in found:
            found[current.name] = current.serialized_pb
            todo.extend(current.dependencies)
    return found


def _read_path(message: Message, path: FieldPath) -> Any:
    value: Any = message
    for depth, step in enumerate(path):
        value = _step(value, step, path[: depth + 1])
        if value is None or type(value) is BadValue:
            return value
    if isinstance(value, Message):
        return {}  # a nested value: the decoder's checks give the reason
    return value


def _step(value: Any, step: Step, path: FieldPath) -> Any:
    if isinstance(value, Message):
        if isinstance(step, int):
            return BadValue(_wrong_kind(path, "a message", "a repeated field"))
        return _field(value, step)
    if type(value) is list:
        if isinstance(step, int):
            return value[step] if step < len(value) else None
        return BadValue(_wrong_kind(path, "a repeated field", "a message"))
    if type(value) is dict:
        return value.get(step)
    return BadValue(_wrong_kind(path, "a scalar", "a message"))


def _field(message: Message, name: str) -> Any:
    field = message.DESCRIPTOR.fields_by_name.get(name)
    if field is None:
        return None  # the writer's schema lacks it
    if field.has_presence and not message.HasField(name):
        return None
    value = getattr(message, name)
    if field.is_repeated:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            return dict(value)
        values = list(value)
        if field.enum_type is not None:
            return [_enum_name(field, v) for v in values]
        return values
    if field.enum_type is not None:
        return _enum_name(field, value)
    return value


def _enum_name(field: FieldDescriptor, number: int) -> str | int:
    value = field.enum_type.values_by_number.get(number)
    return number if value is None else value.name


def _wrong_kind(path: FieldPath, found: str, needed: str) -> str:
    return (
        f"'{display_path(path[:-1])}' holds {found} where {needed} is needed "
        f"(to read '{display_path(path)}')"
    )
