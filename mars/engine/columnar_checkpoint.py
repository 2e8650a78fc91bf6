"""The checkpoint of a reducer's columnar open windows: Arrow IPC per window, not msgpack per
group.

Layout (msgpack): `[MAGIC, VERSION, [aggregate wire names], [[window_start, ipc], ...],
python]`: each columnar window's frame (`mars.engine.columnar_layout`) as one Arrow IPC file
(LZ4-compressed buffers), and the windows that fell back to Python objects as one encoded data
set (`mars.engine.dataset`, empty when none did). A reader tells it from a data set-shaped
checkpoint by `is_columnar`; `checkpoint_dataset` reads either as a `DataSet` (pull queries,
and an owner whose state is not the columnar one).
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
import polars as pl

from mars.aggregates import Aggregate, from_wire_name, wire_name
from mars.engine.columnar_layout import frame_groups
from mars.engine.dataset import DataSet, Groups, decode_dataset, encode_dataset
from mars.engine.errors import DataSetFormatError

MAGIC = "mars-columnar-checkpoint"
VERSION = 1

_encoder = msgspec.msgpack.Encoder()
_layout = msgspec.msgpack.Decoder(tuple[str, int, list[str], list[tuple[int, bytes]], bytes])
_PREFIX = _encoder.encode([MAGIC])[1:]  # the magic string's bytes after the array header


@dataclass(frozen=True, slots=True, kw_only=True)
class ColumnarCheckpoint:
    aggregate_names: tuple[str, ...]
    frames: dict[int, pl.DataFrame]
    python: DataSet  # the windows that fell back to Python state


def encode_columnar(
    aggregates: Sequence[Aggregate[Any]],
    frames: Mapping[int, pl.DataFrame | bytes],
    python: Mapping[int, Groups],
) -> bytes:
    """`frames`: each window's frame, or its Arrow IPC file already written (a spilled
    frame, `reducer.spilled_frames`: LZ4 as here)."""
    windows = []
    for start, frame in frames.items():
        if isinstance(frame, bytes):
            windows.append([start, frame])
            continue
        buffer = io.BytesIO()
        frame.write_ipc(buffer, compression="lz4")
        windows.append([start, buffer.getvalue()])
    names = [wire_name(agg) for agg in aggregates]
    rest = encode_dataset(aggregates, python, canonical=False)
    return _encoder.encode([MAGIC, VERSION, names, windows, rest])


def is_columnar(data: bytes) -> bool:
    return data[1 : 1 + len(_PREFIX)] == _PREFIX


def decode_columnar(data: bytes) -> ColumnarCheckpoint:
    try:
        magic, version, names, windows, rest = _layout.decode(data)
    except (msgspec.DecodeError, TypeError, ValueError) as exc:
        raise DataSetFormatError(f"not a columnar checkpoint: {exc}") from exc
    if magic != MAGIC or version != VERSION:
        raise DataSetFormatError(f"unsupported columnar checkpoint {magic!r} version {version}")
    try:
        frames = {start: pl.read_ipc(io.BytesIO(ipc)) for start, ipc in windows}
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise DataSetFormatError(f"malformed columnar checkpoint: {exc}") from exc
    return ColumnarCheckpoint(
        aggregate_names=tuple(names), frames=frames, python=decode_dataset(rest)
    )


def checkpoint_dataset(data: bytes) -> DataSet:
    """Any checkpoint (columnar or a data set) as a data set of Python groups."""
    if not is_columnar(data):
        return decode_dataset(data)
    found = decode_columnar(data)
    try:
        aggregates = tuple(from_wire_name(name) for name in found.aggregate_names)
    except (TypeError, ValueError) as exc:
        raise DataSetFormatError(f"malformed columnar checkpoint: {exc}") from exc
    windows = dict(found.python.windows)
    for start, frame in found.frames.items():
        windows[start] = frame_groups(aggregates, frame)
    return DataSet(aggregates=aggregates, windows=windows)
