"""Experiment 3 (and 5): the paper's query end to end, Mars vs Spark Structured Streaming vs
the consume+decode ceiling, on the same preloaded topic in the same invocation.

End to end = from the start (Mars: the task is registered, its processes already running and
idle; Spark: `query.start()`, the session already up) until the results of every data window
are readable in the result topic (read_committed; the sum of the counts of the windows before
the sentinel's equals the records produced). Memory (experiment 5) is read in the Mars runs:
peak Redis `used_memory` sampled every 100 ms, mapper and reducer VmHWM.
"""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.procstat import tree_cpu_seconds, tree_peak_rss_mb
from benchmarks.results_reader import ResultReader
from benchmarks.stats import merged_progress, steady_rate, summarize
from benchmarks.subprocesses import spawn_module, stop_group
from benchmarks.workload import Dataset, paper_sql

WINDOW_MS = 60_000


def _sentinel_window_ms(data: Dataset) -> int:
    assert data.sentinel_s is not None, "end-to-end runs need the sentinel records"
    return data.sentinel_s * 1000 // WINDOW_MS * WINDOW_MS


def mars_run(
    bench: BenchCluster, data: Dataset, *, mappers: int, reducers: int, timeout_s: float
) -> dict[str, Any]:
    with bench.run() as run:
        run.start_mappers(mappers)
        run.start_reducers(reducers)
        task_id = fresh_id("e2e-")
        output = f"mars.results.{task_id}"
        bench.create_topic(output, bench.settings.kafka.result_partitions)
        reader = ResultReader(kafka=bench.kafka, topic=output, count_field="count_star")
        reader.start()
        with bench.redis_sampler() as redis_peak:
            started = time.time()
            run.register(paper_sql(data.topic), task_id=task_id)
            before = _sentinel_window_ms(data)
            complete = reader.wait_total(data.records, before_ms=before, timeout_s=timeout_s)
            figures = run.figures()
        reader.stop()
    finished = reader.completion_time_s(before_ms=before)
    elapsed = finished - started if complete else math.nan
    return {
        "seconds": elapsed,
        "records_per_s": data.records / elapsed if complete else math.nan,
        "complete": complete,
        "duplicates": reader.duplicates(),
        "cpu_s": sum(f.cpu_s or 0.0 for fs in figures.values() for f in fs),
        "redis_peak_mb": redis_peak.peak_bytes / 1024**2,
        "mapper_peak_rss_mb": [f.peak_rss_mb for f in figures["mappers"]],
        "reducer_peak_rss_mb": [f.peak_rss_mb for f in figures["reducers"]],
    }


def spark_run(
    bench: BenchCluster, data: Dataset, *, timeout_s: float, log_dir: Path
) -> dict[str, Any]:
    output = fresh_id("spark-out-")
    bench.create_topic(output, bench.settings.kafka.result_partitions)
    reader = ResultReader(kafka=bench.kafka, topic=output, count_field="count")
    reader.start()
    launched = time.time()
    process = spawn_module(
        "benchmarks.spark_streaming",
        [
            "--bootstrap", bench.bootstrap,
            "--topic", data.topic,
            "--output", output,
            "--checkpoint", str(log_dir / f"checkpoint-{output}"),
        ],
        log=log_dir / "spark.log",
    )  # fmt: skip
    session_s = started = math.nan
    complete = False
    cpu = rss = math.nan
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("SESSION "):
                session_s = float(line.split()[1]) - launched
            if line.startswith("STARTED "):
                started = float(line.split()[1])
                break
        if not math.isnan(started):
            cpu_start = tree_cpu_seconds(process.pid)
            before = _sentinel_window_ms(data)
            complete = reader.wait_total(data.records, before_ms=before, timeout_s=timeout_s)
            cpu = tree_cpu_seconds(process.pid) - cpu_start
            rss = tree_peak_rss_mb(process.pid)
    finally:
        stop_group(process)
        reader.stop()
    elapsed = reader.completion_time_s(before_ms=before) - started if complete else math.nan
    return {
        "seconds": elapsed,
        "records_per_s": data.records / elapsed if complete else math.nan,
        "complete": complete,
        "session_start_s": session_s,
        "cpu_s": cpu,
        "peak_rss_mb": rss,
    }


