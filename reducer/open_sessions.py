"""The open sessions of one owned unit of a session-window task (`WINDOWING SESSION <gap>`).

The session counterpart of `OpenWindowState`, with the same interface for `UnitOwner`. Pure
state, no I/O. Mappers send partial sessions: per group, `[first, last]` with the partial
states, keyed in the data set by `first` and carrying `last` as the extra MAX state last in
`state_aggregates` order. Merging a partial joins every open session of its group that is at
most a gap away (a partial may bridge two); sessions of a group stay more than a gap apart. A
session closes when the watermark passes `last + gap + grace`.

Why this is exact (docs/reducer.md): a partial whose `first + grace` is above the closed
watermark cannot touch a closed session, and mappers only send such partials unless a
partition was idle; any other partial is a `LateContribution`, like a contribution to a closed
tumbling window. Two things differ from tumbling windows, because a session's end moves as it
merges:

- On recovery, the checkpoint's sessions are kept whole and the replayed data sets (those
  merged before the last commit) are merged whatever the watermark; closing waits until the
  replay is through, then drops silently every session closing at or before the recovered
  watermark: exactly the sessions emitted before the restart, since every other replayed
  partial joined only open sessions.
- So a replay must never meet a partial that was late: a step with late contributions writes a
  checkpoint (`checkpoint_now`), which moves rseq past its data sets.
- rseq(b) is the first data set of `b` merged since the last checkpoint (not per session).

With `track_changes` (EMIT CHANGES) it also remembers the sessions merges changed, and the
sessions merged into another one (`take_gone`): their keys get a tombstone on the updates
topic, so a consumer of the compacted topic keeps only sessions that exist.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import insort
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import DataSet, GroupKey, OpenWindows
from mars.windows import SessionWindows
from reducer.open_windows import (
    ClosedWindow,
    LateContribution,
    WindowGroups,
    check_next_dataset,
)


@dataclass(slots=True, kw_only=True)
class OpenSessionState:
    """Merged sessions of the covered buckets: `windows` maps a session's first time to its
    groups' states (the last state is the session's last time), as checkpoints store them."""

    sessions: SessionWindows
    aggregates: tuple[Aggregate[Any], ...]  # `state_aggregates`: the session end last
    merged: dict[int, int]
    replayed_through: dict[int, int] = field(default_factory=dict)
    closed_watermark: int | None = None
    windows: OpenWindows = field(default_factory=dict)
    _starts: dict[GroupKey, list[int]] = field(default_factory=dict)  # per group, ascending
    # A heap of (closing time when pushed, tie-breaker, first, key): one entry per session
    # start, pushed again with the later time when popped before its session is due.
    _closing: list[tuple[int, int, int, GroupKey]] = field(default_factory=list)
    _pushed: Iterator[int] = field(default_factory=itertools.count)  # heap tie-breaker
    _emitted_through: int | None = None  # sessions closing by then were emitted before
    _first_seq: dict[int, int] = field(default_factory=dict)
    _closed_since_checkpoint: bool = False
    _late_since_checkpoint: bool = False
    track_changes: bool = False  # EMIT CHANGES: remember changed and merged-away sessions
    _changed: set[tuple[int, GroupKey]] = field(default_factory=set)
    _gone: set[tuple[int, GroupKey]] = field(default_factory=set)

    @classmethod
    def starting(
        cls,
        *,
        sessions: SessionWindows,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
        track_changes: bool = False,
    ) -> OpenSessionState:
        """State about to replay each bucket `b` from data set `rseqs[b]` on top of the
        committed `checkpoint`, all of it kept until the replay is through."""
        state = cls(
            sessions=sessions,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            _emitted_through=closed_watermark,
        )
        for start, groups in (checkpoint or {}).items():
            for key, states in groups.items():
                state._add(key, start, states)
        state.track_changes = track_changes  # the checkpoint's sessions are no change
        return state

    @property
    def buckets(self) -> Iterable[int]:
        return self.merged.keys()

    def merge(self, bucket: int, seq: int, dataset: DataSet) -> list[LateContribution]:
        """Merge data set `seq` of `bucket`; return its partials that may touch closed
        sessions (none while replaying what the last commit had merged)."""
        check_next_dataset(self.merged, self.aggregates, bucket, seq, dataset)
        replayed = seq <= self.replayed_through.get(bucket, 0)
        late: list[LateContribution] = []
        for start, groups in dataset.windows.items():
            is_late = not replayed and self.sessions.is_late(start, self.closed_watermark)
            for key, states in groups.items():
                if is_late:
                    late.append(
                        LateContribution.of(self.aggregates, bucket, seq, start, key, states)
                    )
                else:
                    self._add(key, start, states)
        self._first_seq.setdefault(bucket, seq)
        self._late_since_checkpoint = self._late_since_checkpoint or bool(late)
        self.merged[bucket] = seq
        return late

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Advance `closed_watermark` to `watermark` (never back) and pop the sessions it
        closes, grouped by first time; nothing while replaying."""
        if self._replaying:
            return []
        if self._emitted_through is not None:
            self._pop_closed(self._emitted_through)  # emitted before the restart
            self._closed_since_checkpoint = True
            self._emitted_through = None
        if watermark is not None and (
            self.closed_watermark is None or watermark > self.closed_watermark
        ):
            self.closed_watermark = watermark
        if self.closed_watermark is None:
            return []
        closed = self._pop_closed(self.closed_watermark)
        self._closed_since_checkpoint = self._closed_since_checkpoint or bool(closed)
        return [ClosedWindow(start=start, groups=closed[start]) for start in sorted(closed)]

    def closes_at(self, window: WindowGroups) -> int:
        """When the last of `window`'s sessions closed."""
        return max(self.sessions.closes_at(states[-1]) for states in window.groups.values())

    @property
    def has_changes(self) -> bool:
        return bool(self._changed or self._gone)

    def take_changes(self) -> list[WindowGroups]:
        """The current states of the open sessions merges changed since the last call, by
        first time; then forgets them (`track_changes` only)."""
        by_start: dict[int, dict[GroupKey, list[Any]]] = {}
        for start, key in sorted(self._changed, key=lambda change: change[0]):
            by_start.setdefault(start, {})[key] = self.windows[start][key]
        self._changed.clear()
        return [WindowGroups(start=start, groups=groups) for start, groups in by_start.items()]

    def take_gone(self) -> list[tuple[int, GroupKey]]:
        """(first time, key) of the sessions merged into another one since the last call."""
        gone = sorted(self._gone, key=lambda entry: entry[0])
        self._gone.clear()
        return gone

    @property
    def needs_checkpoint(self) -> bool:
        return self._closed_since_checkpoint or bool(self._first_seq)

    @property
    def checkpoint_now(self) -> bool:
        """A checkpoint must go with this step's commit: it has late contributions, whose
        data sets a replay must never merge."""
        return self._late_since_checkpoint

    def checkpointed(self) -> None:
        self._first_seq.clear()
        self._closed_since_checkpoint = False
        self._late_since_checkpoint = False

    def rseq(self, bucket: int) -> int:
        return self._first_seq.get(bucket, self.merged[bucket] + 1)

    def rseqs(self) -> dict[int, int]:
        return {bucket: self.rseq(bucket) for bucket in self.merged}

    @property
    def _replaying(self) -> bool:
        return any(self.merged[b] < through for b, through in self.replayed_through.items())

    def _add(self, key: GroupKey, first: int, states: list[Any]) -> None:
        """Merge the partial session `[first, states[-1]]` of `key` with every open session of
        `key` it touches."""
        sessions, last = self.sessions, states[-1]
        merged_first, merged_states = first, list(states)
        kept: list[int] = []
        known = self._starts.get(key, [])
        for start in known:
            other = self.windows[start][key]
            if not sessions.touch(first, last, start, other[-1]):
                kept.append(start)
                continue
            merged_first = min(merged_first, start)
            merged_states = [
                agg.merge(a, b)
                for agg, a, b in zip(self.aggregates, merged_states, other, strict=True)
            ]
            self._remove(key, start)
        insort(kept, merged_first)
        self._starts[key] = kept
        self.windows.setdefault(merged_first, {})[key] = merged_states
        if self.track_changes:
            for start in known:
                if start not in kept:  # merged into the session at merged_first
                    self._changed.discard((start, key))
                    self._gone.add((start, key))
            self._gone.discard((merged_first, key))
            self._changed.add((merged_first, key))
        if merged_first not in known:  # a session that only grew keeps its entry
            self._push(merged_first, key, sessions.closes_at(merged_states[-1]))

    def _push(self, start: int, key: GroupKey, closes_at: int) -> None:
        heapq.heappush(self._closing, (closes_at, next(self._pushed), start, key))

    def _remove(self, key: GroupKey, start: int) -> list[Any]:
        groups = self.windows[start]
        states = groups.pop(key)
        if not groups:
            del self.windows[start]
        return states

    def _pop_closed(self, watermark: int) -> dict[int, dict[GroupKey, list[Any]]]:
        """Remove the sessions closing at or before `watermark`. An entry of a session merged
        into another since is skipped; one of a session that grew is pushed again."""
        closed: dict[int, dict[GroupKey, list[Any]]] = {}
        while self._closing and self._closing[0][0] <= watermark:
            _, _, start, key = heapq.heappop(self._closing)
            states = self.windows.get(start, {}).get(key)
            if states is None:
                continue
            closes_at = self.sessions.closes_at(states[-1])
            if closes_at > watermark:
                self._push(start, key, closes_at)
                continue
            closed.setdefault(start, {})[key] = self._remove(key, start)
            self._changed.discard((start, key))  # its final row follows instead
            starts = self._starts[key]
            starts.remove(start)
            if not starts:
                del self._starts[key]
        return closed
