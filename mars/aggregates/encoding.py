"""Compact, versioned binary encoding of a list of partial states.

Layout (msgpack): `[version, [wire_name, ...], [wire_state, ...]]`. The aggregate names travel
with the states so a reader can check they match its task and decode without the spec. A
reader rejects versions it does not know instead of misreading them; bump `VERSION` whenever
a state's wire form changes and keep decoding the old one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from mars.aggregates import msgpack_wire
from mars.aggregates.base import Aggregate
from mars.aggregates.registry import from_wire_name, wire_name

VERSION = 1

_decoder = msgpack_wire.decoder()


class PartialEncodingError(ValueError):
    """Bytes that are not a partial-state encoding this version of Mars can read."""


def encode_states(aggregates: Sequence[Aggregate[Any]], states: Sequence[Any]) -> bytes:
    if len(aggregates) != len(states):
        raise ValueError("one state per aggregate expected")
    return msgpack_wire.encode(
        [
            VERSION,
            [wire_name(agg) for agg in aggregates],
            [agg.to_wire(state) for agg, state in zip(aggregates, states, strict=True)],
        ]
    )


def decode_states(data: bytes) -> tuple[tuple[Aggregate[Any], ...], list[Any]]:
    """The aggregates and their states from `encode_states` bytes."""
    try:
        version, names, wires = _decoder.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise PartialEncodingError(f"not an encoded partial state: {exc}") from exc
    if version != VERSION:
        raise PartialEncodingError(f"unsupported partial-state encoding version {version}")
    aggregates = tuple(from_wire_name(name) for name in names)
    states = [agg.from_wire(wire) for agg, wire in zip(aggregates, wires, strict=True)]
    return aggregates, states
