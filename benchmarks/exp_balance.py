"""Experiment 9: the skewed workload with and without load moves, in one invocation.

Four tasks over one Zipf-skewed stream (`zipf_s` 1.2, tests/integration/test_load_balancing.py's
workload): GROUP BY (sip, type), sip, dport and type, `buckets` buckets each, so their units cost
very differently. Two variants, each on fresh processes under its own ZooKeeper root (mappers +
reducers, same machine, same data): *unbalanced* (`MARS_BALANCE__ENABLED=false`: placement by
unit count only) first, then *balanced* (load moves on, with a short interval and cooldown so
they settle within the run). In each variant:

1. throughput: the four tasks registered over a preloaded skewed topic (a sentinel per partition
   a day after the data closes every data window); from registering until every data window of
   every task is readable (read_committed), as experiment 3 does for one task;
2. those tasks deleted, four fresh ones (`window_s` windows) over a fresh topic and paced live
   traffic (event time = wall clock) at half the unbalanced variant's throughput: `settle_s`
   seconds for the moves to settle, then `measure_s` seconds whose windows are measured as in
   experiment 4 (the last result row's arrival minus the watermark's passage of the window's
   end, derived from the source data), for every task.

Throughout, once a second: the assignment (ZooKeeper) and each unit's published load (Redis),
which give the reducers' loads, the largest unit and the units placed by load
(`benchmarks.balance_figures`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from benchmarks.balance_figures import (
    LatencyPhase,
    PlacementLook,
    ThroughputPhase,
    Variant,
    balance_ratios,
    move_times,
    phase_placement,
)
from benchmarks.exp_latency import source_passages, start_traffic, window_ends
from benchmarks.experiment import Base, Context, Log, Section
from benchmarks.harness import BenchCluster, Run, fresh_id
from benchmarks.report_balance import BALANCE_HEADING, balance_section
from benchmarks.results_reader import ResultReader
from benchmarks.stats import percentile
from benchmarks.watermark_times import window_latencies
from benchmarks.workload import Dataset, csv_options, preload
from mars.registry import TaskRegistry
from mars.registry.membership import list_members
from mars.registry.paths import ZkPaths
from mars.registry.unit_assignment import read_assignment
from mars.registry.units import Unit
from mars.store.reducer_stats import figure_float
from mars.tasks.spec import default_output_topic

# task label -> (group columns, aggregates); the count is `n` in every task
BALANCE_TASKS: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "siptype": (("sip", "type"), {"n": "count(*)"}),
    "sip": (("sip",), {"n": "count(*)", "total": "sum(bytes)"}),
    "dport": (("dport",), {"n": "count(*)"}),
    "type": (("type",), {"n": "count(*)"}),
}
# the unbalanced variant first: its throughput sets the paced rate of both
VARIANTS: dict[str, dict[str, str]] = {
    "unbalanced": {"MARS_BALANCE__ENABLED": "false"},
    "balanced": {
        "MARS_BALANCE__ENABLED": "true",
        "MARS_BALANCE__INTERVAL_S": "2",
        "MARS_BALANCE__UNIT_COOLDOWN_S": "6",
        "MARS_BALANCE__MIN_GAIN": "0.02",
    },
}
THROUGHPUT_WINDOW_S = 60


@dataclass(frozen=True, slots=True, kw_only=True)
class BalancePlan:
    """What experiment 9 runs in each variant (its settings: defaults for a full run,
    `QUICK` for `--quick`)."""

    records: int = 1_200_000  # about 30 s end to end: long enough for moves
    mappers: int = 2
    reducers: int = 3
    settle_s: int = 30
    measure_s: int = 45
    buckets: int = 8
    zipf_s: float = 1.2
    partitions: int = 4
    span_s: int = 600
    window_s: int = 2
    timeout_s: float = 240.0
    fallback_rate: float = 5000.0  # paced rate when the unbalanced throughput is unknown
    QUICK: ClassVar[dict[str, object]] = {"records": 100_000, "settle_s": 15, "measure_s": 15}


def task_sql(topic: str, label: str, *, window_s: int, buckets: int, idle: str) -> str:
    """One of the four tasks over CSV tuples of `topic`."""
    groups, aggregates = BALANCE_TASKS[label]
    select = ", ".join([*groups, *(f"{sql} AS {name}" for name, sql in aggregates.items())])
    return (
        f"SELECT {select} FROM {topic} GROUP BY {', '.join(groups)} WINDOWING {window_s} s "
        f"{csv_options(idle=idle, more=f'buckets={buckets}')}"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSet:
    """The four tasks of one phase: label -> task id, a reader on each result topic, and when
    the first was registered (wall clock)."""

    ids: dict[str, str]
    readers: dict[str, ResultReader]
    registered_s: float

    @property
    def labels(self) -> dict[str, str]:
        return {task_id: label for label, task_id in self.ids.items()}

    def completion_s(self, *, before_ms: int) -> float:
        """When the last counted row of any task arrived (wall clock)."""
        return max(r.completion_time_s(before_ms=before_ms) for r in self.readers.values())


@contextmanager
def skewed_tasks(
    bench: BenchCluster, run: Run, topic: str, plan: BalancePlan, *, window_s: int, idle: str
) -> Iterator[TaskSet]:
    """The four tasks registered over `topic` (readers started first); at exit the readers
    stop and the tasks are deleted (their units leave the assignment)."""
    ids, readers, registered = {}, {}, []
    registry = TaskRegistry(bench.zk, root=run.root)
    try:
        for label, (groups, _) in BALANCE_TASKS.items():
            ids[label] = fresh_id(f"bal-{label}-")
            output = default_output_topic(ids[label])
            readers[label] = bench.read_results(
                ResultReader, output, count_field="n", key_fields=groups
            )
        sqls = {
            label: task_sql(topic, label, window_s=window_s, buckets=plan.buckets, idle=idle)
            for label in ids
        }
        registered_s = time.time()
        for label, task_id in ids.items():
            run.register(sqls[label], task_id=task_id)
            registered.append(task_id)
        yield TaskSet(ids=ids, readers=readers, registered_s=registered_s)
    finally:
        for reader in readers.values():
            reader.stop()
        for task_id in registered:
            registry.delete(task_id)
            bench.store.delete_task(task_id)


@dataclass(slots=True)
class PlacementWatch:
    """Looks at the assignment and the units' loads once a second in a thread."""

    bench: BenchCluster
    run: Run
    interval_s: float = 1.0
    looks: list[PlacementLook] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> PlacementWatch:
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.looks.append(self.look())
            except Exception:  # a look missed (a node rewritten meanwhile) is not a failure
                continue

    def look(self) -> PlacementLook:
        paths = ZkPaths(root=self.run.root)
        assignment = read_assignment(self.bench.zk, paths.assignment, lenient=True)
        units = dict(assignment.units) if assignment else {}
        loads: dict[Unit, float] = {}
        for task in {unit.task_id for unit in units}:
            for bucket, figures in self.bench.store.reducer_stats.units(task).items():
                load = figure_float(figures, "load")
                if load is not None and Unit(task, bucket) in units:
                    loads[Unit(task, bucket)] = load
        return PlacementLook(
            t=time.time(),
            units=units,
            moves=dict(assignment.moves) if assignment else {},
            generation=assignment.generation if assignment else 0,
            members=tuple(list_members(self.bench.zk, paths)),
            loads=loads,
        )


