"""What the native payload decoders of one writer schema share: a batch handed over as one
buffer, typed columns back (`mars.formats.native_avro`, `mars.formats.native_protobuf`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mars.engine.joined_values import JoinedValues
from mars.engine.native_json import NativeColumns


class NativePayloadReader:
    """A native decoder (`decode(data, ends, header)`) of one writer schema's payloads,
    reading `fields`."""

    def __init__(self, decoder: Any, fields: tuple[str, ...]) -> None:
        self.fields = fields
        self._decoder = decoder

    def columns(self, values: Sequence[bytes], header: bytes = b"") -> NativeColumns | None:
        """The batch's columns, each payload after `header`; None: declined."""
        if not values:
            return None
        joined = JoinedValues.of(values)
        decoded = self._decoder.decode(joined.data, joined.ends.tobytes(), header)
        return NativeColumns.of(self.fields, len(joined), decoded)
