"""Experiment 3 (and 5): the reference query end to end, Mars vs PySpark Structured Streaming vs
Quix Streams vs Flink SQL vs the consume+decode ceiling, on the same preloaded topic in the same
invocation.

End to end = from the start (Mars: the task is registered, its processes already running and
idle; Spark: `query.start()`, the session already up; Quix Streams: `app.run()`, the
Application built; Flink SQL: `execute_sql(INSERT)`, the TableEnvironment up) until the results
of every data window are readable in the result topic (read_committed; the sum of the counts
of the windows before the sentinel's equals the records produced). Each system's start-up until
then is measured separately. Memory (experiment 5) is read in the Mars runs: peak Redis
`used_memory` sampled every 100 ms, mapper and reducer VmHWM. The peers' runs are in
`benchmarks/e2e_peers.py`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, ClassVar

from benchmarks.e2e_figures import (
    PEER_NAMES,
    CeilingFigures,
    EndToEndResult,
    MemoryFigures,
    SystemFigures,
    peak,
)
from benchmarks.e2e_peers import WINDOW_MS, flink_run, quix_run, spark_run
from benchmarks.experiment import Base, Context, Log, Section, note
from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.peers import PeerUnavailable
from benchmarks.report_e2e import (
    E2E_HEADING,
    MEMORY_HEADING,
    STEADY_HEADING,
    e2e_section,
    memory_section,
    steady_section,
)
from benchmarks.results_reader import ResultReader
from benchmarks.stats import Summary, merged_progress, steady_rate
from benchmarks.subprocesses import spawn_module
from benchmarks.workload import Dataset, paper_sql
from mars.config import MAPPER_BATCH_SIZE
from mars.tasks.spec import default_output_topic


@dataclass(frozen=True, slots=True)
class EndToEndSettings:
    quix_processes: int = 1  # one reads every source partition (benchmarks/quix_streams.py)
    flink_parallelism: int = 2  # one task slot per core


@dataclass(frozen=True, slots=True)
class SteadySettings(EndToEndSettings):
    records: int = 3_000_000  # where start-up stops dominating
    QUICK: ClassVar[dict[str, object]] = {"records": 600_000}


class EndToEnd(Base[EndToEndSettings, EndToEndResult]):
    """Experiments 3 and 5 over the preloaded topic S (the module's docstring)."""

    name = "e2e"
    title = (
        "experiments 3 and 5, end to end Mars vs Spark vs Quix Streams vs Flink SQL vs "
        "ceiling; memory"
    )
    sections = (Section(3, E2E_HEADING), Section(5, MEMORY_HEADING))
    uses_dataset = True
    settings_type = EndToEndSettings
    result_type = EndToEndResult

    def run(self, ctx: Context, settings: EndToEndSettings) -> EndToEndResult:
        return end_to_end_experiment(ctx, settings, ctx.dataset(), name=self.name)

    def report(self, result: EndToEndResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return ("Not run.", "Not run (measured in the end-to-end runs).")
        return (e2e_section(result, images), memory_section(result.memory))


class Steady(Base[SteadySettings, EndToEndResult]):
    """Experiment 3 again over `records` records, preloaded into a topic of its own."""

    name = "steady"
    title = "experiment 3 again over ten times the records (steady state)"
    sections = (Section(3.5, STEADY_HEADING),)
    settings_type = SteadySettings
    result_type = EndToEndResult

    def run(self, ctx: Context, settings: SteadySettings) -> EndToEndResult:
        data = ctx.preload(topic="S_steady", records=settings.records)
        found = end_to_end_experiment(ctx, settings, data, name=self.name)
        return replace(found, dataset={**asdict(data), "mbytes": data.mbytes})

    def report(self, result: EndToEndResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (steady_section(result),) if result else self.not_run()


def mars_run(
    bench: BenchCluster, data: Dataset, *, mappers: int, reducers: int, timeout_s: float
) -> dict[str, Any]:
    with bench.run() as run:
        launched = time.time()
        run.start_mappers(mappers)
        run.start_reducers(reducers)
        startup = time.time() - launched
        task_id = fresh_id("e2e-")
        reader = bench.read_results(ResultReader, default_output_topic(task_id))
        with bench.redis_sampler() as redis_peak:
            started = time.time()
            run.register(paper_sql(data.topic, input_format=data.input_format), task_id=task_id)
            before = data.sentinel_window_ms(WINDOW_MS)
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
        "startup_s": startup,
        "cpu_s": sum(f.cpu_s or 0.0 for fs in figures.values() for f in fs),
        "redis_peak_mb": redis_peak.peak_bytes / 1024**2,
        "mapper_peak_rss_mb": [f.peak_rss_mb for f in figures["mappers"]],
        "reducer_peak_rss_mb": [f.peak_rss_mb for f in figures["reducers"]],
    }


def ceiling_run(
    bench: BenchCluster, data: Dataset, *, workers: int, batch: int, consumer: str = "confluent"
) -> dict[str, Any]:
    """The consume+decode ceiling with confluent-kafka's consumer (the Python path) or the
    native one (`benchmarks.ceiling --consumer`)."""
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
                "--consumer",
                consumer,
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
    ctx: Context, settings: EndToEndSettings, data: Dataset, *, name: str
) -> EndToEndResult:
    """Experiment 3 over `data`, its child processes' files under the experiment `name`.
    Interleaved runs (Mars, Spark, Quix Streams, Flink SQL, ceiling) so the machine's load
    hits all alike. A peer that cannot run (its virtualenv or jar missing) or fails, or a run
    that does not complete, is noted in the result's `notes`; the other systems are measured
    all the same."""
    bench, log, log_dir, timeout_s = ctx.bench, ctx.log, ctx.work_dir(name), ctx.config.timeout_s
    mappers, reducers = ctx.config.mappers, ctx.config.reducers
    quix_processes, flink_parallelism = settings.quix_processes, settings.flink_parallelism
    mars: list[dict[str, Any]] = []
    peers: dict[str, list[dict[str, Any]]] = {name: [] for name in PEER_NAMES}
    ceilings: dict[str, list[dict[str, Any]]] = {"confluent": [], "native": []}
    notes: list[str] = []
    peer_runs: dict[str, Callable[[], dict[str, Any]]] = {
        "spark": lambda: spark_run(bench, data, timeout_s=timeout_s, log_dir=log_dir),
        "quix": lambda: quix_run(
            bench, data, processes=quix_processes, timeout_s=timeout_s, log_dir=log_dir
        ),
        "flink": lambda: flink_run(
            bench, data, parallelism=flink_parallelism, timeout_s=timeout_s, log_dir=log_dir
        ),
    }
    for index in range(ctx.config.runs):
        mars.append(mars_run(bench, data, mappers=mappers, reducers=reducers, timeout_s=timeout_s))
        log(f"  mars  run {index + 1}: {mars[-1]['seconds']:.1f} s")
        for name, run in peer_runs.items():
            found = peer_run(run, name=PEER_NAMES[name], data=data, notes=notes, log=log)
            if found is not None:
                peers[name].append(found)
                log(f"  {name} run {index + 1}: {found['seconds']:.1f} s")
        for consumer, measured in ceilings.items():
            measured.append(
                ceiling_run(
                    bench, data, workers=mappers, batch=MAPPER_BATCH_SIZE, consumer=consumer
                )
            )
            log(f"  {consumer} ceiling run {index + 1}: {measured[-1]['records_per_s']:,.0f} rec/s")
    quix, flink = peers["quix"], peers["flink"]
    return EndToEndResult(
        mappers=mappers,
        reducers=reducers,
        mars=SystemFigures.of(mars, data),
        spark=SystemFigures.of(peers["spark"], data),
        quix=replace(
            SystemFigures.of(quix, data),
            processes=quix_processes,
            settings=quix[0]["settings"] if quix else {},
        ),
        flink=replace(
            SystemFigures.of(flink, data),
            parallelism=flink_parallelism,
            settings=flink[0]["settings"] if flink else {},
        ),
        ceiling=CeilingFigures.of(ceilings["confluent"]),
        ceiling_native=CeilingFigures.of(ceilings["native"]),
        memory=MemoryFigures(
            redis_peak_mb=Summary.of([r["redis_peak_mb"] for r in mars]),
            mapper_peak_rss_mb=peak(mars, "mapper_peak_rss_mb"),
            reducer_peak_rss_mb=peak(mars, "reducer_peak_rss_mb"),
            spark_peak_rss_mb=Summary.of([r["peak_rss_mb"] for r in peers["spark"]]),
            quix_peak_rss_mb=Summary.of([r["peak_rss_mb"] for r in quix]),
            flink_peak_rss_mb=Summary.of([r["peak_rss_mb"] for r in flink]),
        ),
        notes=notes,
    )


def peer_run(
    run: Callable[[], dict[str, Any]], *, name: str, data: Dataset, notes: list[str], log: Log
) -> dict[str, Any] | None:
    """One run of a peer; None (and a note) when it could not run or failed."""
    try:
        found = run()
    except PeerUnavailable as error:
        text = f"{name} not measured: {error}"
    except Exception as error:  # a failing peer must not lose Mars's and the others' runs
        text = f"{name} failed: {error!r:.300}"
    else:
        if not found["complete"]:
            notes.append(
                f"{name}: a run did not complete (results of {found['counted']:,} of "
                f"{data.records:,} records readable; exit codes {found['exit_codes']})"
            )
        return found
    note(notes, text, log)
    return None
