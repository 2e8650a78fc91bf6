"""`mars bench`: run the experiments on a fresh local cluster, write JSON, plots and the report.

BenchConfig.build(quick=False, runs=3, experiments=EXPERIMENTS) -> run_benchmarks(config)
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.exp_balance import BalancePlan, balance_experiment
from benchmarks.exp_end_to_end import end_to_end_experiment
from benchmarks.exp_faults import faults_experiment
from benchmarks.exp_latency import latency_experiment
from benchmarks.exp_mapper import batch_size_experiment, process_count_experiment
from benchmarks.exp_nexmark import NexmarkPlan, nexmark_experiment
from benchmarks.exp_pull_query import PullPlan, pull_experiment
from benchmarks.exp_spark_stream import StreamPlan, spark_stream_experiment
from benchmarks.exp_state import state_experiment
from benchmarks.exp_tasks import tasks_experiment
from benchmarks.harness import BenchCluster
from benchmarks.machine import code_version, load_average, machine_info
from benchmarks.plots import plot_all
from benchmarks.profile_reading import hot_frame_lines, hot_frame_shares, top_functions
from benchmarks.report import SECTIONS, render_report, run_note
from benchmarks.report_merge import merge_report
from benchmarks.state_figures import STATE_WINDOWS_S
from benchmarks.workload import Dataset, paper_sql, preload
from mars.config import MAPPER_BATCH_SIZE

PROJECT_ROOT = Path(__file__).resolve().parent.parent
EXPERIMENTS = (
    "batch",
    "processes",
    "e2e",
    "steady",
    "latency",
    "faults",
    "state",
    "pull",
    "balance",
    "tasks",
    "profile",
    "nexmark",
    "spark_stream",  # last: the Spark master and workers it starts stay up until the end
)
# The experiments that read the preloaded topic S.
DATASET_EXPERIMENTS = ("batch", "processes", "e2e", "tasks", "profile")
Log = Callable[[str], None]
TITLES = {
    "batch": "experiment 1, mapper throughput vs batch size",
    "processes": "experiment 2, throughput vs mapper processes",
    "e2e": "experiments 3 and 5, end to end Mars vs Spark vs Quix Streams vs Flink SQL vs "
    "ceiling; memory",
    "steady": "experiment 3 again over steady_records records (steady state)",
    "latency": "experiment 4, latency at half the measured maximum rate",
    "faults": "experiment 6, accuracy under faults",
    "state": "experiment 7, Redis and reducer memory vs window length (bounded state)",
    "pull": "experiment 8, pull-query latency and cost under live traffic",
    "balance": "experiment 9, skewed tasks with and without load moves",
    "tasks": "experiment 11, many tasks over one topic",
    "profile": "one mapper sampled by py-spy",
    "nexmark": "experiment 12, Nexmark q5, q7, q11 in Mars and Flink SQL against a DuckDB oracle",
    "spark_stream": "experiment 10, live pre-aggregation: mapper processes vs the Spark stream",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """What one `mars bench` invocation runs, and where it writes."""

    quick: bool
    runs: int
    experiments: tuple[str, ...]
    records: int
    partitions: int = 4
    span_s: int = 600
    batch_sizes: tuple[int, ...] = (1, 10, 100, 1_000, 5_000, 10_000, 50_000)
    small_batch_cap_s: float = 15.0
    process_counts: tuple[int, ...] = (1, 2, 4)
    e2e_mappers: int = 2
    e2e_reducers: int = 1
    e2e_quix_processes: int = 1  # one reads every source partition (benchmarks/quix_streams.py)
    e2e_flink_parallelism: int = 2  # one task slot per core
    latency_duration_s: int = 60
    latency_window_s: int = 5
    fault_records: int = 200_000
    state_windows_s: tuple[int, ...] = STATE_WINDOWS_S
    state_rate: float = 4000.0
    state_sips: int = 250  # x 8 types: 2,000 groups, every one in a window's first seconds
    state_duration_s: int = 180
    state_runs: int = 1  # unless --runs says otherwise: the 3 lengths x 180 s take 10 min
    pull_sips: tuple[int, ...] = (250, 2500)  # x 8 types: 2,000 and 20,000 open groups
    pull_rate: float = 4000.0
    pull_queries: int = 200
    pull_query_rate: float = 20.0
    pull_baseline_s: float = 10.0
    balance_records: int = 1_200_000  # about 30 s end to end: long enough for moves
    balance_settle_s: int = 30
    balance_measure_s: int = 45
    balance_mappers: int = 2
    balance_reducers: int = 3
    stream_records: int = 1_000_000
    task_counts: tuple[int, ...] = (1, 10, 50)  # tasks registered at once over topic S
    steady_records: int = 3_000_000  # experiment 3 again, where start-up stops dominating
    nexmark_records: int = 1_000_000  # bids over 30 min of event time
    timeout_s: float = 900.0
    run_dir: Path = PROJECT_ROOT / ".mars" / "bench"
    results_dir: Path = PROJECT_ROOT / "benchmarks" / "results"
    docs_path: Path = PROJECT_ROOT / "docs" / "benchmarks.md"
    img_dir: Path = PROJECT_ROOT / "docs" / "img"
    command: str = "mars bench"
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        *,
        quick: bool,
        runs: int | None,
        experiments: tuple[str, ...],
        command: str,
        nexmark_records: int | None = None,
    ) -> BenchConfig:
        config = cls._build(quick=quick, runs=runs, experiments=experiments, command=command)
        return replace(config, nexmark_records=nexmark_records) if nexmark_records else config

    @classmethod
    def _build(
        cls, *, quick: bool, runs: int | None, experiments: tuple[str, ...], command: str
    ) -> BenchConfig:
        unknown = set(experiments) - set(EXPERIMENTS)
        if unknown:
            raise ValueError(f"unknown experiments {sorted(unknown)}; known: {EXPERIMENTS}")
        if quick:
            return cls(
                quick=True,
                runs=runs or 1,
                experiments=experiments,
                records=100_000,
                small_batch_cap_s=5.0,
                latency_duration_s=30,
                fault_records=50_000,
                state_duration_s=30,
                state_runs=runs or 1,
                pull_queries=50,
                pull_baseline_s=5.0,
                balance_records=100_000,
                balance_settle_s=15,
                balance_measure_s=15,
                stream_records=100_000,
                task_counts=(1, 3),
                steady_records=600_000,
                nexmark_records=100_000,
                command=command,
            )
        return cls(
            quick=False,
            runs=runs or 3,
            experiments=experiments,
            records=300_000,
            state_runs=runs or 1,
            command=command,
        )


def run_benchmarks(config: BenchConfig, *, log: Log = print) -> dict[str, Any]:
    """Run the chosen experiments; returns the results (also written to disk)."""
    results: dict[str, Any] = {
        "machine": machine_info(),
        "code": code_version(PROJECT_ROOT),
        "command": config.command,
        "quick": config.quick,
        "config": {k: v for k, v in asdict(config).items() if not isinstance(v, Path)},
        "notes": [],
    }
    started = time.monotonic()
    log(f"starting a fresh local cluster in {config.run_dir} ...")
    bench = BenchCluster(run_dir=config.run_dir)
    try:
        data = None
        if set(config.experiments) & set(DATASET_EXPERIMENTS):
            data = _dataset(bench, config, log)
            results["dataset"] = {**asdict(data), "mbytes": data.mbytes}
        _run_experiments(bench, data, config, results, log)
    finally:
        bench.close()
    results["load_average_end"] = [round(v, 2) for v in load_average()]
    results["elapsed_s"] = time.monotonic() - started
    write_outputs(results, config, log)
    return results


def _dataset(
    bench: BenchCluster, config: BenchConfig, log: Log, *, topic: str = "S", records: int = 0
) -> Dataset:
    """`records` (default `config.records`) of the paper's records preloaded into `topic`."""
    records = records or config.records
    log(f"preloading {records:,} records into topic {topic} ...")
    data = preload(
        bench.kafka,
        topic=topic,
        records=records,
        partitions=config.partitions,
        span_s=config.span_s,
    )
    log(f"  {data.mbytes:.1f} MB at {data.produce_rate:,.0f} records/s")
    return data


