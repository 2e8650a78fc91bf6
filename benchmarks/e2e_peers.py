"""The peers of the end-to-end experiment: the reference query in the engines people would pick
instead of Mars, each a child process reading the same preloaded topic as the Mars runs.

- PySpark Structured Streaming (`benchmarks/spark_streaming.py`, the project's `.venv`);
- Quix Streams (`benchmarks/quix_streams.py`, the peers' virtualenv, `benchmarks/peers.py`);
- Flink SQL (`benchmarks/flink_sql.py`, PyFlink in the peers' virtualenv with the Kafka SQL
  connector jar `scripts/setup_peers.sh` fetches).

Spark and Flink read CSV or JSON records (the topic's `Dataset.input_format`); Quix Streams
reads CSV only.

Each run: a fresh result topic read live with read_committed (`ResultReader`), the child
launched, its start-up markers read (start-up: launch until the peer starts its query), then
the clock runs until the counts of every window before the sentinels' sum to the records
produced. CPU seconds: the child's process tree over that time.
"""

from __future__ import annotations

import json
import math
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.peers import PeerUnavailable, flink_kafka_jar, peer_python
from benchmarks.procstat import tree_cpu_seconds, tree_peak_rss_mb
from benchmarks.results_reader import ResultReader
from benchmarks.subprocesses import read_markers, spawn_module, stop_group
from benchmarks.workload import PAPER_WINDOW_S, SENTINEL_TYPE, Dataset
from devtools.gen import FIELD_NAMES, Encoding

WINDOW_MS = PAPER_WINDOW_S * 1000
TEXT_ENCODINGS = (Encoding.CSV, Encoding.JSON)  # what the Spark and Flink peers read


def _text_format(data: Dataset, peer: str, readable: tuple[Encoding, ...]) -> str:
    """The `--format` of a peer over `data`; PeerUnavailable when it cannot read the topic."""
    encoding = data.input_format.encoding
    if encoding not in readable:
        raise PeerUnavailable(f"the {peer} peer reads {'/'.join(readable)} records, not {encoding}")
    return encoding.value


def spark_run(
    bench: BenchCluster, data: Dataset, *, timeout_s: float, log_dir: Path
) -> dict[str, Any]:
    output = fresh_id("spark-out-")
    text_format = _text_format(data, "Spark", TEXT_ENCODINGS)

    def launch() -> list[subprocess.Popen[str]]:
        return [
            spawn_module(
                "benchmarks.spark_streaming",
                [
                    "--bootstrap", bench.bootstrap,
                    "--topic", data.topic,
                    "--output", output,
                    "--checkpoint", str(log_dir / f"checkpoint-{output}"),
                    "--format", text_format,
                ],
                log=log_dir / "spark.log",
            )
        ]  # fmt: skip

    found = _timed(
        bench, data, output=output, launch=launch, log=log_dir / "spark.log", timeout_s=timeout_s
    )
    session = found.pop("markers")[0].get("SESSION")
    launched = found.pop("launched")
    return {**found, "session_start_s": float(session) - launched if session else math.nan}


def quix_run(
    bench: BenchCluster,
    data: Dataset,
    *,
    processes: int,
    timeout_s: float,
    log_dir: Path,
) -> dict[str, Any]:
    """`processes` Quix Streams applications in one consumer group (as one would scale it),
    each with its own state directory. Grace: the data's event-time span, so that no record
    is late however far apart the consumers read their partitions; the sentinels (a day
    later) close every window (`benchmarks/quix_streams.py` says why Quix needs this)."""
    _text_format(data, "Quix Streams", (Encoding.CSV,))
    python = peer_python()
    output = fresh_id("quix-out-")
    group = fresh_id("quix-")
    columns = ",".join(str(FIELD_NAMES.index(name)) for name in ("timestamp", "sip", "type"))

    def launch() -> list[subprocess.Popen[str]]:
        return [
            spawn_module(
                "benchmarks.quix_streams",
                [
                    "--bootstrap", bench.bootstrap,
                    "--topic", data.topic,
                    "--output", output,
                    "--group", group,
                    "--state-dir", str(log_dir / f"quix-state-{group}-{index}"),
                    "--partitions", str(data.partitions),
                    "--columns", columns,
                    "--window-s", str(PAPER_WINDOW_S),
                    "--grace-s", str(data.span_s),
                    "--sentinel-type", SENTINEL_TYPE,
                ],
                log=log_dir / "quix.log",
                python=python,
            )
            for index in range(processes)
        ]  # fmt: skip

    found = _timed(
        bench, data, output=output, launch=launch, log=log_dir / "quix.log", timeout_s=timeout_s
    )
    found.pop("launched")
    markers = found.pop("markers")
    return {**found, "processes": processes, "settings": json.loads(markers[0]["SETTINGS"])}


