"""Experiment 8: how fast a pull query answers, what it costs, and whether querying
slows the pipeline, while live traffic flows into long open windows.

Per state size (`sips` x 8 types groups): a fresh task `SELECT sip, type, count(*) ... GROUP BY
sip, type WINDOWING 1 h` (experiment 7's query) with its own mappers, reducer and `mars api`,
and paced traffic (event time = wall clock) from the load generator for the whole run. Once the
open window holds nearly every group (warm-up), three phases follow on the same traffic:

1. no queries, `baseline_s` seconds: the pipeline's records/s, its reducers' commits and the
   API's idle CPU;
2. `queries` pull queries of one group (`group.sip=..&group.type=..&window_start=..`) through
   real HTTP, paced at `query_rate` per second;
3. up to `queries` pull queries of the whole open window (`window_start=..` only), paced the
   same, for at most `whole_cap_s` seconds (a large window answers slower than the pace).

Each query's latency runs from sending the request until its whole body arrived (one kept-alive
connection). Cost per query: the API process's CPU seconds (/proc) and Redis's output bytes
(INFO `total_net_output_bytes`), each minus the same rate in phase 1; and the bytes of the
checkpoints a query reads (HSTRLEN of every unit's committed checkpoint). Commits: the
reducers' `mars_reducer_commit_duration_seconds` histogram for the task, read from their
Prometheus `/metrics` at the phase boundaries.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

import httpx

from benchmarks.exp_latency import LiveTask, live_task
from benchmarks.exp_state import state_sql
from benchmarks.experiment import Base, Context, Log, Section
from benchmarks.harness import BenchCluster
from benchmarks.procstat import cpu_seconds
from benchmarks.pull_figures import (
    Answer,
    Snapshot,
    answers_summary,
    commit_totals,
    impact,
    per_query_cost,
    phase_figures,
)
from benchmarks.report_pull import PULL_HEADING, pull_section
from devtools.gen.fields import TYPES
from mars.store.keys import TaskKeys
from mars.store.reducer_stats import chain_fields

PULL_WINDOW_S = 3600
Params = dict[str, str | int]


class PullClient:
    """Pull queries of one task through the API's HTTP, timed."""

    def __init__(self, client: httpx.Client, task_id: str) -> None:
        self._client = client
        self._path = f"/tasks/{task_id}/windows"

    def ask(self, params: Params) -> tuple[Answer, list[dict[str, Any]]]:
        started = time.perf_counter()
        response = self._client.get(self._path, params=params)
        latency_s = time.perf_counter() - started
        response.raise_for_status()
        body = response.json()
        rows = [row for row in body["rows"] if not row.get("final")]
        answer = Answer(
            latency_s=latency_s,
            body_bytes=len(response.content),
            rows=len(rows),
            staleness_ms=body.get("staleness_ms"),
        )
        return answer, rows

    def paced(
        self, params_of: Callable[[int], Params], *, count: int, rate: float, cap_s: float
    ) -> tuple[list[Answer], float]:
        """`count` queries at `rate` per second (at once when one is late), stopping after
        `cap_s`; the answers and the seconds they took."""
        started = time.perf_counter()
        answers = []
        for index in range(count):
            now = time.perf_counter()
            if now - started >= cap_s:
                break
            time.sleep(max(0.0, started + index / rate - now))
            answers.append(self.ask(params_of(index))[0])
        return answers, time.perf_counter() - started


class PhaseMeter:
    """Snapshots of the run's cumulative figures (`pull_figures.Snapshot`)."""

    def __init__(self, live: LiveTask, *, api_pid: int, client: httpx.Client) -> None:
        self._live = live
        self._api_pid = api_pid
        self._client = client
        run = live.run
        self._pipeline = [handle.pid for handle in run.mappers + run.reducers]
        self._metrics = run.metrics_urls(run.reducers)

    def snapshot(self) -> Snapshot:
        commit_s, commits, buckets = 0.0, 0, Counter[float]()
        for url in self._metrics:
            found = commit_totals(self._client.get(url).text, self._live.task_id)
            commit_s, commits = commit_s + found[0], commits + found[1]
            buckets.update(found[2])
        redis = self._live.bench.redis
        return Snapshot(
            t=time.monotonic(),
            records_in=self._live.run.stats().get("records_in", 0),
            api_cpu_s=cpu_seconds(self._api_pid) or 0.0,
            pipeline_cpu_s=sum(cpu_seconds(pid) or 0.0 for pid in self._pipeline),
            redis_out_bytes=int(redis.info("stats")["total_net_output_bytes"]),
            commit_s=commit_s,
            commits=commits,
            commit_buckets=dict(buckets),
        )


