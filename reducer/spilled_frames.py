"""Open windows' merged frames spilled to local disk when an owner's columnar state passes its
budget (`reducer.state_budget_bytes`; docs/reducer.md, "State beyond memory").

A spilled frame is an Arrow IPC file with LZ4-compressed buffers, the encoding a columnar
checkpoint holds per window (`mars.engine.columnar_checkpoint`), so a full checkpoint copies
the file's bytes without decoding them. The files are a cache of the owner's state, never its
truth: the committed checkpoint and the SEQ-ordered data sets rebuild it, so a new owner starts
with an empty directory of its own and a crashed owner's leftovers are removed by the next
owner of any unit in the same folder (`SpillFolder.open`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import polars as pl

_PREFIX = "owner-"


@dataclass(frozen=True, slots=True)
class SpilledFrame:
    """One merged frame on disk: its rows and column types, known without reading it."""

    path: Path
    height: int
    schema: pl.Schema

    def read(self) -> pl.DataFrame:
        return pl.read_ipc(self.path)

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

    def write(self, frame: pl.DataFrame) -> SpilledFrame:
        self._written += 1
        path = self.path / f"{self._written}.arrow"
        frame.write_ipc(path, compression="lz4")
        return SpilledFrame(path=path, height=frame.height, schema=frame.schema)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