def flink_run(
    bench: BenchCluster,
    data: Dataset,
    *,
    parallelism: int,
    timeout_s: float,
    log_dir: Path,
) -> dict[str, Any]:
    """One Flink SQL job (exactly-once Kafka sink) in PyFlink's local MiniCluster, its
    operators `parallelism` wide; start-up until `execute_sql(INSERT)` (`SESSION`: the
    TableEnvironment and its JVM up)."""
    python = peer_python()
    jar = flink_kafka_jar()
    output = fresh_id("flink-out-")
    args = flink_args(
        bootstrap=bench.bootstrap,
        topic=data.topic,
        output=output,
        run_id=output.removeprefix("flink-out-"),
        parallelism=parallelism,
        jar=jar,
        log_dir=log_dir,
        text_format=_text_format(data, "Flink SQL", TEXT_ENCODINGS),
    )
    log = log_dir / "flink.log"

    def launch() -> list[subprocess.Popen[str]]:
        return [spawn_module("benchmarks.flink_sql", args, log=log, python=python)]

    found = _timed(bench, data, output=output, launch=launch, log=log, timeout_s=timeout_s)
    markers = found.pop("markers")[0]
    launched = found.pop("launched")
    session = markers.get("SESSION")
    return {
        **found,
        "session_start_s": float(session) - launched if session else math.nan,
        "settings": json.loads(markers["SETTINGS"]),
    }


def flink_args(
    *,
    bootstrap: str,
    topic: str,
    output: str,
    run_id: str,
    parallelism: int,
    jar: Path,
    log_dir: Path,
    text_format: str = "csv",
) -> list[str]:
    """The command line of `benchmarks.flink_sql`: a consumer group and transactional ids of
    the run's own, every column of the tuple by name, the window of the reference query, the
    records' format (csv or json)."""
    return [
        "--bootstrap", bootstrap,
        "--topic", topic,
        "--output", output,
        "--group", f"flink-{run_id}",
        "--transactional-id-prefix", f"flink-{run_id}",
        "--jar", str(jar),
        "--fields", ",".join(FIELD_NAMES),
        "--parallelism", str(parallelism),
        "--log-dir", str(log_dir / f"flink-{run_id}"),
        "--window-s", str(PAPER_WINDOW_S),
        "--format", text_format,
    ]  # fmt: skip


def _timed(
    bench: BenchCluster,
    data: Dataset,
    *,
    output: str,
    launch: Callable[[], list[subprocess.Popen[str]]],
    log: Path,
    timeout_s: float,
) -> dict[str, Any]:
    """Launch the peer's processes, wait for every `STARTED`, then for the results."""
    reader = bench.read_results(ResultReader, output, count_field="count")
    before = data.sentinel_window_ms(WINDOW_MS)
    launched = time.time()
    children: Sequence[subprocess.Popen[str]] = []
    try:
        children = launch()
        markers = [read_markers(child, until="STARTED") for child in children]
        if any("STARTED" not in found for found in markers):
            raise PeerUnavailable(f"exited before starting its query (log {log})")
        started = max(float(found["STARTED"]) for found in markers)
        cpu_start = sum(tree_cpu_seconds(child.pid) for child in children)
        complete = _wait_results(
            reader, data, before_ms=before, children=children, timeout_s=timeout_s
        )
        cpu = sum(tree_cpu_seconds(child.pid) for child in children) - cpu_start
        rss = sum(tree_peak_rss_mb(child.pid) for child in children)
        exited = [child.returncode for child in children if child.poll() is not None]
    finally:
        for child in children:
            stop_group(child)
        reader.stop()
    elapsed = reader.completion_time_s(before_ms=before) - started if complete else math.nan
    return {
        "seconds": elapsed,
        "records_per_s": data.records / elapsed if complete else math.nan,
        "complete": complete,
        "counted": reader.total(before_ms=before),
        "duplicates": reader.duplicates(),
        "startup_s": started - launched,
        "cpu_s": cpu,
        "peak_rss_mb": rss,
        "exit_codes": exited,
        "markers": markers,
        "launched": launched,
    }


def _wait_results(
    reader: ResultReader,
    data: Dataset,
    *,
    before_ms: int,
    children: Sequence[subprocess.Popen[str]],
    timeout_s: float,
) -> bool:
    """True once the counts before `before_ms` sum to the records produced; False at the
    timeout or as soon as every child has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if reader.wait_total(data.records, before_ms=before_ms, timeout_s=1.0):
            return True
        if all(child.poll() is not None for child in children):
            return reader.total(before_ms=before_ms) >= data.records
    return False
