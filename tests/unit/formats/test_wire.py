"""The Confluent wire format: header, message indexes, and what is not framed."""

from __future__ import annotations

import pytest

from mars.formats.wire import FramingError, frame, split_avro, split_protobuf


def test_avro_header_round_trips() -> None:
    framed = split_avro(frame(258, b"payload"))
    assert (framed.schema_id, bytes(framed.payload)) == (258, b"payload")
    assert frame(258, b"x")[:5] == b"\x00\x00\x00\x01\x02"


@pytest.mark.parametrize("indexes", [(0,), (1,), (1, 0), (3, 2, 70)])
def test_protobuf_message_indexes_round_trip(indexes: tuple[int, ...]) -> None:
    framed = split_protobuf(frame(7, b"\x08\x01", indexes))
    assert framed.message_indexes == indexes
    assert bytes(framed.payload) == b"\x08\x01"


def test_first_message_is_the_single_zero_shortcut() -> None:
    assert frame(7, b"p", (0,)) == b"\x00\x00\x00\x00\x07\x00p"
    assert frame(7, b"p", (1, 0)) == b"\x00\x00\x00\x00\x07\x04\x02\x00p"  # zig-zag: 2, 1, 0


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"\x00\x00\x01", "shorter than the 5-byte Confluent header"),
        (b"\x01\x00\x00\x00\x01abc", "wrong magic byte 1"),
        (b'{"a":1}', "wrong magic byte 123"),
    ],
)
def test_unframed_records_are_refused(value: bytes, reason: str) -> None:
    with pytest.raises(FramingError, match=reason):
        split_avro(value)


def test_truncated_message_indexes_are_refused() -> None:
    with pytest.raises(FramingError, match="truncated Protobuf message-index"):
        split_protobuf(b"\x00\x00\x00\x00\x01\x04")
    with pytest.raises(FramingError, match="message-index count"):
        split_protobuf(b"\x00\x00\x00\x00\x01\x03")  # zig-zag -2
