"""Pull queries of a `watermark = 'key'` task: a group whose key clock, saved in the same
checkpoint, passed its window's close is closed (its final row comes from the results); the
others are current rows, and the clocks' pseudo window is never a row. Per key and per key
group (`key_groups`)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from api.pull_queries import DecodedCheckpoints, current_windows
from mars.aggregates import state_aggregates
from mars.engine.dataset import encode_dataset
from mars.engine.key_groups import KEY_CLOCKS_START, clock_id
from mars.sql import parse_task
from mars.store import SeqStore

SQL = "SELECT k, count(*) AS n FROM S GROUP BY k WINDOWING 1 m WITH (watermark = 'key'{more})"


class _Store:
    """The three reads a pull query makes: the units' figures, a checkpoint, the results."""

    def __init__(self, checkpoint: bytes, watermark: int) -> None:
        self.checkpoint = checkpoint
        figures = {"watermark": str(watermark), "view_ms": "1", "checkpoint": "1:x"}
        self.reducer_stats = _Figures({0: figures})
        self.results = _NoResults()

    def read_checkpoints(self, task: str, bucket: int, fields: list[str]) -> list[bytes]:
        return [self.checkpoint]


class _Figures:
    def __init__(self, units: dict[int, dict[str, str]]) -> None:
        self._units = units

    def units(self, task: str) -> dict[int, dict[str, str]]:
        return self._units


class _NoResults:
    def latest(self, task: str, count: int) -> list[dict[str, Any]]:
        return []


@pytest.mark.parametrize("key_groups", [None, 4])
def test_groups_closed_by_their_key_clock_are_not_current(key_groups: int | None) -> None:
    more = "" if key_groups is None else f", key_groups = {key_groups}"
    spec = parse_task(SQL.format(more=more), task_id="t")
    fast = ("fast",)
    fast_clock = clock_id(fast, key_groups)
    slow = next(
        (f"slow{i}",) for i in range(99) if clock_id((f"slow{i}",), key_groups) != fast_clock
    )
    slow_clock = clock_id(slow, key_groups)
    windows = {
        0: {fast: [3, 50_000], slow: [2, 20_000]},  # [count, the key's latest time]
        60_000: {fast: [1, 75_000]},
        KEY_CLOCKS_START: {fast_clock: [0, 75_000], slow_clock: [0, 30_000]},
    }
    data = encode_dataset(state_aggregates(spec), windows, canonical=False)
    store = cast(SeqStore, _Store(data, watermark=10_000))  # the key-lag shifted watermark
    answer = current_windows(store, DecodedCheckpoints(), spec, groups={}, window_start=None)
    rows = sorted((r["window_start"], r["k"], r["n"], r["final"]) for r in answer.rows)
    # fast's clock (75 s) passed the first window's close (60 s): closed, not current
    assert rows == [(0, slow[0], 2, False), (60_000, "fast", 1, False)]
