"""Records' values as one buffer joined by newlines: the native consumer's form of a batch.

`mars_native.BatchConsumer` copies each partition's payloads into one buffer; handing them to
Python as one `bytes` per record cost an object per record, which the CSV decoder then joined
back into one buffer. `JoinedValues` keeps the buffer and each value's end instead: the CSV
decoder reads `data` as it is, and a value is sliced out only where one is asked for (a bad or
late record, the JSON decoder, the csv module's fallback).

A value may itself hold newlines: `ends`, not the newlines, say where each value ends (the
decoders count the lines to notice such a value).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import numpy.typing as npt

Ends = npt.NDArray[np.int64]


class JoinedValues(Sequence[bytes]):
    """Value `i` is `data[starts[i]:ends[i]]`, where `starts[0] == 0` and
    `starts[i] == ends[i - 1] + 1` (one newline between values)."""

    __slots__ = ("data", "ends")

    def __init__(self, data: bytes, ends: Ends) -> None:
        self.data = data
        self.ends = ends

    @classmethod
    def of(cls, values: Sequence[bytes]) -> JoinedValues:
        """`values` joined (for tests and callers that hold the values one by one); values
        joined already (the native consumer's) are returned as they are."""
        if isinstance(values, JoinedValues):
            return values
        lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        return cls(b"\n".join(values), np.cumsum(lengths + 1, dtype=np.int64) - 1)

    @classmethod
    def from_native(cls, data: bytes, ends: bytes) -> JoinedValues:
        """The form `mars_native.BatchConsumer.consume` returns: `ends` as native int64s."""
        return cls(data, np.frombuffer(ends, dtype=np.int64))

    @classmethod
    def concat(cls, parts: Sequence[JoinedValues]) -> JoinedValues:
        """The values of `parts`, one after the other (one copy of the bytes)."""
        parts = [part for part in parts if len(part)]
        if not parts:
            return cls.of([])
        if len(parts) == 1:
            return parts[0]
        bases = np.cumsum([0, *(len(part.data) + 1 for part in parts[:-1])], dtype=np.int64)
        return cls(
            b"\n".join(part.data for part in parts),
            np.concatenate([part.ends + base for part, base in zip(parts, bases, strict=True)]),
        )

    def joined(self, separator: bytes) -> bytes:
        """`separator.join(self)`, without slicing the values out where it can."""
        if separator == b"\n":
            return self.data
        if self.data.count(b"\n") == len(self) - 1:  # no value holds a newline
            return self.data.replace(b"\n", separator)
        return separator.join(self)

    def value_bytes(self) -> int:
        """The values' total size (the buffer without its newlines)."""
        return len(self.data) - max(len(self) - 1, 0)

    def starts(self) -> Ends:
        starts = np.empty(len(self.ends), dtype=np.int64)
        starts[:1] = 0
        starts[1:] = self.ends[:-1] + 1
        return starts

    def __len__(self) -> int:
        return len(self.ends)

    @overload
    def __getitem__(self, index: int) -> bytes: ...

    @overload
    def __getitem__(self, index: slice) -> JoinedValues: ...

    def __getitem__(self, index: int | slice) -> bytes | JoinedValues:
        if isinstance(index, slice):
            first, stop, step = index.indices(len(self))
            if step != 1:
                return JoinedValues.of(list(self)[index])
            if first >= stop:
                return JoinedValues(b"", np.empty(0, dtype=np.int64))
            start = 0 if first == 0 else int(self.ends[first - 1]) + 1
            end = int(self.ends[stop - 1])
            return JoinedValues(self.data[start:end], self.ends[first:stop] - start)
        end = int(self.ends[index])  # raises IndexError as a list would
        row = index + len(self) if index < 0 else index
        start = 0 if row == 0 else int(self.ends[row - 1]) + 1
        return self.data[start:end]

    def __iter__(self) -> Iterator[bytes]:
        data = self.data
        return (
            data[start:end]
            for start, end in zip(self.starts().tolist(), self.ends.tolist(), strict=True)
        )

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JoinedValues):
            return self.data == other.data and np.array_equal(self.ends, other.ends)
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"JoinedValues({list(self)!r})"


def join_values(values: Sequence[bytes], separator: bytes) -> bytes:
    """`separator.join(values)`, from the joined buffer when `values` are `JoinedValues`."""
    if isinstance(values, JoinedValues):
        return values.joined(separator)
    return separator.join(values)
