"""Rewinding a running task (`POST /tasks/{id}/rewind`): the pure parts (docs/rewind.md).

A rewind of generation `g` recomputes the task's windows from `T'` (`first_rewound_window`):
Redis fixes, in one script, the hand-over offset `H[p]` of every partition (its applied offset
+ 1) and, per bucket, the marker `S[b]` (its seq then). Reducer owners drop their windows from
`T'` on once they merged data set `S[b]`, and emit every window from `T'` on at `revision =
g`; mappers re-read `[start[p], H[p])` under the source ids `rewind:<g>:<p>`, keeping only
windows from `T'` on, while the watermark is held; live mappers go on from `H[p]` untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # mars.windows imports the spec, which imports this
    from mars.windows import WindowAssigner

REWIND_HOLD_PREFIX = "rewind:"


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRewind:
    """One rewind of a task as Redis fixed it (`mars.store.rewinds`); also kept in the task's
    spec (`TaskSpec.rewinds`) for the record. Lists are indexed by partition (`starts`,
    `handovers`) or by bucket (`seqs`)."""

    generation: int
    from_window_ms: int  # T': the first window start recomputed
    from_ms: int  # the time the caller asked for
    starts: tuple[int, ...]  # per partition: the first offset the re-read reads
    handovers: tuple[int, ...]  # per partition: H[p], the first offset counted live only
    seqs: tuple[int, ...]  # per bucket: S[b], the last data set written before the rewind

    @property
    def hold(self) -> str:
        """The watermark hold's field in `mars:{T}:backfill:holds`."""
        return rewind_hold(self.generation)

    def source_id(self, partition: int) -> str:
        return rewind_source_id(self.generation, partition)

    def to_redis(self) -> str:
        return "|".join(
            [
                str(self.generation),
                str(self.from_window_ms),
                str(self.from_ms),
                ",".join(map(str, self.starts)),
                ",".join(map(str, self.handovers)),
                ",".join(map(str, self.seqs)),
            ]
        )

    @classmethod
    def from_redis(cls, text: str) -> TaskRewind:
        generation, from_window, from_ms, starts, handovers, seqs = text.split("|")

        def ints(csv: str) -> tuple[int, ...]:
            return tuple(int(x) for x in csv.split(",")) if csv else ()

        return cls(
            generation=int(generation),
            from_window_ms=int(from_window),
            from_ms=int(from_ms),
            starts=ints(starts),
            handovers=ints(handovers),
            seqs=ints(seqs),
        )

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> TaskRewind:
        return cls(
            generation=int(data["generation"]),
            from_window_ms=int(data["from_window_ms"]),
            from_ms=int(data["from_ms"]),
            starts=tuple(int(x) for x in data["starts"]),
            handovers=tuple(int(x) for x in data["handovers"]),
            seqs=tuple(int(x) for x in data["seqs"]),
        )

    def seq_of(self, bucket: int) -> int:
        """S[b]: a bucket that did not exist then has written nothing before the rewind."""
        return self.seqs[bucket] if bucket < len(self.seqs) else 0


def rewind_hold(generation: int) -> str:
    return f"{REWIND_HOLD_PREFIX}{generation}"


def rewind_source_id(generation: int, partition: int) -> str:
    """The SEQ protocol source id of the re-read of one partition."""
    return f"rewind:{generation}:{partition}"


def first_rewound_window(assigner: WindowAssigner, from_ms: int) -> int:
    """T': the start of the earliest window holding `from_ms`, so every window a record at
    `from_ms` counts in is recomputed whole."""
    return assigner.first_start(from_ms)


def lowered_closed_watermark(
    assigner: WindowAssigner, closed_watermark: int | None, from_window_ms: int
) -> int | None:
    """The closed watermark after a rewind from `from_window_ms`: below the close of the
    window starting there, so every window from it on is open again, and every earlier
    window closed stays closed (an earlier start closes earlier)."""
    if closed_watermark is None:
        return None
    return min(closed_watermark, assigner.closes_at(from_window_ms) - 1)


def revision_of(rewinds: tuple[tuple[int, int], ...], window_start_ms: int) -> int:
    """The revision of a window's rows: the latest applied rewind `(g, T')` with `T'` at or
    before its start, 0 when none."""
    revision = 0
    for generation, from_window in rewinds:
        if from_window <= window_start_ms:
            revision = max(revision, generation)
    return revision
