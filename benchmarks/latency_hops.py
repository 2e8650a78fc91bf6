"""Where a window's result latency goes: one live run, each window's hops timed.

    .venv/bin/python -m benchmarks.latency_hops [--rate 28000] [--duration 40] [--runs 2]

Same set-up as experiment 4 (`benchmarks.exp_latency`: paced live traffic from a separate
process, 5 s tumbling windows, 2 mappers + 1 reducer, default settings) on its own local
cluster in `.mars/hops`. Per window, in seconds after the watermark passed its end (passage,
from the source data as in experiment 4):

- `redis`: the task's watermark, as computed from Redis, first at or past the end (a thread
  polls the bucket-0 snapshot every 5 ms): the mappers' part;
- `first` / `last` commit: the Kafka timestamps of the first and the last bucket owner's
  progress record that closed the window (each is produced inside its owner's transaction,
  just before the commit): the reducer's part, and the spread between its owners;
- `readable`: the last result row reaching a live read_committed consumer (experiment 4's
  figure).

Prints a line per window and the medians. The poller shares this process with the reader, so
the reader's arrival times carry a little of its cost.
"""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.exp_latency import live_task
from benchmarks.harness import BenchCluster
from mars.clients import client_config
from mars.config import KafkaSettings
from mars.store import SeqStore, watermark_of
from mars.tasks.topics import PROGRESS_TOPIC

IDLE_TIMEOUT_MS = 60_000


class WatermarkWatcher:
    """When the task's watermark (computed from Redis, as the reducer does) moved forward."""

    def __init__(self, store: SeqStore, task_id: str) -> None:
        self.moves: list[tuple[float, int]] = []  # (wall time s, new watermark ms)
        self._store, self._task_id = store, task_id
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> WatermarkWatcher:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def first_at(self, end_ms: int) -> float:
        """The first wall time the watermark was at or past `end_ms` (NaN: never seen)."""
        return next((t for t, mark in self.moves if mark >= end_ms), float("nan"))

    def _poll(self) -> None:
        while not self._stop.wait(0.005):
            snapshot = self._store.snapshot(self._task_id, 0)
            now_ms = time.time_ns() // 1_000_000
            mark = watermark_of(snapshot, idle_timeout_ms=IDLE_TIMEOUT_MS, now_ms=now_ms)
            if mark is not None and (not self.moves or mark > self.moves[-1][1]):
                self.moves.append((time.time(), mark))


def commit_times(kafka: KafkaSettings, task_id: str, window_ms: int) -> dict[int, list[float]]:
    """Window end -> Kafka timestamps (s) of the progress records that closed it, one per
    bucket owner: the first record of each owner whose closed watermark reached the end."""
    consumer = Consumer(
        client_config(
            kafka,
            {
                "group.id": f"bench-hops-{uuid.uuid4().hex[:8]}",
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
                "enable.auto.commit": False,
            },
        )
    )
    partitions = consumer.list_topics(PROGRESS_TOPIC, timeout=30).topics[PROGRESS_TOPIC].partitions
    consumer.assign([TopicPartition(PROGRESS_TOPIC, p, OFFSET_BEGINNING) for p in partitions])
    first_close: dict[tuple[str, int], float] = {}
    at_end = 0
    while at_end < len(partitions):
        message = consumer.poll(5.0)
        if message is None:
            break
        if message.error() is not None:
            at_end += 1
            continue
        key = (message.key() or b"").decode()
        if not key.startswith(f"{task_id}/"):
            continue
        closed = json.loads(message.value() or b"{}").get("closed_watermark")
        if closed is not None:
            end = closed // window_ms * window_ms
            first_close.setdefault((key, end), message.timestamp()[1] / 1000)
    consumer.close()
    by_end: dict[int, list[float]] = {}
    for (_key, end), seen in first_close.items():
        by_end.setdefault(end, []).append(seen)
    return by_end


def hops_run(
    bench: BenchCluster, *, rate: float, duration_s: int, window_s: int
) -> list[dict[str, Any]]:
    window_ms = window_s * 1000
    with (
        live_task(bench, window_s=window_s, mappers=2, reducers=1, prefix="hops") as live,
        WatermarkWatcher(SeqStore(bench.redis), live.task_id) as watcher,
    ):
        start_s = live.send(rate=rate, duration_s=duration_s)
        time.sleep(window_s + 5)
    passage = live.passages(start_s=start_s, duration_s=duration_s)
    commits = commit_times(bench.kafka, live.task_id, window_ms)
    rows = []
    for window_start, seen in sorted(live.reader.snapshot().items()):
        end = window_start + window_ms
        if end not in passage or end < (start_s + 10) * 1000 or not commits.get(end):
            continue
        passed = passage[end] / 1000
        rows.append(
            {
                "end": end,
                "redis": watcher.first_at(end) - passed,
                "first": min(commits[end]) - passed,
                "last": max(commits[end]) - passed,
                "readable": seen.last_arrival_s - passed,
                "owners": len(commits[end]),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=28_000)
    parser.add_argument("--duration", type=int, default=40)
    parser.add_argument("--window", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args(argv)
    bench = BenchCluster(run_dir=Path(".mars/hops"))
    rows: list[dict[str, Any]] = []
    try:
        for _ in range(args.runs):
            rows += hops_run(bench, rate=args.rate, duration_s=args.duration, window_s=args.window)
    finally:
        bench.close()
    names = ("redis", "first", "last", "readable")
    print(f"{args.rate:,.0f} records/s, {len(rows)} windows; seconds after the watermark passed")
    print("window end     " + "".join(f"{name:>10}" for name in names) + "    owners")
    for row in rows:
        hops = "".join(f"{row[name]:10.3f}" for name in names)
        print(f"{row['end']}{hops}{row['owners']:>10}")
    if rows:
        medians = "".join(f"{statistics.median(row[name] for row in rows):10.3f}" for name in names)
        print(f"median       {medians}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