def checkpoint_bytes(live: LiveTask) -> int:
    """The bytes of every unit's committed checkpoint: what one pull query reads of them."""
    store, keys = live.bench.store, TaskKeys(live.task_id)
    total = 0
    for bucket, figures in store.reducer_stats.units(live.task_id).items():
        for name in chain_fields(figures.get("checkpoint")):
            total += int(live.bench.redis.hstrlen(keys.checkpoints(bucket), name))
    return total


def warm_up(
    pull: PullClient, *, groups: int, cap_s: float, share: float = 0.9
) -> tuple[int, list[dict[str, Any]]]:
    """Until the open window holds `share` of the `groups` and every unit has a checkpoint
    (or `cap_s`); the window's start and its rows at the last look."""
    deadline = time.monotonic() + cap_s
    window_start = int(time.time()) // PULL_WINDOW_S * PULL_WINDOW_S * 1000
    rows: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        answer, rows = pull.ask({"window_start": window_start})
        if answer.staleness_ms is not None and answer.rows >= share * groups:
            break
        time.sleep(1.0)
    return window_start, rows


@dataclass(frozen=True, slots=True, kw_only=True)
class PullPlan:
    """What experiment 8 does at each state size (`sips` x 8 types groups): the traffic,
    the queries and their pace, the phase lengths, and how many mappers and reducers run
    (its settings: defaults for a full run, `QUICK` for `--quick`; the processes are the
    invocation's)."""

    sips: tuple[int, ...] = (250, 2500)  # x 8 types: 2,000 and 20,000 open groups
    rate: float = 4000.0
    queries: int = 200
    query_rate: float = 20.0
    baseline_s: float = 10.0
    mappers: int = 2
    reducers: int = 1
    warmup_cap_s: float = 30.0
    whole_cap_s: float = 20.0
    QUICK: ClassVar[dict[str, object]] = {"queries": 50, "baseline_s": 5.0}

    @property
    def traffic_s(self) -> int:
        """Long enough for the longest warm-up and every phase, with a margin."""
        phases = self.baseline_s + self.queries / self.query_rate + self.whole_cap_s
        return int(self.warmup_cap_s + phases + 15)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRun:
    """One state size: its groups, and per phase (`no_queries`, then one per query kind)
    its figures (`pull_figures.phase_figures`), per query kind its answers and cost
    (`answers_summary`, `per_query_cost`), and each query phase's `impact` on the pipeline."""

    sips: int = 0
    groups: int = 0
    open_groups_at_start: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    queries: dict[str, dict[str, float]] = field(default_factory=dict)
    impact: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class PullResult(PullPlan):
    """Experiment 8: its plan, the window length and each state size's run (`by_groups`,
    keyed by the number of groups)."""

    window_s: int = PULL_WINDOW_S
    by_groups: dict[str, PullRun] = field(default_factory=dict)


