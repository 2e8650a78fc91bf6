"""Experiment 16: the reducer at 8,000 and 300,000 groups per window (3,000,000 opt-in).

Per group count G: `records` JSON tuples whose `sip` takes G values, all in one 300 s window,
preloaded into a topic of their own with one later sentinel per partition (it closes the
window). `SELECT sip, count(*), sum(bytes) FROM T GROUP BY sip WINDOWING 300 s` (the generator
varies the cardinality of `sip`; its `dip` pool is fixed at 4,096) on the local cluster
(2 mappers, 2 reducers), once with the reducer's Python open-window state and
once with the columnar one (`reducer.columnar_state`), each from fresh processes: records/s
from registration to the last result row, the reducers' peak RSS less their idle RSS over
the window's groups (bytes per open group), Redis's peak. Checkpoint duration and bytes come
from `benchmarks.group_scale_state` (the state alone, in a process of its own, at G groups):
the cluster's owners checkpoint every 2 s, and their figures are Prometheus histograms.

Opt-in sizes: `MARS_GROUP_SCALE_GROUPS=8000,300000,3000000` (and `MARS_GROUP_SCALE_RECORDS`).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from confluent_kafka import Producer

from benchmarks.experiment import Base, Context, Section
from benchmarks.harness import fresh_id
from benchmarks.procstat import rss_mb
from benchmarks.report_format import fmt
from benchmarks.results_reader import ResultReader
from benchmarks.subprocesses import spawn_module
from benchmarks.workload import KEEP_RECORDS
from devtools.gen.config import Encoding, GeneratorConfig
from devtools.gen.produce import produce
from mars.clients.kafka_config import admin_client, client_config
from mars.heap import POLARS_ALLOCATOR_OPTIONS
from mars.tasks.spec import default_output_topic
from mars.tasks.topics import Replication, TopicPlan, ensure_topics

WINDOW_S = 300
START_S = 1_700_000_100  # a multiple of 300: the data fills one window
STATES = ("python", "columnar")
HEADING = "## 16. Groups per window: the reducer's open-window state at scale"


def _env_ints(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    value = os.environ.get(name)
    return tuple(int(v) for v in value.split(",")) if value else default


@dataclass(frozen=True, slots=True)
class GroupScaleSettings:
    groups: tuple[int, ...] = _env_ints("MARS_GROUP_SCALE_GROUPS", (8_000, 300_000))
    records: int = _env_ints("MARS_GROUP_SCALE_RECORDS", (1_000_000,))[0]
    mappers: int = 2
    reducers: int = 2  # two owners' memory and merges, as in a deployment
    QUICK: ClassVar[dict[str, object]] = {"records": 200_000, "groups": (8_000, 100_000)}


@dataclass(slots=True, kw_only=True)
class GroupScaleRun:
    state: str
    groups: int  # the window's distinct keys
    records: int
    seconds: float = math.nan
    records_per_s: float = math.nan
    complete: bool = False
    reducer_idle_rss_mb: float = math.nan
    reducer_peak_rss_mb: float = math.nan
    bytes_per_group: float = math.nan
    redis_peak_mb: float = math.nan
    checkpoint_s: float = math.nan
    checkpoint_bytes: int = 0
    delta_s: float = math.nan  # a delta checkpoint after one more data set (Python state)
    delta_bytes: int = 0
    merge_groups_per_s: float = math.nan  # the state alone
    state_bytes_per_group: float = math.nan  # the state alone


@dataclass(slots=True, kw_only=True)
class GroupScaleResult:
    mappers: int = 0
    reducers: int = 0
    runs: list[GroupScaleRun] = field(default_factory=list)


def preload_json(ctx: Context, topic: str, *, records: int, groups: int) -> None:
    bench = ctx.bench
    plan = TopicPlan(name=topic, partitions=ctx.config.partitions, config=KEEP_RECORDS)
    ensure_topics(admin_client(bench.kafka), [plan], Replication.of(bench.kafka))
    config = GeneratorConfig(
        count=records,
        seed=11,
        start_s=START_S,
        span_s=WINDOW_S,
        sip_cardinality=groups,
        encoding=Encoding.JSON,
    )
    report = produce(bench.kafka, topic, config)
    ctx.log(
        f"  preloaded {records:,} JSON records ({groups:,} sips) at {report.records_per_s:,.0f}/s"
    )
    producer = Producer(client_config(bench.kafka, {}))
    sentinel = json.dumps({"timestamp": START_S + 3 * WINDOW_S, "sip": "0.0.0.0", "bytes": 0})
    for partition in range(ctx.config.partitions):
        producer.produce(topic, sentinel.encode(), b"sentinel", partition)
    if producer.flush(30) != 0:
        raise RuntimeError(f"sentinels not delivered to {topic}")


def cluster_run(
    ctx: Context, settings: GroupScaleSettings, topic: str, *, state: str, groups: int
) -> GroupScaleRun:
    bench, config, records = ctx.bench, ctx.config, settings.records
    env = {"MARS_REDUCER__COLUMNAR_STATE": "true" if state == "columnar" else "false"}
    found = GroupScaleRun(state=state, groups=groups, records=records)
    with bench.run(extra_env=env) as run:
        run.start_mappers(settings.mappers)
        reducers = run.start_reducers(settings.reducers)
        time.sleep(2.0)  # imports done: the idle figure
        found.reducer_idle_rss_mb = sum(rss_mb(h.pid) or 0.0 for h in reducers)
        task_id = fresh_id("groups-")
        reader = bench.read_results(
            ResultReader, default_output_topic(task_id), key_fields=("sip",)
        )
        sql = (
            f"SELECT sip, count(*), sum(bytes) FROM {topic} GROUP BY sip "
            f"WINDOWING {WINDOW_S} s WITH (idle_timeout='30 s')"
        )
        with bench.redis_sampler() as redis_peak:
            started = time.time()
            spec = run.register(sql, task_id=task_id)
            assert spec.output_topic == reader.topic, (spec.output_topic, reader.topic)
            before = (START_S + WINDOW_S) * 1000
            found.complete = reader.wait_total(
                records, before_ms=before, timeout_s=config.timeout_s
            )
            figures = run.figures()["reducers"]
        reader.stop()
        found.groups = len({key for key in reader.keys_seen if key != ("0.0.0.0",)})
    if found.complete:
        found.seconds = reader.completion_time_s(before_ms=before) - started
        found.records_per_s = records / found.seconds
    peaks = [f.peak_rss_mb for f in figures]
    if None not in peaks:
        found.reducer_peak_rss_mb = sum(p or 0.0 for p in peaks)
        grown = found.reducer_peak_rss_mb - found.reducer_idle_rss_mb
        found.bytes_per_group = grown * 1024**2 / max(found.groups, 1)
    found.redis_peak_mb = redis_peak.peak_bytes / 1024**2
    return found


def state_figures(found: GroupScaleRun) -> None:
    """The state alone at the run's groups (`benchmarks.group_scale_state`)."""
    process = spawn_module(
        "benchmarks.group_scale_state",
        ["--groups", str(found.groups), "--state", found.state],
        env={"_RJEM_MALLOC_CONF": POLARS_ALLOCATOR_OPTIONS},  # as `mars reducer` has it
    )
    out, _ = process.communicate(timeout=1800)
    figures = json.loads(out.strip().splitlines()[-1])
    found.checkpoint_s = figures["checkpoint_s"]
    found.checkpoint_bytes = figures["checkpoint_bytes"]
    found.delta_s = figures["delta_s"]
    found.delta_bytes = figures["delta_bytes"]
    found.merge_groups_per_s = figures["groups_merged_per_s"]
    found.state_bytes_per_group = figures["bytes_per_group"]


