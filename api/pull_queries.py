"""Pull queries: the current aggregates of a task's open windows, read from the state the
reducers already keep (`GET /tasks/{id}/windows`, `mars results <id> --current`).

Each reducer unit checkpoints its open windows into Redis every `reducer.checkpoint_interval_ms`
while data arrives, and publishes which checkpoint its committed progress names and `view_ms`:
the open windows as merged at that time are in the checkpoint (the time of publication when
nothing was merged since). A pull query decodes those checkpoints, keeps the groups and windows
asked for, and finalizes them exactly as a closing window would be (HAVING, outputs, top-k):
the values are the windows' state as of `as_of_ms` (the oldest unit's `view_ms`), which is at
most about one checkpoint interval plus one merge behind the data sets written to Redis; the
answer also gives the watermark and the data sets no reducer has merged yet. Windows closed
since a checkpoint was written are left out: their final rows come from the latest results the
reducers keep (`reducer.results_kept`), marked `"final": true`. With `watermark = 'key'` a group
also counts as closed once its key clock, saved in the same checkpoint, passed its close (the
step that closes a group by its key clock always writes a checkpoint, so a later checkpoint
never holds it).

A checkpoint never changes once written (a newer one gets a new field), so the API keeps the
last decoded checkpoint of each unit (`DecodedCheckpoints`) and decodes a unit again only when
its owner has committed a newer one: a query for one group then costs its filtering, not the
decoding of every open group.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mars.aggregates import Aggregate, state_aggregates
from mars.engine.checkpoint_chain import chain_dataset
from mars.engine.dataset import DataSet, GroupKey, OpenWindows
from mars.engine.dataset_revisions import fitted
from mars.engine.finalize import result_spec, window_rows
from mars.engine.key_groups import KEY_CLOCKS_START, clock_id
from mars.store import SeqStore
from mars.store.reducer_stats import chain_fields, figure_int
from mars.tasks.spec import TaskSpec, WatermarkMode
from mars.windows import window_closes_at

CHECKPOINT_READ_ATTEMPTS = 3  # a checkpoint may be dropped between reading its name and it


_KeyClocks = dict[GroupKey, int]


class PullQueryError(ValueError):
    """A filter names no group column of the task (the message says which are), or the task's
    windows are cumulative (not supported: each step's window is final when it closes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentWindows:
    rows: list[dict[str, Any]]  # open windows' current rows ("final": false), then final ones
    watermark: int | None
    as_of_ms: int | None  # None: some unit has published no checkpoint yet
    units_read: int


@dataclass
class DecodedCheckpoints:
    """The last decoded checkpoint of each unit, by the field that names it: one checkpoint
    per unit is held (about the memory its owner holds), replaced when the owner commits a
    newer one. Callers must not change the windows it returns."""

    _by_unit: dict[tuple[str, int], tuple[str, DataSet]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(
        self,
        store: SeqStore,
        task: str,
        bucket: int,
        name: str,
        aggregates: tuple[Aggregate[Any], ...] = (),
    ) -> OpenWindows | None:
        """The windows of the unit's checkpoint `name` (its fields, comma-separated: a full
        checkpoint, then deltas); None if a part is gone from Redis. With `aggregates`, states
        of a checkpoint written before a replacement added some are padded to them
        (mars.engine.dataset_revisions)."""
        with self._lock:
            cached = self._by_unit.get((task, bucket))
        if cached is not None and cached[0] == name:
            return fitted(cached[1], aggregates).windows
        parts = store.read_checkpoints(task, bucket, chain_fields(name))
        if any(data is None for data in parts):
            return None
        dataset = chain_dataset([data for data in parts if data is not None])
        with self._lock:
            self._by_unit[(task, bucket)] = (name, dataset)
        return fitted(dataset, aggregates).windows

    def forget(self, task: str) -> None:
        with self._lock:
            for unit in [unit for unit in self._by_unit if unit[0] == task]:
                del self._by_unit[unit]


def current_windows(
    store: SeqStore,
    checkpoints: DecodedCheckpoints,
    spec: TaskSpec,
    *,
    groups: Mapping[str, str],
    window_start: int | None,
) -> CurrentWindows:
    """The current rows of the task's open windows (and the final rows still kept) whose group
    columns equal `groups` (as text) and whose window starts at `window_start` (if given)."""
    if spec.window.cumulate:
        raise PullQueryError(
            "pull queries do not apply to cumulative windows (WINDOWING CUMULATE): each step "
            "emits the window so far to the results topic; read the latest results instead"
        )
    positions = {key.name: i for i, key in enumerate(spec.group_keys)}
    unknown = sorted(set(groups) - set(positions))
    if unknown:
        raise PullQueryError(
            f"group.{unknown[0]}: not a group column of the task "
            f"(group columns: {', '.join(positions) or 'none'})"
        )
    wanted = {positions[name]: value for name, value in groups.items()}
    output_spec = result_spec(spec)
    units = store.reducer_stats.units(spec.id)
    marks = [figure_int(figures, "watermark") for figures in units.values()]
    watermark = None if not marks or None in marks else min(m for m in marks if m is not None)
    rows: list[dict[str, Any]] = []
    views: list[int | None] = []
    for bucket, figures in units.items():
        windows, unit_watermark, view_ms = _unit_windows(store, checkpoints, spec, bucket, figures)
        views.append(view_ms)
        clocks = _key_clocks(spec, windows)
        for start, window_groups in sorted(windows.items()):
            if start == KEY_CLOCKS_START or window_start not in (None, start):
                continue
            kept = {
                key: states
                for key, states in window_groups.items()
                if _matches(key, wanted)
                and not _closed(spec, start, states, unit_watermark, clocks.get(key))
            }
            rows.extend({**row, "final": False} for row in window_rows(output_spec, start, kept))
    for row in store.results.latest(spec.id, 1_000):
        key = tuple(row.get(g.name) for g in spec.group_keys)
        if _matches(key, wanted) and window_start in (None, row.get("window_start")):
            rows.append({**row, "final": True})
    known = [view for view in views if view is not None]
    return CurrentWindows(
        rows=rows,
        watermark=watermark,
        as_of_ms=min(known) if known and len(known) == len(views) else None,
        units_read=len(views),
    )


def _unit_windows(
    store: SeqStore,
    checkpoints: DecodedCheckpoints,
    spec: TaskSpec,
    bucket: int,
    figures: Mapping[str, str],
) -> tuple[OpenWindows, int | None, int | None]:
    """The unit's checkpointed windows, its closed watermark and its `view_ms`, from the
    `figures` it published (read again only when their checkpoint was replaced meanwhile)."""
    for attempt in range(CHECKPOINT_READ_ATTEMPTS):
        if attempt:
            figures = store.reducer_stats.units(spec.id).get(bucket, {})
        watermark, view_ms = figure_int(figures, "watermark"), figure_int(figures, "view_ms")
        name = figures.get("checkpoint")
        if not name:  # nothing checkpointed: no open window holds data (as of view_ms)
            return {}, watermark, view_ms
        windows = checkpoints.read(store, spec.id, bucket, name, state_aggregates(spec))
        if windows is not None:
            return windows, watermark, view_ms
    return {}, None, None  # the owner kept replacing it: the unit counts as unknown


def _key_clocks(spec: TaskSpec, windows: OpenWindows) -> _KeyClocks:
    """`watermark = 'key'`: each group key's clock as the checkpoint saved it (by clock id at
    `KEY_CLOCKS_START`, the clock the last state), so that groups its key closed since count
    as closed; empty for the other tasks."""
    saved = windows.get(KEY_CLOCKS_START)
    if spec.options.watermark is not WatermarkMode.KEY or not saved:
        return {}
    groups = spec.options.key_groups
    keys = {key for start, window in windows.items() if start != KEY_CLOCKS_START for key in window}
    found = {key: saved.get(clock_id(key, groups)) for key in keys}
    return {key: int(states[-1]) for key, states in found.items() if states is not None}


def _closed(
    spec: TaskSpec, start: int, states: list[Any], watermark: int | None, key_clock: int | None
) -> bool:
    """Closed by the unit since its checkpoint, on its (key-lag shifted) watermark or on the
    group's key clock: the final row follows from the results."""
    closes_at = window_closes_at(spec.window, start, states)
    return any(mark is not None and mark >= closes_at for mark in (watermark, key_clock))


def _matches(key: tuple[Any, ...], wanted: Mapping[int, str]) -> bool:
    return all(_text(key[i]) == value for i, value in wanted.items())


def _text(value: Any) -> str:
    """A group value as a query string would spell it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
