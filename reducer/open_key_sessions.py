"""Open sessions of a `watermark = 'key'` task: each key's sessions close on its own clock.

`OpenSessionState` with the key clocks of `reducer.open_key_windows`. A key clock is the
largest session end among the key's merged partials (a partial session's end is its key's
latest time in it). A session `[first, last]` of key `k` closes when `clock(k) > last + gap +
grace`, or when the task watermark less `key_lag` does (`closed_watermark` holds that shifted
watermark), or by idle close. A partial is late when it starts more than `grace` behind its
key's clock before the data set or behind the shifted watermark: a session it would join may be
closed. Mappers judge each record the same way against the partition's key clock, so with a
key's records in one partition no partial they send is late here.

Timers: `reducer.key_timers`, one per session start, due at the session's closing time when
pushed; a session that grew since is pushed again when met. Every step that closes a session by
its key clock carries a checkpoint (`checkpoint_now`), so a recovery's replay never meets one
(nor emits it twice); the checkpoint holds the key clocks as a pseudo session at
`KEY_CLOCKS_START` (only in the checkpoint). EMIT CHANGES as for `OpenSessionState`: a session
closed by its key clock gets its final row then.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate
from mars.engine.dataset import DataSet, GroupKey, OpenWindows
from mars.windows import SessionWindows
from reducer.key_timers import KeyTimers, restore_key_clocks, with_key_clocks
from reducer.open_sessions import OpenSessionState
from reducer.open_windows import ClosedWindow, LateContribution, check_next_dataset


@dataclass(slots=True, kw_only=True)
class OpenKeySessionState(OpenSessionState):
    lag_ms: int = 0
    timers: KeyTimers = field(default_factory=KeyTimers)
    _closed_by_key: bool = False

    @classmethod
    def starting_by_key(
        cls,
        *,
        sessions: SessionWindows,
        aggregates: tuple[Aggregate[Any], ...],
        rseqs: Mapping[int, int],
        lag_ms: int,
        key_groups: int | None = None,
        replayed_through: Mapping[int, int] | None = None,
        closed_watermark: int | None = None,
        checkpoint: OpenWindows | None = None,
        track_changes: bool = False,
    ) -> OpenKeySessionState:
        """As `OpenSessionState.starting`; the checkpoint's key clocks come back too."""
        state = cls(
            sessions=sessions,
            aggregates=aggregates,
            merged={b: r - 1 for b, r in rseqs.items()},
            replayed_through=dict(replayed_through or {}),
            closed_watermark=closed_watermark,
            _emitted_through=closed_watermark,
            lag_ms=lag_ms,
            timers=KeyTimers(groups=key_groups),
        )
        for start, groups in restore_key_clocks(checkpoint, state.timers).items():
            for key, states in groups.items():
                state._add(key, start, states)
                state.timers.raise_clock(key, states[-1])
        state.track_changes = track_changes  # the checkpoint's sessions are no change
        return state

    @property
    def key_clocks(self) -> dict[GroupKey, int]:
        return self.timers.clocks

    def merge(self, bucket: int, seq: int, dataset: DataSet) -> list[LateContribution]:
        """Merge data set `seq` of `bucket`: each partial judged against its key clock before
        the data set and the shifted watermark; then the clocks take the partials' ends."""
        check_next_dataset(self.merged, self.aggregates, bucket, seq, dataset)
        replayed = seq <= self.replayed_through.get(bucket, 0)
        late: list[LateContribution] = []
        latest: dict[GroupKey, int] = {}
        for start, groups in dataset.windows.items():
            for key, states in groups.items():
                time = states[-1]
                if time is not None and (key not in latest or time > latest[key]):
                    latest[key] = time
                if not replayed and self._is_late(start, key):
                    late.append(
                        LateContribution.of(self.aggregates, bucket, seq, start, key, states)
                    )
                else:
                    self._add(key, start, states)
        for key, time in latest.items():
            self.timers.raise_clock(key, time)
        self._first_seq.setdefault(bucket, seq)
        self._late_since_checkpoint = self._late_since_checkpoint or bool(late)
        self.merged[bucket] = seq
        return late

    def _is_late(self, first: int, key: GroupKey) -> bool:
        sessions = self.sessions
        return sessions.is_late(first, self.closed_watermark) or sessions.is_late(
            first, self.timers.clock(key)
        )

    def close(self, watermark: int | None) -> list[ClosedWindow]:
        """Close the sessions the watermark less `key_lag` closes (never back), then those
        their key clock closes; in first-time order. Nothing while replaying."""
        if self._replaying:
            return []
        shifted = None if watermark is None else watermark - self.lag_ms
        closed = OpenSessionState.close(self, shifted)  # first: drops what was emitted
        by_key: dict[int, dict[GroupKey, list[Any]]] = {}
        for key, start in self.timers.take_due(self._current_due):
            if key in self.windows.get(start, {}):  # else a second timer of one closed now
                by_key.setdefault(start, {})[key] = self._take(key, start)
        if by_key:
            self._closed_by_key = True
            closed += [ClosedWindow(start=s, groups=g) for s, g in by_key.items()]
        if self.closed_watermark is not None:
            self.timers.forget(self.closed_watermark, self._current_due)
        return _by_start(closed)

    def _current_due(self, key: GroupKey, start: int) -> int | None:
        states = self.windows.get(start, {}).get(key)
        return None if states is None else self.sessions.closes_at(states[-1])

    def _take(self, key: GroupKey, start: int) -> list[Any]:
        """Remove a closing session (as `_pop_closed` does)."""
        states = self._remove(key, start)
        self._changed.discard((start, key))  # its final row follows instead
        starts = self._starts[key]
        starts.remove(start)
        if not starts:
            del self._starts[key]
        return states

    def _add(self, key: GroupKey, first: int, states: list[Any]) -> None:
        """`OpenSessionState._add`, and a timer for a session that starts anew."""
        known = set(self._starts.get(key, ()))
        OpenSessionState._add(self, key, first, states)
        for start in self._starts[key]:
            if start not in known:
                self.timers.push(key, self.sessions.closes_at(self.windows[start][key][-1]), start)

    @property
    def checkpoint_now(self) -> bool:
        """Late partials, or a session closed by its key clock, since the last checkpoint."""
        return self._late_since_checkpoint or self._closed_by_key

    def checkpointed(self) -> None:
        OpenSessionState.checkpointed(self)
        self._closed_by_key = False

    def checkpoint_windows(self) -> OpenWindows:
        """The open sessions and the key clocks (`with_key_clocks`)."""
        return with_key_clocks(self.windows, self.timers, self.aggregates)


def _by_start(closed: list[ClosedWindow]) -> list[ClosedWindow]:
    """One `ClosedWindow` per first time, in order (a start may close both ways in a step)."""
    merged: dict[int, dict[GroupKey, list[Any]]] = {}
    for window in closed:
        merged.setdefault(window.start, {}).update(window.groups)
    return [ClosedWindow(start=start, groups=merged[start]) for start in sorted(merged)]
