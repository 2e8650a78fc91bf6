"""The reducer's committed progress for one owned unit, as stored in the `mars.progress` topic.

One record per commit, key `<task>/<bucket>` (the unit), value UTF-8 JSON:

    {"closed_watermark": 1700000060000,       # windows with end + grace <= this are emitted
     "rseq": {"0": 42},                        # per covered bucket: first data set still needed
     "merged": {"0": 57},                      # per covered bucket: last data set merged
     "counters": {"windows_emitted": 3, ...},  # cumulative, exactly once with the output
     "checkpoint": "7:9f2c41d0a3b8",           # the open-window checkpoint in Redis, or null
     "checkpoint_base": ["5:1c0e", "6:77a1"],  # a delta's full checkpoint and earlier deltas
     "rewinds": [[1, 1700000000000]],          # rewinds applied: generation, first window
     "owner": "reducer-a", "committed_ms": 1700000061234}

It is written in the same Kafka transaction as the results it accounts for, so it is the source
of truth for a new owner; Redis's rseq only drives garbage collection. `rseq` and `merged` are
maps because a top-k task's unit covers all buckets of the task. A checkpoint counts only once a
committed progress record names it (docs/reducer.md, "Checkpoints"). A checkpoint may be a
delta (the groups changed since the one before it): then `checkpoint_base` lists, oldest first,
the full checkpoint and the deltas it applies on top of (absent for a full checkpoint).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

COUNTER_NAMES = ("windows_emitted", "results_emitted", "late_records", "late_contributions")


class ProgressFormatError(ValueError):
    """A progress record that cannot be decoded: the unit must not guess, it stops."""


def progress_key(task_id: str, bucket: int) -> str:
    return f"{task_id}/{bucket}"


def partition_for(key: str, partitions: int) -> int:
    """The progress partition of a unit key: crc32, the same in every process and language."""
    return zlib.crc32(key.encode()) % partitions


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """Names one checkpoint of a unit: its number (one more than the unit's previous one) and a
    random token, so that a fenced owner's checkpoint never overwrites the next owner's."""

    number: int
    token: str

    @property
    def field(self) -> str:
        """The field of the unit's checkpoint hash in Redis."""
        return f"{self.number}:{self.token}"

    @classmethod
    def parse(cls, field: str) -> CheckpointRef:
        number, token = field.split(":", 1)
        return cls(int(number), token)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgressRecord:
    """What one committed transaction of a unit says about its buckets."""

    closed_watermark: int | None
    rseqs: Mapping[int, int]
    merged: Mapping[int, int]
    counters: Mapping[str, int] = field(default_factory=dict)
    checkpoint: CheckpointRef | None = None
    checkpoint_base: tuple[CheckpointRef, ...] = ()  # `checkpoint` is a delta on top of these
    owner: str = ""
    committed_ms: int = 0
    rewinds: tuple[tuple[int, int], ...] = ()  # (generation, T') applied, oldest first

    @classmethod
    def initial(cls, buckets: list[int]) -> ProgressRecord:
        """The progress of a unit that never committed: replay everything from data set 1."""
        return cls(
            closed_watermark=None,
            rseqs={b: 1 for b in buckets},
            merged={b: 0 for b in buckets},
        )

    @property
    def checkpoint_chain(self) -> tuple[CheckpointRef, ...]:
        """The checkpoints that make up the committed one, the full one first (empty: none)."""
        return () if self.checkpoint is None else (*self.checkpoint_base, self.checkpoint)

    def counter(self, name: str) -> int:
        return int(self.counters.get(name, 0))

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {
            "closed_watermark": self.closed_watermark,
            "rseq": {str(b): n for b, n in sorted(self.rseqs.items())},
            "merged": {str(b): n for b, n in sorted(self.merged.items())},
            "counters": dict(self.counters),
            "checkpoint": None if self.checkpoint is None else self.checkpoint.field,
            "owner": self.owner,
            "committed_ms": self.committed_ms,
        }
        if self.checkpoint_base:
            doc["checkpoint_base"] = [ref.field for ref in self.checkpoint_base]
        if self.rewinds:
            doc["rewinds"] = [list(r) for r in self.rewinds]
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ProgressRecord:
        try:
            doc = json.loads(data)
            watermark = doc["closed_watermark"]
            checkpoint = doc.get("checkpoint")
            return cls(
                closed_watermark=None if watermark is None else int(watermark),
                rseqs={int(b): int(n) for b, n in doc["rseq"].items()},
                merged={int(b): int(n) for b, n in doc["merged"].items()},
                counters={str(k): int(v) for k, v in (doc.get("counters") or {}).items()},
                checkpoint=None if checkpoint is None else CheckpointRef.parse(str(checkpoint)),
                checkpoint_base=tuple(
                    CheckpointRef.parse(str(f)) for f in doc.get("checkpoint_base") or ()
                ),
                owner=str(doc.get("owner", "")),
                committed_ms=int(doc.get("committed_ms", 0)),
                rewinds=tuple((int(g), int(t)) for g, t in doc.get("rewinds") or ()),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ProgressFormatError(f"bad progress record: {exc}") from exc

    def covering(self, buckets: list[int]) -> ProgressRecord:
        """This progress for exactly `buckets` (new buckets start from data set 1)."""
        return ProgressRecord(
            closed_watermark=self.closed_watermark,
            rseqs={b: self.rseqs.get(b, 1) for b in buckets},
            merged={b: self.merged.get(b, 0) for b in buckets},
            counters=self.counters,
            checkpoint=self.checkpoint,
            checkpoint_base=self.checkpoint_base,
            owner=self.owner,
            committed_ms=self.committed_ms,
            rewinds=self.rewinds,
        )
