"""The reducer's open-window state alone at a given number of groups per window, in one process.

`python -m benchmarks.group_scale_state --groups N --state python|columnar` prints one JSON
line. It encodes `datasets` data sets of one window the way mappers write them (key `(sip,)`,
states COUNT(*) and SUM, each data set a random `groups / datasets * 4` of the window's groups,
so every group is in about 4 data sets), then, timed: decodes and merges them into a fresh
unit state (what a reducer's read does), encodes its checkpoint, loads it back, merges one
more data set and encodes the delta checkpoint of the groups it changed, closes the window.
The columnar state merges each encoded data set as `UnitOwner._read` does (`merge_encoded`:
its frames decoded natively); `--decode python` decodes it into Python groups first (the path
before, and the one for data sets the native decoder declines). `merge_cpu_s` is the process's
CPU time over the merges (all threads): on a busy machine the steadier figure.
Its memory is the process's RSS after merging minus before (the data sets' bytes are already
resident, garbage collected first), over the groups held: the bytes per open group. A
process of its own per measurement, so no allocator reuse of an earlier one hides growth.
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
from contextlib import nullcontext
from typing import Any

from benchmarks.procstat import rss_mb
from mars.aggregates import CountAll, Sum
from mars.engine.checkpoint_chain import encode_delta
from mars.engine.columnar_checkpoint import decode_columnar
from mars.engine.dataset import decode_dataset, encode_dataset
from mars.windows import WindowAssigner
from reducer.columnar_windows import ColumnarWindowState
from reducer.gc_pause import gc_paused
from reducer.open_windows import OpenWindowState

WINDOW_MS = 300_000
AGGREGATES = (CountAll(), Sum())


def datasets(groups: int, count: int, *, seed: int = 7) -> list[bytes]:
    """`count` encoded data sets of window 0 (see the module's docstring)."""
    rng = random.Random(seed)
    per = max(1, min(groups, groups * 4 // count))
    keys = [(f"10.{i >> 16}.{(i >> 8) & 0xFF}.{i & 0xFF}",) for i in range(groups)]
    found = []
    for _ in range(count):
        chosen = rng.sample(range(groups), per)
        window = {keys[i]: [rng.randint(1, 20), rng.randint(40, 65_536)] for i in chosen}
        found.append(encode_dataset(AGGREGATES, {0: window}))
    return found


def merge(state: OpenWindowState, seq: int, data: bytes, *, native: bool) -> int:
    """Merge encoded data set `seq` of bucket 0 as a reducer does; its groups."""
    if native and isinstance(state, ColumnarWindowState):
        merged = state.merge_encoded(0, seq, data)
        assert merged is not None, "the native decoder declined the data set"
        return merged[1]
    dataset = decode_dataset(data)
    state.merge(0, seq, dataset)
    return sum(len(groups) for groups in dataset.windows.values())


def measure(groups: int, count: int, *, columnar: bool, native: bool = True) -> dict[str, Any]:
    data = datasets(groups, count + 1)  # the last one for the delta checkpoint
    warm_up()
    gc.collect()
    before = rss_mb_now()
    assigner = WindowAssigner(size_ms=WINDOW_MS, slide_ms=WINDOW_MS, grace_ms=0)
    state = (
        ColumnarWindowState.starting_columnar(
            assigner=assigner, aggregates=AGGREGATES, rseqs={0: 1}, incremental=True
        )
        if columnar
        else OpenWindowState.starting(
            assigner=assigner, aggregates=AGGREGATES, rseqs={0: 1}, incremental=True
        )
    )
    started, started_cpu = time.perf_counter(), time.process_time()
    merged = 0
    with gc_paused() if columnar else nullcontext():  # as `UnitOwner._read` does
        for seq, encoded in enumerate(data[:count], start=1):
            merged += merge(state, seq, encoded, native=native)
    merge_s = time.perf_counter() - started
    merge_cpu_s = time.process_time() - started_cpu
    gc.collect()
    held = state_groups(state)
    grown_mb = rss_mb_now() - before
    started = time.perf_counter()
    if isinstance(state, ColumnarWindowState):
        checkpoint = state.checkpoint_data()
    else:  # what `UnitOwner._write_checkpoint` writes for the Python state
        checkpoint = encode_dataset(AGGREGATES, state.windows, canonical=False)
    checkpoint_s = time.perf_counter() - started
    started = time.perf_counter()
    if isinstance(state, ColumnarWindowState):
        decode_columnar(checkpoint)
    else:
        decode_dataset(checkpoint)
    load_s = time.perf_counter() - started
    state.checkpointed()  # then what a delta checkpoint writes after one more data set
    merge(state, count + 1, data[count], native=native)
    if isinstance(state, ColumnarWindowState):  # the merge's compaction, not the checkpoint's
        for window in state.columns.values():
            window.frame()
    started = time.perf_counter()
    delta = state.delta_data()
    assert delta is not None
    delta_bytes, delta_groups = len(encode_delta(delta[0])), delta[1]
    delta_s = time.perf_counter() - started
    started = time.perf_counter()
    closed = state.close(WINDOW_MS)
    rows = sum(window.size for window in closed)
    close_s = time.perf_counter() - started
    return {
        "state": "columnar" if columnar else "python",
        "decode": "native" if native and columnar else "python",
        "groups": held,
        "datasets": count,
        "groups_merged": merged,
        "merge_s": merge_s,
        "merge_cpu_s": merge_cpu_s,
        "groups_merged_per_s": merged / merge_s,
        "bytes_per_group": grown_mb * 1024**2 / max(held, 1),
        "checkpoint_bytes": len(checkpoint),
        "checkpoint_s": checkpoint_s,
        "checkpoint_load_s": load_s,
        "delta_groups": delta_groups,
        "delta_bytes": delta_bytes,
        "delta_s": delta_s,
        "close_s": close_s,
        "rows_closed": rows,
    }


def warm_up() -> None:
    """What the first use of Polars allocates once per process (thread pool, caches), before
    the baseline: not the state's."""
    import polars as pl

    frame = pl.DataFrame({"k": ["a", "b", "a"], "v": [1, 2, 3]})
    frame.group_by("k").agg(pl.col("v").sum())


def state_groups(state: OpenWindowState) -> int:
    if isinstance(state, ColumnarWindowState):
        return state.columnar_groups()
    return sum(len(groups) for groups in state.windows.values())


def rss_mb_now() -> float:
    import os

    return rss_mb(os.getpid()) or 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--groups", type=int, required=True)
    parser.add_argument("--datasets", type=int, default=64)
    parser.add_argument("--state", choices=("python", "columnar"), default="python")
    parser.add_argument("--decode", choices=("native", "python"), default="native")
    args = parser.parse_args()
    found = measure(
        args.groups,
        args.datasets,
        columnar=args.state == "columnar",
        native=args.decode == "native",
    )
    print(json.dumps(found))


if __name__ == "__main__":
    main()
