"""msgpack for partial states, whose ints may leave 64 bits.

msgpack's ints stop at 64 bits and Python's do not: a SUM of int64 values can outgrow them
(DuckDB makes SUM(BIGINT) a HUGEINT for the same reason). Such an int travels as an extension
value, code `BIG_INT`, holding its signed big-endian bytes. Encoding tries the plain form first,
so only a payload that holds a big int pays for the rewrite.
"""

from __future__ import annotations

from typing import Any

import msgspec

BIG_INT = 1  # msgpack extension code of an int beyond 64 bits
_FITS = range(-(2**63), 2**64)  # what msgpack's int family holds

_encoder = msgspec.msgpack.Encoder()


def encode(obj: Any) -> bytes:
    try:
        return _encoder.encode(obj)
    except OverflowError:
        return _encoder.encode(_with_big_ints(obj))


def decoder(type_: Any = Any) -> msgspec.msgpack.Decoder[Any]:
    """A decoder of `type_` that reads big ints back as ints."""
    return msgspec.msgpack.Decoder(type_, ext_hook=_read_ext)


def _with_big_ints(obj: Any) -> Any:
    if type(obj) is int:
        if obj in _FITS:
            return obj
        size = (obj.bit_length() + 8) // 8  # one bit more for the sign
        return msgspec.msgpack.Ext(BIG_INT, obj.to_bytes(size, "big", signed=True))
    if isinstance(obj, list | tuple):
        return [_with_big_ints(item) for item in obj]
    if isinstance(obj, dict):
        return {key: _with_big_ints(value) for key, value in obj.items()}
    return obj


def _read_ext(code: int, data: memoryview) -> Any:
    if code != BIG_INT:
        raise ValueError(f"unknown msgpack extension code {code}")
    return int.from_bytes(data, "big", signed=True)
