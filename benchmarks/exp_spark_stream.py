"""Experiment 10: the live pre-aggregation's records/s, `mars mapper` processes vs
`mars spark stream`, same preloaded data and query, in one invocation.

A Spark standalone master and `workers` workers (1 core, 1 GiB each) are started on the bench
cluster first (`LocalCluster.start_spark`), so their idle daemons run during both modes. Then,
over one preloaded topic (the reference CSV tuples, no sentinel) and the reference query, each mode
on a fresh task under its own ZooKeeper root, no reducer (only the pre-aggregation is
measured; the mappers' backpressure marks are out of reach, the stream has none):

- *mappers*: `mappers` `mars mapper` processes launched, the task registered once they are
  members;
- *spark*: the task registered `WITH (preaggregation = 'spark')`, then `mars spark stream
  <task> --master <url>` launched (driver, application, executors on the workers).

From each launch until the task's exact `records_in` counter (Redis) reaches the preloaded
count, sampled every 100 ms, with the CPU seconds of the mode's processes every 250 ms
(mappers; the stream's driver with its JVM, the master and the workers with their executors).
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.experiment import Base, Context, Log, Section
from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.procstat import cpu_seconds, tree_cpu_seconds
from benchmarks.report_spark_stream import SPARK_STREAM_HEADING, spark_stream_section
from benchmarks.stream_figures import (
    CpuSample,
    ModeFigures,
    cpu_at,
    micro_batches,
    mode_phases,
    mode_ratios,
)
from benchmarks.subprocesses import PROJECT_ROOT, stop_group
from benchmarks.workload import Dataset, paper_sql, preload

SPARK_ROLES = ("spark-master", "spark-worker")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamPlan:
    """What experiment 10 runs (its settings: defaults for a full run, `QUICK` for
    `--quick`; the mappers, partitions and span are the invocation's)."""

    records: int = 1_000_000
    mappers: int = 2
    workers: int = 2
    partitions: int = 4
    span_s: int = 600
    batch_size: int = 5_000  # the mappers' batch and the stream's chunk of records
    trigger_s: float = 1.0
    executor_memory: str = "512m"
    timeout_s: float = 240.0
    QUICK: ClassVar[dict[str, object]] = {"records": 100_000}


class CpuWatch:
    """`total()` (CPU seconds of a mode's processes) every `interval_s`, with the time."""

    def __init__(self, total: Callable[[], float], *, interval_s: float = 0.25) -> None:
        self._total = total
        self._interval_s = interval_s
        self._stop = threading.Event()
        self.samples: list[CpuSample] = []
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> CpuWatch:
        self.samples.append((time.monotonic(), self._total()))
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.samples.append((time.monotonic(), self._total()))

    def _sample(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.samples.append((time.monotonic(), self._total()))


def mappers_mode(bench: BenchCluster, data: Dataset, plan: StreamPlan) -> ModeFigures:
    """`plan.mappers` mapper processes launched, then the task registered."""
    with bench.run(batch_size=plan.batch_size) as run:

        def total() -> float:
            return sum(cpu_seconds(h.pid) or 0.0 for h in run.mappers)

        with CpuWatch(total) as cpu:
            launched = time.monotonic()
            run.start_mappers(plan.mappers)
            run.register(paper_sql(data.topic))
            samples = run.wait_records_in(data.records, timeout_s=plan.timeout_s)
    return mode_phases(samples, cpu.samples, launched=launched, target=data.records)


def spark_mode(
    bench: BenchCluster, data: Dataset, plan: StreamPlan, *, master: str, log_dir: Path
) -> ModeFigures:
    """The task registered for Spark, then `mars spark stream` launched on `master`."""
    daemons = bench.pids(*SPARK_ROLES)
    with bench.run(batch_size=plan.batch_size) as run:
        spec = run.register(paper_sql(data.topic, options="preaggregation='spark'"))
        log = log_dir / f"stream-{spec.id}.log"
        env = {
            **os.environ,
            **bench.cluster.state.env(),  # type: ignore[union-attr]
            **run.env,
            "MARS_LOCAL__JARS_DIR": str(bench.settings.local.jars_dir),
        }
        command = [sys.executable, "-m", "cli.main", "spark", "stream", spec.id]
        command += ["--master", master, "--trigger", str(plan.trigger_s)]
        command += ["--chunk-size", str(plan.batch_size)]
        command += ["--conf", f"spark.executor.memory={plan.executor_memory}"]
        driver: subprocess.Popen[str] | None = None

        def driver_cpu() -> float:
            return tree_cpu_seconds(driver.pid) if driver is not None else 0.0

        def executors_cpu() -> float:
            return sum(tree_cpu_seconds(pid) for pid in daemons)

        try:
            with (
                CpuWatch(lambda: driver_cpu() + executors_cpu()) as cpu,
                CpuWatch(executors_cpu) as executors,
                log.open("w") as out,
            ):
                launched = time.monotonic()
                driver = subprocess.Popen(
                    command,
                    cwd=PROJECT_ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    text=True,
                    start_new_session=True,
                )
                samples = run.wait_records_in(
                    data.records,
                    timeout_s=plan.timeout_s,
                    while_running=lambda: driver is not None and driver.poll() is None,
                )
        finally:
            exit_code = _stop_stream(driver)
    phases = mode_phases(samples, cpu.samples, launched=launched, target=data.records)
    end = launched + phases.seconds if phases.complete else cpu.samples[-1][0]
    tail = log.read_text(errors="replace")
    return replace(
        phases,
        executors_cpu_s=cpu_at(executors.samples, end),
        micro_batches=micro_batches(tail),
        exit_code=exit_code,
        log=str(log),
        log_tail="" if phases.complete else tail[-2000:],
    )


def _stop_stream(driver: subprocess.Popen[str] | None) -> int | None:
    """SIGTERM to the driver (it stops the query and the Spark session, then prints its tally);
    the whole process group after 60 s."""
    if driver is None:
        return None
    if driver.poll() is None:
        driver.terminate()
        try:
            driver.wait(timeout=60)
        except subprocess.TimeoutExpired:
            stop_group(driver)
    return driver.returncode


def spark_stream_experiment(
    bench: BenchCluster, plan: StreamPlan, *, log_dir: Path, log: Log = print
) -> SparkStreamResult:
    """The Spark cluster, the preloaded topic, then the mappers and the Spark stream over it."""
    started = time.monotonic()
    master = bench.cluster.start_spark(workers=plan.workers)
    cluster_s = time.monotonic() - started
    log(f"  Spark master + {plan.workers} workers up in {cluster_s:.1f} s ({master})")
    data = preload(
        bench.kafka,
        topic=fresh_id("stream_"),
        records=plan.records,
        partitions=plan.partitions,
        span_s=plan.span_s,
        sentinel=False,
    )
    log(f"  preloaded {data.records:,} records ({data.mbytes:.1f} MB)")
    mappers = mappers_mode(bench, data, plan)
    log(f"  mappers: {_describe(mappers)}")
    spark = spark_mode(bench, data, plan, master=master, log_dir=log_dir)
    log(f"  spark stream: {_describe(spark)}")
    return SparkStreamResult(
        **asdict(plan),
        spark_cluster_start_s=cluster_s,
        dataset={**asdict(data), "mbytes": data.mbytes},
        modes={"mappers": mappers, "spark": spark},
        ratios=mode_ratios(mappers, spark),
    )


def _describe(mode: ModeFigures) -> str:
    return (
        f"start-up {mode.startup_s:.1f} s, all {mode.records_in:,} records in "
        f"{mode.seconds:.1f} s ({mode.records_per_s:,.0f} records/s), steady "
        f"{mode.steady_records_per_s:,.0f} records/s, {mode.cpu_s:.1f} CPU s"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkStreamResult(StreamPlan):
    """Experiment 10: the plan it ran, the Spark cluster's start, the preloaded topic, each
    mode's figures (`mappers`, `spark`) and the mappers' over Spark's."""

    spark_cluster_start_s: float = math.nan
    dataset: dict[str, Any] = field(default_factory=dict)
    modes: dict[str, ModeFigures] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)


class SparkStream(Base[StreamPlan, SparkStreamResult]):
    """Experiment 10 (the module's docstring). The Spark master and workers it starts stay up
    until the end, hence last in the registry."""

    name = "spark_stream"
    title = "experiment 10, live pre-aggregation: mapper processes vs the Spark stream"
    sections = (Section(10, SPARK_STREAM_HEADING),)
    settings_type = StreamPlan
    result_type = SparkStreamResult

    def run(self, ctx: Context, settings: StreamPlan) -> SparkStreamResult:
        config = ctx.config
        plan = replace(
            settings, mappers=config.mappers, partitions=config.partitions, span_s=config.span_s
        )
        return spark_stream_experiment(ctx.bench, plan, log_dir=ctx.work_dir("spark"), log=ctx.log)

    def report(
        self, result: SparkStreamResult | None, images: Mapping[str, str]
    ) -> tuple[str, ...]:
        return (spark_stream_section(result),) if result else self.not_run()
