"""Experiment 12: Nexmark's q5, q7 and q11 in Mars and in Flink SQL, on the same preloaded bids
topic in the same invocation, every result checked against the DuckDB oracle.

The bids (`devtools.gen.nexmark`, JSON, in time order in each partition) are produced once, with
one sentinel bid per partition a day after the data; the oracle computes every query's
expected rows from the same columns. Then, for each run and query, Mars (a fresh task on
`mappers` mappers + `reducers` reducers, already up and idle) and Flink SQL (a fresh job in
PyFlink's MiniCluster, `flink_parallelism` wide, `benchmarks.flink_job`) read the whole topic;
the clock runs from the task's registration (Flink: the INSERT's submission) until the last of
the oracle's number of data rows is readable in the result topic (read_committed). Every row
read is then checked against the oracle (`benchmarks.nexmark_check`).

Events per second per core: the records over the CPU seconds the system used meanwhile
(Mars: its mappers, reducers and the Redis server; Flink: its Python process and JVM; the
Kafka broker for neither), and, wall clock, the records per second over the machine's cores.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

from benchmarks.experiment import Base, Context, Section, note
from benchmarks.flink_json import FlinkJsonJob, run_flink_job
from benchmarks.harness import fresh_id
from benchmarks.nexmark_check import check, data_rows, keyed_rows
from benchmarks.nexmark_flink import flink_query
from benchmarks.nexmark_oracle import Expected, expected_results
from benchmarks.nexmark_queries import QUERIES, NexmarkQuery
from benchmarks.peers import PeerUnavailable
from benchmarks.procstat import cpu_seconds
from benchmarks.report_nexmark import NEXMARK_HEADING, nexmark_section
from benchmarks.result_rows import RowCollector
from benchmarks.stats import Summary, summaries
from devtools.gen.nexmark import NexmarkConfig, encode_bids, generate_bids
from devtools.gen.nexmark_produce import produce_bids
from mars.tasks.spec import default_output_topic

SENTINEL_AFTER_MS = 86_400_000  # a day after the data: past every data window and session
TOPIC = "bids"  # the topic's name in the report's queries
SPAN_S, SEED, QUERY_NAMES = 1800, 7, ("q5", "q7", "q11")  # the bids' event time, the queries


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """The preloaded bids topic and what a run checks against."""

    topic: str
    records: int
    data_end_ms: int  # one past the last bid's time: later windows are the sentinels'
    expected: Expected


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryRun:
    """One run of a query by one system, and its rows checked (`check`: the oracle's
    `Verdict` as a dict). Mars's runs add the CPU by role and its counters; Flink's its
    start-up, peak RSS and settings."""

    seconds: float = math.nan
    complete: bool = False
    records_per_s: float = math.nan
    cpu_s: float = math.nan
    records_per_cpu_s: float = math.nan
    check: dict[str, Any] = field(default_factory=dict)
    cpu_by_role_s: dict[str, float] | None = None
    records_in: int | None = None
    late: int | None = None
    bad: int | None = None
    startup_s: float | None = None
    peak_rss_mb: float | None = None
    settings: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemRuns:
    """One system's runs of one query, summed up (per core: over the machine's cores)."""

    runs: list[QueryRun] = field(default_factory=list)
    exact: bool = False
    seconds: Summary = field(default_factory=Summary)
    records_per_s: Summary = field(default_factory=Summary)
    records_per_s_per_core: Summary = field(default_factory=Summary)
    records_per_cpu_s: Summary = field(default_factory=Summary)
    cpu_s: Summary = field(default_factory=Summary)

    @classmethod
    def of(cls, runs: list[QueryRun]) -> SystemRuns:
        cores = os.cpu_count() or 1
        return cls(
            runs=runs,
            exact=bool(runs) and all(r.check["exact"] for r in runs),
            **summaries(runs, "seconds", "records_per_s", "records_per_cpu_s", "cpu_s"),
            records_per_s_per_core=Summary.of([r.records_per_s / cores for r in runs]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class QueryResult:
    """One query: its SQL in each system, the oracle's row count, each system's runs."""

    title: str = ""
    mars_sql: str = ""
    flink_sql: str = ""
    expected_rows: int = 0
    mars: SystemRuns = field(default_factory=SystemRuns)
    flink: SystemRuns = field(default_factory=SystemRuns)


@dataclass(frozen=True, slots=True, kw_only=True)
class NexmarkResult:
    """Experiment 12: the bids preloaded (the generator's `config`), the oracle's time, the
    processes, and every query's results."""

    records: int = 0
    partitions: int = 0
    span_s: int = 0
    seed: int = 0
    mean_bytes: float = math.nan
    distinct_times: int = 0
    produce_rate: float = math.nan
    oracle_s: float = math.nan
    config: dict[str, Any] = field(default_factory=dict)
    cores: int = 1
    mappers: int = 0
    reducers: int = 0
    flink_parallelism: int = 0
    queries: dict[str, QueryResult] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def nexmark_experiment(ctx: Context, settings: NexmarkSettings) -> NexmarkResult:
    """Runs interleaved (for each run, each query: Mars, then Flink) so load hits both alike;
    Flink missing or failing is noted and Mars measured all the same."""
    log, log_dir, config = ctx.log, ctx.work_dir("nexmark"), ctx.config
    loaded, preload = _preload(ctx, settings)
    queries = [QUERIES[name] for name in QUERY_NAMES]
    found: dict[str, dict[str, list[QueryRun]]] = {
        q.name: {"mars": [], "flink": []} for q in queries
    }
    notes: list[str] = []
    for index in range(config.runs):
        for query in queries:
            mars = mars_query_run(ctx, query, loaded)
            found[query.name]["mars"].append(mars)
            log(f"  {query.name} mars  run {index + 1}: {_line(mars)}")
            try:
                flink = flink_query_run(ctx, settings, query, loaded, log_dir=log_dir)
            except PeerUnavailable as error:
                note(notes, f"Flink SQL not measured: {error}", log)
                continue
            except Exception as error:  # a failing peer must not lose Mars's runs
                note(notes, f"Flink SQL {query.name} failed: {error!r:.300}", log)
                continue
            found[query.name]["flink"].append(flink)
            log(f"  {query.name} flink run {index + 1}: {_line(flink)}")
    return replace(
        preload,
        cores=os.cpu_count() or 1,
        mappers=config.mappers,
        reducers=config.reducers,
        flink_parallelism=settings.flink_parallelism,
        queries={
            q.name: QueryResult(
                title=q.title,
                mars_sql=q.mars_sql(TOPIC),
                flink_sql=q.flink_select,
                expected_rows=loaded.expected.rows(q.name),
                mars=SystemRuns.of(found[q.name]["mars"]),
                flink=SystemRuns.of(found[q.name]["flink"]),
            )
            for q in queries
        },
        notes=notes,
    )


def _preload(ctx: Context, settings: NexmarkSettings) -> tuple[Loaded, NexmarkResult]:
    bench, records, partitions = ctx.bench, settings.records, ctx.config.partitions
    config = NexmarkConfig(count=records, seed=SEED, span_s=SPAN_S)
    bids = generate_bids(config)
    data_end_ms = int(bids.date_time.max()) + 1
    topic = fresh_id(f"{TOPIC}_")  # a topic name the task language reads: no '-'
    ctx.log(f"preloading {records:,} Nexmark bids into topic {topic} ...")
    bench.create_topic(topic, partitions)
    report = produce_bids(
        bench.kafka,
        topic,
        bids,
        partitions=partitions,
        sentinel_ms=data_end_ms + SENTINEL_AFTER_MS,
    )
    started = time.monotonic()
    expected = expected_results(bids)
    oracle_s = time.monotonic() - started
    sample = encode_bids(bids, 0, min(len(bids), 20_000))
    mean_bytes = sum(map(len, sample)) / max(len(sample), 1)
    ctx.log(f"  {report.records_per_s:,.0f} bids/s produced; oracle in {oracle_s:.1f} s")
    loaded = Loaded(topic=topic, records=records, data_end_ms=data_end_ms, expected=expected)
    return loaded, NexmarkResult(
        records=records,
        partitions=partitions,
        span_s=SPAN_S,
        seed=SEED,
        mean_bytes=mean_bytes,
        distinct_times=len(set(bids.date_time.tolist())),
        produce_rate=report.records_per_s,
        oracle_s=oracle_s,
        config={k: getattr(config, k) for k in config.__dataclass_fields__},
    )


def mars_query_run(ctx: Context, query: NexmarkQuery, loaded: Loaded) -> QueryRun:
    bench, config = ctx.bench, ctx.config
    redis = bench.pids("redis")[0]
    with bench.run() as run:
        run.start_mappers(config.mappers)
        run.start_reducers(config.reducers)
        task_id = fresh_id(f"nexmark-{query.name}-")
        collector = bench.read_results(RowCollector, default_output_topic(task_id), count_field="")
        try:
            redis_cpu = cpu_seconds(redis) or 0.0
            started = time.time()
            run.register(query.mars_sql(loaded.topic), task_id=task_id)
            finished = _wait_rows(collector, "mars", query.name, loaded, timeout_s=config.timeout_s)
            figures = run.figures()
            redis_cpu = (cpu_seconds(redis) or 0.0) - redis_cpu
            counters = run.stats()  # late and bad: none with partitions in time order
        finally:
            collector.stop()
    by_role = {role: sum(f.cpu_s or 0.0 for f in fs) for role, fs in figures.items()}
    cpu = sum(by_role.values()) + redis_cpu
    return replace(
        _figures(collector, "mars", query.name, loaded, seconds=finished - started, cpu_s=cpu),
        cpu_by_role_s={**by_role, "redis": redis_cpu},
        records_in=counters.get("records_in", 0),  # the bids + one sentinel per partition
        late=counters.get("late", 0) + counters.get("late_reducer", 0),
        bad=counters.get("bad", 0),
    )


def flink_query_run(
    ctx: Context, settings: NexmarkSettings, query: NexmarkQuery, loaded: Loaded, *, log_dir: Path
) -> QueryRun:
    bench = ctx.bench
    output = fresh_id(f"flink-{query.name}-")
    job = FlinkJsonJob(
        query=flink_query(query),
        bootstrap=bench.bootstrap,
        topic=loaded.topic,
        output=output,
        run_id=output.removeprefix("flink-"),
        parallelism=settings.flink_parallelism,
    )
    collector = bench.read_results(RowCollector, output, count_field="")
    try:
        ran = run_flink_job(
            job,
            log_dir=log_dir,
            log_name="flink-nexmark.log",
            wait=lambda alive: _wait_rows(
                collector,
                "flink",
                query.name,
                loaded,
                timeout_s=ctx.config.timeout_s,
                alive=alive,
            ),
        )
    finally:
        collector.stop()
    return replace(
        _figures(collector, "flink", query.name, loaded, seconds=ran.seconds, cpu_s=ran.cpu_s),
        startup_s=ran.startup_s,
        peak_rss_mb=ran.peak_rss_mb,
        settings=ran.settings,
    )


def _wait_rows(
    collector: RowCollector,
    system: str,
    query: str,
    loaded: Loaded,
    *,
    timeout_s: float,
    alive: Callable[[], bool] = lambda: True,
) -> float:
    """The wall time the last of the oracle's number of data rows arrived; NaN at the
    timeout or when the system stopped first. Only the rows new since the last look are
    read, so that watching costs the measured systems little CPU."""
    target = loaded.expected.rows(query)
    counted = last = 0.0
    seen = 0
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = collector.taken()[seen:]
        seen += len(rows)
        for row, arrival in rows:
            keyed = keyed_rows(system, query, [row])
            if data_rows(query, keyed, data_end_ms=loaded.data_end_ms):
                counted += 1
                last = max(last, arrival)
        if counted >= target:
            return last
        if not alive():
            break
        time.sleep(0.2)
    return math.nan


def _figures(
    collector: RowCollector,
    system: str,
    query: str,
    loaded: Loaded,
    *,
    seconds: float,
    cpu_s: float,
) -> QueryRun:
    keyed = keyed_rows(system, query, [row for row, _ in collector.taken()])
    verdict = check(query, data_rows(query, keyed, data_end_ms=loaded.data_end_ms), loaded.expected)
    complete = not math.isnan(seconds)
    return QueryRun(
        seconds=seconds,
        complete=complete,
        records_per_s=loaded.records / seconds if complete else math.nan,
        cpu_s=cpu_s,
        records_per_cpu_s=loaded.records / cpu_s if complete and cpu_s > 0 else math.nan,
        check=verdict.as_dict(),
    )


def _line(run: QueryRun) -> str:
    verdict = "exact" if run.check["exact"] else f"NOT EXACT ({run.check['first_problem']})"
    return (
        f"{run.seconds:.1f} s, {run.records_per_s:,.0f} rec/s, "
        f"{run.records_per_cpu_s:,.0f} rec/CPU-s, {verdict}"
    )


@dataclass(frozen=True, slots=True)
class NexmarkSettings:
    records: int = 1_000_000  # bids over 30 min of event time (`--nexmark-records`)
    flink_parallelism: int = 2  # one task slot per core
    QUICK: ClassVar[dict[str, object]] = {"records": 100_000}


class Nexmark(Base[NexmarkSettings, NexmarkResult]):
    """Experiment 12 (the module's docstring)."""

    name = "nexmark"
    title = "experiment 12, Nexmark q5, q7, q11 in Mars and Flink SQL against a DuckDB oracle"
    sections = (Section(12, NEXMARK_HEADING),)
    settings_type = NexmarkSettings
    result_type = NexmarkResult

    def run(self, ctx: Context, settings: NexmarkSettings) -> NexmarkResult:
        return nexmark_experiment(ctx, settings)

    def report(self, result: NexmarkResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (nexmark_section(result),) if result else self.not_run()