def throughput_phase(
    bench: BenchCluster, run: Run, data: Dataset, plan: BalancePlan
) -> ThroughputPhase:
    """The four tasks over the preloaded topic: from registering until every data window of
    every task is readable."""
    before_ms = data.window_ends_s * 1000  # every data window starts before; the sentinel's not
    with ExitStack() as stack:
        watch = stack.enter_context(PlacementWatch(bench=bench, run=run))
        tasks = stack.enter_context(
            skewed_tasks(bench, run, data.topic, plan, window_s=THROUGHPUT_WINDOW_S, idle="10 s")
        )
        started = tasks.registered_s
        complete = all(
            reader.wait_total(
                data.records,
                before_ms=before_ms,
                timeout_s=max(1.0, started + plan.timeout_s - time.time()),
            )
            for reader in tasks.readers.values()
        )
        finished = tasks.completion_s(before_ms=before_ms)
        figures = run.figures()
        labels = tasks.labels
        duplicates = sum(reader.duplicates() for reader in tasks.readers.values())
    seconds = finished - started if complete else math.nan
    reducer_cpu = [f.cpu_s or 0.0 for f in figures["reducers"]]
    return ThroughputPhase(
        seconds=seconds,
        records_per_s=data.records / seconds if complete else math.nan,
        complete=complete,
        duplicates=duplicates,
        mapper_cpu_s=sum(f.cpu_s or 0.0 for f in figures["mappers"]),
        reducer_cpu_s=reducer_cpu,
        # the second half of the run: what the placement had settled to
        placement=phase_placement(
            watch.looks, labels=labels, since=started + seconds / 2, until=finished
        )
        if complete
        else {"looks": 0},
        move_times_s=move_times(watch.looks, since=started),
    )


