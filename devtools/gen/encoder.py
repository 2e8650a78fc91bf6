"""Fast record encoding from pre-rendered per-value fragments.

Each pool value is rendered once into the exact bytes it contributes to a record, separator
and key included (JSON: `,"sip":"10.1.2.3"`; CSV: `,10.1.2.3`). A record is then one
`bytes.join` over its fragments, gathered column-wise with numpy fancy indexing; no per-field
Python formatting happens per record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from devtools.gen.config import Encoding
from devtools.gen.fields import TIMESTAMP_FIELD, FieldPool, PoolValue

ObjectArray = npt.NDArray[np.object_]
IndexArray = npt.NDArray[np.int64]
BytesArray = npt.NDArray[np.bytes_]


def _plain(text: str) -> bool:
    """True when `text` needs no escaping in JSON nor quoting in CSV."""
    return text.isascii() and text.isprintable() and not any(c in text for c in '"\\,')


def _render(value: PoolValue, *, encoding: Encoding) -> bytes:
    text = str(value)
    if encoding is Encoding.JSON:
        if isinstance(value, int):
            return text.encode("ascii")
        return (f'"{text}"' if _plain(text) else json.dumps(value)).encode("ascii")
    if not _plain(text):
        raise ValueError(f"CSV pool value needs quoting: {text!r}")
    return text.encode("ascii")


def _fragment_table(
    pool: FieldPool, prefix: bytes, suffix: bytes, *, encoding: Encoding
) -> ObjectArray:
    """`prefix + rendered value + suffix` for every pool value, as an object array of bytes."""
    if isinstance(pool.values, range):  # big numeric pools: render them vectorised
        numbers = np.arange(pool.values.start, pool.values.stop, pool.values.step)
        rendered = np.char.add(np.char.add(prefix, numbers.astype(np.bytes_)), suffix)
        return rendered.astype(object)
    if all(isinstance(v, str) for v in pool.values) and _plain("".join(map(str, pool.values))):
        quote = b'"' if encoding is Encoding.JSON else b""
        words = np.array(pool.values, dtype=np.bytes_)
        rendered = np.char.add(np.char.add(prefix + quote, words), quote + suffix)
        return rendered.astype(object)
    table = np.empty(len(pool.values), dtype=object)
    table[:] = [prefix + _render(v, encoding=encoding) + suffix for v in pool.values]
    return table


class FragmentEncoder:
    """Encodes tuples given as (encoded timestamp, one pool index per field)."""

    def __init__(self, pools: Sequence[FieldPool], *, encoding: Encoding) -> None:
        self._encoding = encoding
        self._fragments: list[ObjectArray] = []
        for position, pool in enumerate(pools):
            if encoding is Encoding.JSON:
                prefix = b',"' + pool.name.encode("ascii") + b'":'
            else:
                prefix = b","
            suffix = b"}" if encoding is Encoding.JSON and position == len(pools) - 1 else b""
            self._fragments.append(_fragment_table(pool, prefix, suffix, encoding=encoding))
        self._timestamp_prefix = (
            b'{"' + TIMESTAMP_FIELD.encode("ascii") + b'":' if encoding is Encoding.JSON else b""
        )

    def encode(self, timestamps: BytesArray, indices: Sequence[IndexArray]) -> list[bytes]:
        """One record per row: `timestamps[i]` and `indices[f][i]` for every field f."""
        first = (
            np.char.add(self._timestamp_prefix, timestamps)
            if self._timestamp_prefix
            else timestamps
        )
        columns = [first.tolist()]
        columns += [
            table[idx].tolist() for table, idx in zip(self._fragments, indices, strict=True)
        ]
        # map() lets zip() recycle its result tuple: no per-record allocation besides the bytes.
        return list(map(b"".join, zip(*columns, strict=True)))