def pull_run(bench: BenchCluster, plan: PullPlan, *, sips: int) -> PullRun:
    """One state size: fresh task, processes and API, traffic throughout, the three phases."""
    groups = sips * len(TYPES)
    with ExitStack() as stack:
        live = stack.enter_context(
            live_task(
                bench,
                window_s=PULL_WINDOW_S,
                mappers=plan.mappers,
                reducers=plan.reducers,
                prefix="pull",
                query=lambda topic: state_sql(topic, window_s=PULL_WINDOW_S),
            )
        )
        api, url = live.run.start_api()
        client = stack.enter_context(httpx.Client(base_url=url, timeout=60.0))
        traffic = live.start_traffic(rate=plan.rate, duration_s=plan.traffic_s, sips=sips)
        stack.callback(traffic.stop)
        pull = PullClient(client, live.task_id)
        window_start, rows = warm_up(pull, groups=groups, cap_s=plan.warmup_cap_s)
        keys = [(str(row["sip"]), str(row["type"])) for row in rows]
        choose = random.Random(sips).choice

        def one_group(_: int) -> Params:
            sip, kind = choose(keys)
            return {"group.sip": sip, "group.type": kind, "window_start": window_start}

        meter = PhaseMeter(live, api_pid=api.pid, client=client)
        marks = [meter.snapshot()]
        time.sleep(plan.baseline_s)
        marks.append(meter.snapshot())
        count, rate = plan.queries, plan.query_rate
        one, one_s = pull.paced(one_group, count=count, rate=rate, cap_s=3 * count / rate)
        marks.append(meter.snapshot())
        read_bytes = checkpoint_bytes(live)
        whole, whole_s = pull.paced(
            lambda _: {"window_start": window_start}, count=count, rate=rate, cap_s=plan.whole_cap_s
        )
        marks.append(meter.snapshot())
        read_bytes = (read_bytes + checkpoint_bytes(live)) // 2
    return run_summary(
        sips=sips,
        groups=groups,
        open_groups=len(rows),
        marks=marks,
        answers={"one_group": (one, one_s), "whole_window": (whole, whole_s)},
        checkpoint_bytes=read_bytes,
    )


def run_summary(
    *,
    sips: int,
    groups: int,
    open_groups: int,
    marks: Sequence[Snapshot],
    answers: dict[str, tuple[list[Answer], float]],
    checkpoint_bytes: int,
) -> PullRun:
    """One state size's results (pure): the phases between the snapshots `marks` (the first
    one without queries, then one per entry of `answers`: its answers and their seconds),
    each query kind's summary and cost, and each query phase's impact on the pipeline."""
    phases = {
        name: phase_figures(before, after)
        for name, before, after in zip(("no_queries", *answers), marks[:-1], marks[1:], strict=True)
    }
    queries = {
        name: {
            **answers_summary(found, seconds=seconds),
            **per_query_cost(phases[name], phases["no_queries"], queries=len(found)),
            "checkpoint_bytes": checkpoint_bytes,
        }
        for name, (found, seconds) in answers.items()
    }
    return PullRun(
        sips=sips,
        groups=groups,
        open_groups_at_start=open_groups,
        phases=phases,
        queries=queries,
        impact={name: impact(phases, name) for name in answers},
    )


def pull_experiment(bench: BenchCluster, plan: PullPlan, *, log: Log = print) -> PullResult:
    """Every state size once (a fresh task and processes each)."""
    by_groups: dict[str, PullRun] = {}
    for count in plan.sips:
        run = pull_run(bench, plan, sips=count)
        by_groups[str(run.groups)] = run
        one, whole = run.queries["one_group"], run.queries["whole_window"]
        log(
            f"  pull {run.groups:,} groups: one group p50 {one['p50_ms']:.1f} ms, "
            f"p99 {one['p99_ms']:.1f} ms; whole window ({whole['rows']:,.0f} rows) p50 "
            f"{whole['p50_ms']:.1f} ms, p99 {whole['p99_ms']:.1f} ms, "
            f"{whole['queries']} queries"
        )
    return PullResult(**asdict(plan), by_groups=by_groups)


class PullQueries(Base[PullPlan, PullResult]):
    """Experiment 8 (the module's docstring)."""

    name = "pull"
    title = "experiment 8, pull-query latency and cost under live traffic"
    sections = (Section(8, PULL_HEADING),)
    settings_type = PullPlan
    result_type = PullResult

    def run(self, ctx: Context, settings: PullPlan) -> PullResult:
        plan = replace(settings, mappers=ctx.config.mappers, reducers=ctx.config.reducers)
        return pull_experiment(ctx.bench, plan, log=ctx.log)

    def report(self, result: PullResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (pull_section(result),) if result else self.not_run()