def _run_experiments(
    bench: BenchCluster,
    loaded: Dataset | None,
    config: BenchConfig,
    results: dict[str, Any],
    log: Log,
) -> None:
    def data() -> Dataset:  # preloaded when one of DATASET_EXPERIMENTS is chosen
        assert loaded is not None
        return loaded

    steps: dict[str, Callable[[], Any]] = {
        "batch": lambda: batch_size_experiment(
            bench,
            data(),
            batch_sizes=list(config.batch_sizes),
            runs=config.runs,
            small_batch_cap_s=config.small_batch_cap_s,
            log=log,
        ),
        "processes": lambda: process_count_experiment(
            bench,
            data(),
            process_counts=list(config.process_counts),
            batch_size=MAPPER_BATCH_SIZE,
            runs=config.runs,
            log=log,
        ),
        "e2e": lambda: _end_to_end(bench, data(), config, log, name="e2e"),
        "steady": lambda: _steady_state(bench, config, log),
        "latency": lambda: _latency_at_two_rates(bench, config, _latency_rate(results), log),
        "faults": lambda: faults_experiment(
            bench, records=config.fault_records, timeout_s=config.timeout_s, log=log
        ),
        "state": lambda: state_experiment(
            bench,
            windows_s=config.state_windows_s,
            rate=config.state_rate,
            duration_s=config.state_duration_s,
            sips=config.state_sips,
            runs=config.state_runs,
            mappers=config.e2e_mappers,
            reducers=config.e2e_reducers,
            log=log,
        ),
        "pull": lambda: pull_experiment(
            bench,
            PullPlan(
                rate=config.pull_rate,
                queries=config.pull_queries,
                query_rate=config.pull_query_rate,
                baseline_s=config.pull_baseline_s,
                mappers=config.e2e_mappers,
                reducers=config.e2e_reducers,
            ),
            sips=config.pull_sips,
            log=log,
        ),
        "balance": lambda: balance_experiment(
            bench,
            BalancePlan(
                records=config.balance_records,
                mappers=config.balance_mappers,
                reducers=config.balance_reducers,
                settle_s=config.balance_settle_s,
                measure_s=config.balance_measure_s,
            ),
            log=log,
        ),
        "tasks": lambda: tasks_experiment(
            bench,
            data(),
            counts=config.task_counts,
            runs=config.runs,
            mappers=config.e2e_mappers,
            reducers=config.e2e_reducers,
            timeout_s=config.timeout_s,
            log=log,
        ),
        "profile": lambda: profile_mapper(bench, data(), config.run_dir / "mapper-profile.txt"),
        "nexmark": lambda: nexmark_experiment(
            bench,
            NexmarkPlan(
                records=config.nexmark_records,
                runs=config.runs,
                partitions=config.partitions,
                mappers=config.e2e_mappers,
                reducers=config.e2e_reducers,
                flink_parallelism=config.e2e_flink_parallelism,
                timeout_s=config.timeout_s,
            ),
            log_dir=_work_dir(config, "nexmark"),
            log=log,
        ),
        "spark_stream": lambda: spark_stream_experiment(
            bench,
            StreamPlan(
                records=config.stream_records,
                mappers=config.e2e_mappers,
                partitions=config.partitions,
                span_s=config.span_s,
            ),
            log_dir=_spark_dir(config),
            log=log,
        ),
    }
    for name in EXPERIMENTS:
        if name not in config.experiments:
            continue
        log(f"{name}: {TITLES[name]}")
        try:
            results[name] = steps[name]()
        except Exception as error:  # one failed experiment must not lose the others
            log(f"  {name} failed: {error!r}")
            results["notes"].append(f"experiment `{name}` failed: {error!r:.300}")


