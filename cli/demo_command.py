"""`mars demo` (what `make run` runs): the whole pipeline on the local cluster, live.

Starts (or reuses) the local cluster with 2 mappers, 2 reducers and the REST API, registers the
reference query (docs/references.md) as task `paper` through the API, produces the reference
tuples with event time running 10x faster than the wall clock (so a 60 s window closes every
6 s), and prints each window as it closes, read from the result topic with read_committed.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import defaultdict
from typing import Any

import httpx
from confluent_kafka import Consumer

from devtools.gen import GeneratorConfig
from devtools.gen.produce import ensure_source_topic, produce
from devtools.local import LocalCluster
from devtools.local.roles import process_url, start_role
from mars.clients import client_config
from mars.config import Settings, load_settings

PAPER_TASK_ID = "paper"
PAPER_SQL = (
    "SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp WINDOWING 60 s"
)
SOURCE_TOPIC = "S"
SPEEDUP = 10  # event-time seconds per wall-clock second


def register(subparsers: Any) -> None:
    demo = subparsers.add_parser("demo", help="local cluster + paper's task + live results")
    demo.add_argument("--rate", type=float, default=5000, help="records per second")
    demo.add_argument("--duration", type=int, default=300, help="seconds of traffic")
    demo.add_argument("--mappers", type=int, default=2)
    demo.add_argument("--reducers", type=int, default=2)
    demo.set_defaults(handler=_demo)


def _demo(args: argparse.Namespace) -> int:
    cluster = LocalCluster(settings=load_settings())
    if cluster.status()["up"]:
        print(f"reusing the running local cluster in {cluster.run_dir}")
    else:
        print("starting the local cluster (Kafka, ZooKeeper, Redis) ...")
        cluster.up()
        for _ in range(args.mappers):
            start_role(cluster, "mapper")
        for _ in range(args.reducers):
            start_role(cluster, "reducer")
        start_role(cluster, "api")
    assert cluster.state is not None
    settings = load_settings(**cluster.state.settings_overrides())
    for row in cluster.status()["processes"]:
        print(f"  {row['name']:<10} pid {row['pid']:<7} {process_url(row['role'], row['address'])}")
    print(
        f"\nwatch it: the dashboard at http://{settings.api.host}:{settings.api.port}/ui, "
        "or `.venv/bin/mars top`"
    )

    ensure_source_topic(settings.kafka, SOURCE_TOPIC, 4)
    spec = _register_paper_task(settings)
    print(f"\nregistered task {PAPER_TASK_ID!r}: {PAPER_SQL}")
    print(f"results topic: {spec['output_topic']}\n")

    stop = threading.Event()
    traffic = threading.Thread(
        target=_traffic, args=(settings, args.rate, args.duration, stop), daemon=True
    )
    traffic.start()
    print(f"producing {args.rate:,.0f} tuples/s for {args.duration}s (event time x{SPEEDUP})")
    print(
        "records arrive up to 2 s out of order; with the task's GRACE 0 the ones behind an\n"
        "already closed window are counted as late (add `GRACE 5 s` to the query to keep them)\n"
    )
    try:
        printed = _print_windows(settings, spec, traffic=traffic, grace_s=60)
        _print_sum_check(settings, printed)
    except KeyboardInterrupt:
        print("\ninterrupted")
    finally:
        stop.set()
    print(
        "\nthe cluster is still running: `.venv/bin/mars local status`, "
        "`.venv/bin/mars local down` to stop it"
    )
    return 0


def _register_paper_task(settings: Settings) -> dict[str, Any]:
    base = f"http://{settings.api.host}:{settings.api.port}"
    headers = {"Authorization": f"Bearer {settings.api.token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        created = client.post("/tasks", json={"id": PAPER_TASK_ID, "sql": PAPER_SQL})
        if created.status_code not in (201, 409):
            raise SystemExit(f"registering the task failed: {created.status_code} {created.text}")
        task = client.get(f"/tasks/{PAPER_TASK_ID}").json()
    spec: dict[str, Any] = task["spec"]
    spec["output_topic"] = task["topics"]["output"]  # the API's answer, not rebuilt here
    return spec


def _traffic(settings: Settings, rate: float, duration: int, stop: threading.Event) -> None:
    config = GeneratorConfig(
        count=int(rate * duration),
        seed=int(time.time()),
        start_s=int(time.time()),
        span_s=duration * SPEEDUP,
        disorder_s=2,
    )
    chunk = max(1000, int(rate))

    def check_stop(done: int, total: int) -> None:
        if stop.is_set():
            raise InterruptedError

    try:
        produce(
            settings.kafka,
            SOURCE_TOPIC,
            config,
            rate=rate,
            chunk_size=chunk,
            on_progress=check_stop,
        )
    except InterruptedError:
        return


def _task_stats(settings: Settings) -> dict[str, Any]:
    base = f"http://{settings.api.host}:{settings.api.port}"
    stats: dict[str, Any] = httpx.get(f"{base}/tasks/{PAPER_TASK_ID}", timeout=10).json()["stats"]
    return stats


def _print_sum_check(settings: Settings, in_results: int) -> None:
    """[Mars]'s accuracy check: every produced record is in a result, late or bad."""
    stats = _task_stats(settings)
    counters = stats.get("counters", {})
    late = counters.get("late", 0) + counters.get("late_reducer", 0)
    bad = counters.get("bad", 0)
    produced = counters.get("records_in", 0)
    verdict = "OK" if in_results + late + bad == produced else "MISMATCH"
    print(
        f"\nsum check: {produced:,} records read = {in_results:,} in window results "
        f"+ {late:,} late + {bad:,} bad  -> {verdict}"
    )


def _print_windows(
    settings: Settings, spec: dict[str, Any], *, traffic: threading.Thread, grace_s: float
) -> int:
    """Print one summary line per window once its results stop arriving; return the total
    count printed. Ends once traffic is over and every accepted record is in a result."""
    count_alias = spec["aggregates"][0]["alias"]
    consumer = Consumer(
        client_config(
            settings.kafka,
            {
                "group.id": f"mars-demo-{time.time_ns()}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            },
        )
    )
    consumer.subscribe([spec["output_topic"]])
    windows: dict[int, list[dict[str, Any]]] = defaultdict(list)
    last_seen: dict[int, float] = {}
    print(f"{'window (UTC)':<24} {'groups':>8} {'count':>10}   top groups by count")
    printed = 0
    deadline: float | None = None
    try:
        while deadline is None or time.monotonic() < deadline:
            if deadline is None and not traffic.is_alive():
                deadline = time.monotonic() + grace_s
            finished = deadline is not None and not windows and printed > 0
            if finished and printed >= int(_task_stats(settings).get("accepted", 0)):
                break
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                row = json.loads(message.value() or b"{}")
                windows[row["window_start"]].append(row)
                last_seen[row["window_start"]] = time.monotonic()
            for start in sorted(w for w, t in last_seen.items() if time.monotonic() - t > 1.5):
                printed += _print_window(windows.pop(start), count_alias)
                del last_seen[start]
    finally:
        consumer.close()
    return printed


def _print_window(rows: list[dict[str, Any]], count_alias: str) -> int:
    rows.sort(key=lambda r: -(r.get(count_alias) or 0))
    total = sum(r.get(count_alias) or 0 for r in rows)
    top = ", ".join(f"{r.get('sip')}/{r.get('type')}={r.get(count_alias)}" for r in rows[:3])
    start = str(rows[0].get("window_start_iso", rows[0]["window_start"]))[:19].replace("T", " ")
    print(f"{start:<24} {len(rows):>8,} {total:>10,}   {top}")
    return int(total)
