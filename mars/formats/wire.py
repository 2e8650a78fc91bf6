"""The Confluent wire format: magic byte 0, the writer schema's id (4 bytes, big-endian), for
Protobuf the message-index array (zig-zag varints: a count, then that many indexes; a lone 0
stands for `[0]`, the file's first message), then the Avro or Protobuf payload."""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC_BYTE = 0
HEADER_SIZE = 5  # magic byte + schema id
_ID = struct.Struct(">I")
_MAX_MESSAGE_DEPTH = 100  # message-index arrays are paths into nested messages: short


class FramingError(ValueError):
    """A record is not in the Confluent wire format; the message is its dead-letter reason."""


@dataclass(frozen=True, slots=True)
class Framed:
    schema_id: int
    payload: memoryview
    message_indexes: tuple[int, ...] = ()  # Protobuf only


def split_header(value: bytes) -> tuple[int, memoryview]:
    """(schema id, the bytes after the 5-byte header)."""
    if len(value) < HEADER_SIZE:
        raise FramingError(
            f"record of {len(value)} bytes is shorter than the 5-byte Confluent header"
        )
    if value[0] != MAGIC_BYTE:
        raise FramingError(f"wrong magic byte {value[0]} (the Confluent wire format starts with 0)")
    return _ID.unpack_from(value, 1)[0], memoryview(value)[HEADER_SIZE:]


def split_avro(value: bytes) -> Framed:
    schema_id, payload = split_header(value)
    return Framed(schema_id, payload)


def split_protobuf(value: bytes) -> Framed:
    schema_id, rest = split_header(value)
    count, at = _read_zigzag(rest, 0)
    if count == 0:
        return Framed(schema_id, rest[at:], (0,))
    if not 0 < count <= _MAX_MESSAGE_DEPTH:
        raise FramingError(f"bad Protobuf message-index count {count}")
    indexes = []
    for _ in range(count):
        index, at = _read_zigzag(rest, at)
        if index < 0:
            raise FramingError(f"bad Protobuf message index {index}")
        indexes.append(index)
    return Framed(schema_id, rest[at:], tuple(indexes))


def frame(schema_id: int, payload: bytes, message_indexes: tuple[int, ...] | None = None) -> bytes:
    """`payload` with the header; `message_indexes` for Protobuf (`(0,)` is written as 0)."""
    header = bytes([MAGIC_BYTE]) + _ID.pack(schema_id)
    if message_indexes is None:
        return header + payload
    if message_indexes == (0,):
        return header + b"\x00" + payload
    body = _zigzag(len(message_indexes)) + b"".join(map(_zigzag, message_indexes))
    return header + body + payload


def _zigzag(number: int) -> bytes:
    encoded = (number << 1) ^ (number >> 63)
    out = bytearray()
    while encoded > 0x7F:
        out.append((encoded & 0x7F) | 0x80)
        encoded >>= 7
    out.append(encoded)
    return bytes(out)


def _read_zigzag(data: memoryview, at: int) -> tuple[int, int]:
    """(the zig-zag varint at `at`, the position after it)."""
    shift = 0
    encoded = 0
    while True:
        if at >= len(data):
            raise FramingError("truncated Protobuf message-index array")
        byte = data[at]
        at += 1
        encoded |= (byte & 0x7F) << shift
        if byte < 0x80:
            return (encoded >> 1) ^ -(encoded & 1), at
        shift += 7
        if shift > 63:
            raise FramingError("Protobuf message-index varint longer than 10 bytes")