def _spark_dir(config: BenchConfig) -> Path:
    return _work_dir(config, "spark")


def _steady_state(bench: BenchCluster, config: BenchConfig, log: Log) -> dict[str, Any]:
    """Experiment 3 again over `steady_records` records, preloaded into a topic of its own."""
    data = _dataset(bench, config, log, topic="S_steady", records=config.steady_records)
    found = _end_to_end(bench, data, config, log, name="steady")
    return {**found, "dataset": {**asdict(data), "mbytes": data.mbytes}}


def _end_to_end(
    bench: BenchCluster, data: Dataset, config: BenchConfig, log: Log, *, name: str
) -> dict[str, Any]:
    """Experiment 3 over `data`, its child processes' files under the experiment `name`."""
    return end_to_end_experiment(
        bench,
        data,
        runs=config.runs,
        mappers=config.e2e_mappers,
        reducers=config.e2e_reducers,
        quix_processes=config.e2e_quix_processes,
        flink_parallelism=config.e2e_flink_parallelism,
        log_dir=_work_dir(config, name),
        timeout_s=config.timeout_s,
        log=log,
    )


def _work_dir(config: BenchConfig, name: str) -> Path:
    """Where an experiment's child processes write logs, checkpoints and state."""
    path = config.run_dir / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def _latency_at_two_rates(
    bench: BenchCluster, config: BenchConfig, rate: float, log: Log
) -> dict[str, Any]:
    """The target's measurement at `rate`, then the same at half of it (`lighter`), which
    tells the latency floor from the cost of load on a machine the load generator and Kafka
    share with the pipeline."""

    def at(rate: float) -> dict[str, Any]:
        return latency_experiment(
            bench,
            rate=rate,
            runs=config.runs,
            duration_s=config.latency_duration_s,
            window_s=config.latency_window_s,
            mappers=config.e2e_mappers,
            reducers=config.e2e_reducers,
            log=log,
        )

    return {**at(rate), "lighter": at(round(rate / 2, -2))}