def latency_phase(bench: BenchCluster, run: Run, plan: BalancePlan, *, rate: float) -> LatencyPhase:
    """Paced skewed traffic into four fresh tasks: settle, then measure every task's windows."""
    topic = fresh_id("skew_")
    bench.create_topic(topic, plan.partitions)
    duration_s = plan.settle_s + plan.measure_s
    with ExitStack() as stack:
        watch = stack.enter_context(PlacementWatch(bench=bench, run=run))
        tasks = stack.enter_context(
            skewed_tasks(bench, run, topic, plan, window_s=plan.window_s, idle="60 s")
        )
        traffic = start_traffic(
            bench.kafka, topic, rate=rate, duration_s=duration_s, zipf_s=plan.zipf_s
        )
        stack.callback(traffic.stop)
        traffic.join()
        ended = time.time()
        time.sleep(plan.window_s + 5)  # the last windows close
        arrivals = {
            label: {start: seen.last_arrival_s for start, seen in reader.snapshot().items()}
            for label, reader in tasks.readers.items()
        }
        labels = tasks.labels
    measured_from = traffic.start_s + plan.settle_s
    passage = source_passages(
        bench.kafka,
        topic,
        ends_ms=window_ends(traffic.start_s, duration_s, plan.window_s),
    )
    per_task = {
        label: window_latencies(
            found, passage, window_ms=plan.window_s * 1000, from_ms=measured_from * 1000
        )
        for label, found in arrivals.items()
    }
    latencies = [value for found in per_task.values() for value in found]
    return LatencyPhase(
        rate=rate,
        windows=len(latencies),
        p50_s=percentile(latencies, 50),
        p99_s=percentile(latencies, 99),
        max_s=max(latencies, default=math.nan),
        by_task={
            label: {"windows": len(found), "p99_s": percentile(found, 99)}
            for label, found in per_task.items()
        },
        placement=phase_placement(watch.looks, labels=labels, since=measured_from, until=ended),
        move_times_s=move_times(watch.looks, since=traffic.start_s),
    )


def variant_run(
    bench: BenchCluster,
    data: Dataset,
    plan: BalancePlan,
    *,
    env: Mapping[str, str],
    rate: float | None,
    log: Log,
) -> Variant:
    """One variant on fresh processes: throughput, then latency at `rate` (None: half the
    throughput just measured)."""
    with bench.run(extra_env=dict(env)) as run:
        run.start_mappers(plan.mappers)
        run.start_reducers(plan.reducers)
        throughput = throughput_phase(bench, run, data, plan)
        log(
            f"    throughput {throughput.records_per_s:,.0f} records/s "
            f"({throughput.seconds:.1f} s), {throughput.placement.get('moves_at_end', 0)} "
            "units placed by load"
        )
        if rate is None:
            rate = paced_rate(throughput.records_per_s, fallback=plan.fallback_rate)
        latency = latency_phase(bench, run, plan, rate=rate)
        log(
            f"    latency at {rate:,.0f} records/s: p50 {latency.p50_s:.3f} s, "
            f"p99 {latency.p99_s:.3f} s over {latency.windows} windows"
        )
    return Variant(env=dict(env), throughput=throughput, latency=latency)


def paced_rate(records_per_s: float, *, fallback: float) -> float:
    """Half a measured maximum, rounded to 100 records/s (`fallback` when not measured)."""
    if math.isnan(records_per_s) or records_per_s <= 0:
        return fallback
    return max(100.0, round(records_per_s / 2, -2))


def balance_experiment(
    bench: BenchCluster, plan: BalancePlan, *, log: Log = print
) -> BalanceResult:
    """Both variants on the same preloaded skewed topic, the unbalanced one first."""
    data = preload(
        bench.kafka,
        topic=fresh_id("skewed_"),
        records=plan.records,
        partitions=plan.partitions,
        span_s=plan.span_s,
        zipf_s=plan.zipf_s,
    )
    log(f"  preloaded {data.records:,} skewed records ({data.mbytes:.1f} MB)")
    variants: dict[str, Variant] = {}
    rate: float | None = None
    for name, env in VARIANTS.items():
        log(f"  {name}:")
        variants[name] = variant_run(bench, data, plan, env=env, rate=rate, log=log)
        rate = variants[name].latency.rate
    return BalanceResult(
        **asdict(plan),
        throughput_window_s=THROUGHPUT_WINDOW_S,
        dataset={**asdict(data), "mbytes": data.mbytes},
        variants=variants,
        ratios=balance_ratios(variants["balanced"], variants["unbalanced"]),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class BalanceResult(BalancePlan):
    """Experiment 9: its plan, the preloaded skewed topic, both variants (`unbalanced`
    first) and the balanced one's figures over the unbalanced one's."""

    throughput_window_s: int = THROUGHPUT_WINDOW_S
    dataset: dict[str, Any] = field(default_factory=dict)
    variants: dict[str, Variant] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)


class Balance(Base[BalancePlan, BalanceResult]):
    """Experiment 9 (the module's docstring)."""

    name = "balance"
    title = "experiment 9, skewed tasks with and without load moves"
    sections = (Section(9, BALANCE_HEADING),)
    settings_type = BalancePlan
    result_type = BalanceResult

    def run(self, ctx: Context, settings: BalancePlan) -> BalanceResult:
        return balance_experiment(ctx.bench, settings, log=ctx.log)

    def report(self, result: BalanceResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (balance_section(result),) if result else self.not_run()