def ceiling_run(bench: BenchCluster, data: Dataset, *, workers: int, batch: int) -> dict[str, Any]:
    processes = [
        spawn_module(
            "benchmarks.ceiling",
            [
                "--bootstrap",
                bench.bootstrap,
                "--topic",
                data.topic,
                "--partitions",
                ",".join(str(p) for p in range(w, data.partitions, workers)),
                "--batch",
                str(batch),
            ],
        )
        for w in range(workers)
    ]
    reports = []
    for process in processes:
        out, _ = process.communicate(timeout=600)
        reports.append(json.loads(out.strip().splitlines()[-1]))
    records = sum(r["records"] for r in reports)
    cpu = sum(r["cpu_s"] for r in reports)
    rate = steady_rate(merged_progress([r["progress"] for r in reports]))
    return {
        "records_per_s": rate,
        "mb_per_s": rate * data.mean_bytes / 1e6,
        "records_per_cpu_s": records / cpu if cpu > 0 else math.nan,
        "records": records,
    }


def end_to_end_experiment(
    bench: BenchCluster,
    data: Dataset,
    *,
    runs: int,
    mappers: int,
    reducers: int,
    log_dir: Path,
    timeout_s: float,
    log: Any = print,
) -> dict[str, Any]:
    """Interleaved runs (Mars, Spark, ceiling) so the machine's load hits all three alike."""
    mars: list[dict[str, Any]] = []
    spark: list[dict[str, Any]] = []
    ceiling: list[dict[str, Any]] = []
    for index in range(runs):
        mars.append(mars_run(bench, data, mappers=mappers, reducers=reducers, timeout_s=timeout_s))
        log(f"  mars  run {index + 1}: {mars[-1]['seconds']:.1f} s")
        spark.append(spark_run(bench, data, timeout_s=timeout_s, log_dir=log_dir))
        log(f"  spark run {index + 1}: {spark[-1]['seconds']:.1f} s")
        ceiling.append(ceiling_run(bench, data, workers=mappers, batch=5000))
        log(f"  ceiling run {index + 1}: {ceiling[-1]['records_per_s']:,.0f} rec/s")
    return {
        "mappers": mappers,
        "reducers": reducers,
        "mars": {
            "runs": mars,
            "seconds": summarize([r["seconds"] for r in mars]),
            "records_per_s": summarize([r["records_per_s"] for r in mars]),
            "cpu_s": summarize([r["cpu_s"] for r in mars]),
        },
        "spark": {
            "runs": spark,
            "seconds": summarize([r["seconds"] for r in spark]),
            "records_per_s": summarize([r["records_per_s"] for r in spark]),
            "cpu_s": summarize([r["cpu_s"] for r in spark]),
        },
        "ceiling": {
            "runs": ceiling,
            "records_per_s": summarize([r["records_per_s"] for r in ceiling]),
            "mb_per_s": summarize([r["mb_per_s"] for r in ceiling]),
            "records_per_cpu_s": summarize([r["records_per_cpu_s"] for r in ceiling]),
        },
        "memory": {
            "redis_peak_mb": summarize([r["redis_peak_mb"] for r in mars]),
            "mapper_peak_rss_mb": summarize(
                [max(x for x in r["mapper_peak_rss_mb"] if x is not None) for r in mars]
            ),
            "reducer_peak_rss_mb": summarize(
                [max(x for x in r["reducer_peak_rss_mb"] if x is not None) for r in mars]
            ),
            "spark_peak_rss_mb": summarize([r["peak_rss_mb"] for r in spark]),
        },
    }