def _latency_rate(results: dict[str, Any]) -> float:
    """Half the measured maximum: end-to-end median if measured, else 2 mappers', else 5,000."""
    for path in (("e2e", "mars", "records_per_s"), ("processes", "2", "records_per_s")):
        node: Any = results
        for key in path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        value = node.get("median") if isinstance(node, dict) else None
        if isinstance(value, int | float) and not math.isnan(value) and value > 0:
            return round(value / 2, -2)
    return 5000.0


def profile_mapper(bench: BenchCluster, data: Dataset, path: Path) -> dict[str, Any]:
    """One mapper over the whole topic, sampled from outside by py-spy; its loop's shares."""
    py_spy = Path(sys.executable).parent / "py-spy"
    with bench.run() as run:
        (handle,) = run.start_mappers(1)
        argv = [str(py_spy), "record", "--pid", str(handle.pid), "--rate", "200"]
        spy = subprocess.Popen(
            [*argv, "--format", "raw", "--output", str(path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        run.register(paper_sql(data.topic))
        run.wait_records_in(data.records, timeout_s=600)
        spy.send_signal(signal.SIGINT)  # py-spy writes its file when interrupted
        spy.wait(timeout=60)
    return {"what": f"{data.records:,} records", "file": str(path), **read_profile(path)}


def read_profile(path: Path) -> dict[str, Any]:
    text = path.read_text() if path.exists() else ""
    return {
        "reading": hot_frame_lines(text),
        "shares": hot_frame_shares(text),
        "top": top_functions(text),
    }


def write_outputs(results: dict[str, Any], config: BenchConfig, log: Log) -> None:
    config.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    body = json.dumps(results, indent=2, default=str)
    (config.results_dir / f"bench-{stamp}.json").write_text(body)
    (config.results_dir / "latest.json").write_text(body)
    images = write_report(results, config)
    log(f"wrote {config.results_dir / 'latest.json'}, {config.docs_path} and {images} plots")


def rewrite_report(results_file: Path, config: BenchConfig, log: Log = print) -> None:
    """Plots and report again from a saved results file (no measurement)."""
    results = json.loads(results_file.read_text())
    profile = results.get("profile")
    if profile and "file" in profile and Path(profile["file"]).exists():
        profile.update(read_profile(Path(profile["file"])))
    images = write_report(results, config)
    log(f"wrote {config.docs_path} and {images} plots from {results_file}")


def write_report(results: dict[str, Any], config: BenchConfig) -> int:
    """The plots the results allow, and the report: whole after a run of every experiment
    (or when there is none yet), else only the sections of the experiments this run
    measured, merged into the report there, each saying which run it comes from. Returns
    how many plots were written."""
    images = plot_all(results, config.img_dir)
    docs_dir = config.docs_path.parent
    relative = {name: os.path.relpath(path, docs_dir) for name, path in images.items()}
    report = render_report(results, images=relative)
    chosen = set(results.get("config", {}).get("experiments", EXPERIMENTS))
    if not set(EXPERIMENTS) <= chosen and config.docs_path.exists():
        measured = [name for name in EXPERIMENTS if name in chosen and results.get(name)]
        report = merge_report(
            config.docs_path.read_text(),
            report,
            headings=[heading for name in measured for heading in SECTIONS[name]],
            provenance=run_note(results),
        )
    config.docs_path.write_text(report)
    return len(images)
