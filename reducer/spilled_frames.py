"""Open windows' merged frames spilled to local disk when an owner's columnar state passes its
budget (`reducer.state_budget_bytes`; docs/reducer.md, "State beyond memory").

A spilled frame is an Arrow IPC file with LZ4-compressed buffers, the encoding a columnar
checkpoint holds per window (`mars.engine.columnar_checkpoint`), so a full checkpoint copies
the file's bytes without decoding them. Its record batches are the parts it was written in
(`SpillFolder.write_parts`: a window's hash partitions), and a part reads back alone
(`SpilledFrame.part`), so a window larger than memory is merged and closed a part at a time.

The files are a cache of the owner's state, never its truth: the committed checkpoint and the
SEQ-ordered data sets rebuild it, so a new owner starts with an empty directory of its own and
a crashed owner's leftovers are removed by the next owner of any unit in the same folder
(`SpillFolder.open`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow as pa
from pyarrow import ipc

_PREFIX = "owner-"


@dataclass(frozen=True, slots=True)
class SpilledFrame:
    """One merged frame on disk: its rows and column types, known without reading it, and how
    many parts (record batches) it was written in."""

    path: Path
    height: int
    schema: pl.Schema
    parts: int = 1

    def read(self) -> pl.DataFrame:
        return pl.read_ipc(self.path)

    def part(self, index: int) -> pl.DataFrame:
        """Part `index` alone: only its record batch is read from the file."""
        if self.parts == 1:
            return self.read()
        with pa.OSFile(str(self.path), "rb") as source:
            batch = ipc.open_file(source).get_batch(index)
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        return frame

    def scan(self) -> pl.LazyFrame:
        return pl.scan_ipc(self.path)

    def ipc(self) -> bytes:
        """The file's bytes: an Arrow IPC file, as a columnar checkpoint holds a window."""
        return self.path.read_bytes()

    def drop(self) -> None:
        self.path.unlink(missing_ok=True)


class SpillFolder:
    """One owner's spill files: a directory of its own, removed when the owner stops."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._written = 0

    @classmethod
    def open(cls, parent: Path) -> SpillFolder:
        """A new directory under `parent`; directories there of processes that no longer run
        are removed first (a killed owner leaves its files)."""
        parent.mkdir(parents=True, exist_ok=True)
        for stale in parent.glob(f"{_PREFIX}*"):
            pid = stale.name.removeprefix(_PREFIX).split("-", 1)[0]
            if pid.isdigit() and not _running(int(pid)):
                shutil.rmtree(stale, ignore_errors=True)
        return cls(Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-", dir=parent)))

    def write_parts(self, parts: Iterable[pl.DataFrame]) -> SpilledFrame:
        """One file of `parts` (frames of one schema, empty ones too), a record batch each, in
        order; they are taken one at a time, so a merge that yields them holds one part. An
        exception from `parts` leaves no file."""
        path = self._next_path()
        heights: list[int] = []
        schema: pl.Schema | None = None
        writer: ipc.RecordBatchFileWriter | None = None
        try:
            for part in parts:
                if schema is not None and part.schema != schema:
                    part = part.cast(schema)  # (an empty part's merge may type a column anew)
                table = part.to_arrow()
                if writer is None:
                    options = ipc.IpcWriteOptions(compression="lz4")
                    writer = ipc.new_file(str(path), table.schema, options=options)
                    schema = part.schema
                writer.write_batch(_one_batch(table))
                heights.append(part.height)
        except BaseException:
            if writer is not None:
                writer.close()
            path.unlink(missing_ok=True)
            raise
        assert writer is not None and schema is not None, "no part to write"
        writer.close()
        return SpilledFrame(path=path, height=sum(heights), schema=schema, parts=len(heights))

    def _next_path(self) -> Path:
        self._written += 1
        return self.path / f"{self._written}.arrow"

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _one_batch(table: pa.Table) -> pa.RecordBatch:
    batches = table.combine_chunks().to_batches()
    if not batches:  # no rows
        return pa.RecordBatch.from_pylist([], schema=table.schema)
    (batch,) = batches
    return batch


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