def group_scale_experiment(ctx: Context, settings: GroupScaleSettings) -> GroupScaleResult:
    result = GroupScaleResult(mappers=settings.mappers, reducers=settings.reducers)
    for groups in settings.groups:
        topic = "GS" + fresh_id(f"{groups}_").replace("-", "_")
        preload_json(ctx, topic, records=settings.records, groups=groups)
        for state in STATES:
            found = cluster_run(ctx, settings, topic, state=state, groups=groups)
            state_figures(found)
            ctx.log(
                f"  {state} state, {found.groups:,} groups: {fmt(found.records_per_s)} records/s, "
                f"{fmt(found.bytes_per_group)} B per open group (reducers' peak "
                f"{fmt(found.reducer_peak_rss_mb)} MiB, idle {fmt(found.reducer_idle_rss_mb)}), "
                f"Redis peak {fmt(found.redis_peak_mb, '.1f')} MiB, checkpoint "
                f"{fmt(found.checkpoint_s, '.3f')} s {fmt(found.checkpoint_bytes)} B"
            )
            result.runs.append(found)
    return result


def group_scale_section(result: GroupScaleResult) -> str:
    rows = [
        f"| {run.state} | {fmt(run.groups)} | {fmt(run.records_per_s)} "
        f"| {fmt(run.reducer_peak_rss_mb)} ({fmt(run.reducer_idle_rss_mb)} idle) "
        f"| {fmt(run.bytes_per_group)} | {fmt(run.redis_peak_mb, '.1f')} "
        f"| {fmt(run.merge_groups_per_s)} | {fmt(run.state_bytes_per_group)} "
        f"| {fmt(run.checkpoint_s, '.3f')} | {fmt(run.checkpoint_bytes)} "
        f"| {fmt(run.delta_s, '.3f')} | {fmt(run.delta_bytes)} |"
        for run in result.runs
    ]
    ratios = []
    for state in STATES:
        rates = {run.groups: run.records_per_s for run in result.runs if run.state == state}
        if len(rates) >= 2:
            low, high = min(rates), max(rates)
            ratios.append(
                f"{state}: {fmt(rates[high] / rates[low], '.2f')}x at {fmt(high)} groups "
                f"vs {fmt(low)}"
            )
    return "\n".join(
        [
            f"`mars bench --experiments group_scale`: {result.mappers} mappers, "
            f"{result.reducers} reducers, JSON input, one 300 s window "
            "(see `benchmarks/exp_group_scale.py`).",
            "",
            "| state | groups | records/s | reducers' peak RSS MiB | B per open group "
            "| Redis peak MiB | state alone: groups merged/s | state alone: B per group "
            "| checkpoint s | checkpoint B | delta checkpoint s | delta checkpoint B |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            "Throughput ratio (most groups over fewest): " + "; ".join(ratios) + ".",
        ]
    )


class GroupScale(Base[GroupScaleSettings, GroupScaleResult]):
    """Experiment 16 (the module's docstring)."""

    name = "group_scale"
    title = "experiment 16, the reducer at hundreds of thousands of groups per window"
    sections = (Section(16, HEADING),)
    settings_type = GroupScaleSettings
    result_type = GroupScaleResult

    def run(self, ctx: Context, settings: GroupScaleSettings) -> GroupScaleResult:
        return group_scale_experiment(ctx, settings)

    def report(self, result: GroupScaleResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (group_scale_section(result),) if result else self.not_run()
