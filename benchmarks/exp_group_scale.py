"""Experiment 16: the reducer at 8,000 and 300,000 groups per window (3,000,000 opt-in).

Per group count G: `records` JSON tuples whose `sip` takes G values, all in one 300 s window,
preloaded into a topic of their own with one later sentinel per partition (it closes the
window). `SELECT sip, count(*), sum(bytes) FROM T GROUP BY sip WINDOWING 300 s` (the generator
varies the cardinality of `sip`; its `dip` pool is fixed at 4,096) on the local cluster
(2 mappers, 2 reducers), once with the reducer's Python open-window state, once with the
columnar one (`reducer.columnar_state`) and once with the columnar one spilling to disk past
`spill_budget_bytes` per owner (`reducer.state_budget_bytes`: the cost of state beyond
memory), each from fresh processes: records/s
from registration to the last result row, the reducers' peak RSS less their idle RSS over
the window's groups (bytes per open group), Redis's peak. Checkpoint duration and bytes come
from `benchmarks.group_scale_state` (the state alone, in a process of its own, at G groups):
the cluster's owners checkpoint every 2 s, and their figures are Prometheus histograms.
Every state runs `runs` times at each group count (3 unless `--runs` says otherwise), the
runs taken round the counts; the ratios and the targets take each count's median.

Before them, one run that is not counted (`warmup_groups`: the columnar state at the most
groups up to 300,000), as experiment 11 has one: the cluster is fresh, and its broker
JIT-compiles the paths of a large transactional close the first times it takes one (measured
in docs/benchmarks.md, "Experiment 16: the broker's JIT, a warm-up run, and the output path
alone"). Without it the first 289,329-group run paid that, and Flink SQL, run after Mars on
the same broker, never did.

Flink SQL, the peer, reads the same topic after Mars's runs (`benchmarks.flink_json`:
PyFlink's MiniCluster, `flink_parallelism` wide, the peers' virtualenv): the 300 s TUMBLE of
`ts = TO_TIMESTAMP_LTZ(timestamp, 0)` with `WATERMARK FOR ts AS ts` grouped by window and `sip`
with COUNT(*) and SUM(bytes), into an exactly-once Kafka sink (transactions committed with its
5 s checkpoints). The same sentinels close its window: the Kafka source keeps one watermark per
partition and emits their minimum, and every partition's sentinel is 900 s past the data.
Records/s from the INSERT's submission until the last result row is readable (read_committed),
as experiment 12 times it, and the CPU seconds and peak RSS of its process tree meanwhile.
Its rows (sip, count, sum of bytes) are compared with each Mars state's first run's. Flink
missing or failing is noted; Mars is measured all the same.

Opt-in sizes: `MARS_GROUP_SCALE_GROUPS=8000,300000,3000000` (and `MARS_GROUP_SCALE_RECORDS`).
A count of G sips gets at least `RECORDS_PER_SIP` x G records (`records_for`): 1,000,000 records
over 3,000,000 sips would fill fewer than 1,000,000 groups; 9,000,000 fill about 2,850,000.

Many open windows: `MARS_GROUP_SCALE_SLIDES=300,60` runs each state a second time with 300 s
windows sliding every 60 s (`WINDOWING 300 s SLIDE 60 s`), so every record is in 5 windows and
an owner holds up to 5 open windows of the unit's groups at once: where spilling bounds what
the windows not being merged or closed hold. Flink runs the tumbling query only; the hopping
runs' rows (window start, sip, count, sum) are compared with the Python state's, the reference.
Hopping runs only up to `HOPPING_MAX_SIPS` sips: at 3,000,000 the Python state would hold 14
million window rows (about 15 GB).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import polars as pl
from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.experiment import Base, Context, Section, env_ints, note
from benchmarks.flink_json import FlinkJsonJob, FlinkQuery, run_flink_job
from benchmarks.flink_sql import WINDOW_START_MS
from benchmarks.harness import fresh_id
from benchmarks.peers import PeerUnavailable
from benchmarks.procstat import rss_mb
from benchmarks.report_format import fmt
from benchmarks.results_reader import Fields, ResultReader
from benchmarks.stats import bytes_per_added, medians_by
from benchmarks.subprocesses import spawn_module
from benchmarks.workload import KEEP_RECORDS
from devtools.gen.config import Encoding, GeneratorConfig
from devtools.gen.produce import produce
from mars.clients.kafka_config import admin_client, client_config
from mars.config import load_settings
from mars.heap import polars_allocator_options
from mars.tasks.spec import default_output_topic
from mars.tasks.topics import Replication, TopicPlan, ensure_topics

WINDOW_S = 300  # whole minutes (Flink's INTERVAL below)
START_S = 1_700_000_100  # a multiple of 300: the data fills one window
STATES = ("python", "columnar", "spilled")
DATA_END_MS = (START_S + WINDOW_S) * 1000  # rows of windows from here on are the sentinels'
RECORDS_PER_SIP = 3  # at least: about 95 % of the sips then have a group
HOPPING_MAX_SIPS = 300_000
WARMUP_MAX_SIPS = 300_000  # the warm-up's group count at most: 3,000,000 would take minutes
HEADING = "## 16. Groups per window: the reducer's open-window state at scale"


def window_words(slide_s: int) -> str:
    """The WINDOWING clause's words: tumbling when `slide_s` is the window's size."""
    return f"{WINDOW_S} s" + (f" SLIDE {slide_s} s" if slide_s != WINDOW_S else "")


def mars_sql(topic: str, slide_s: int) -> str:
    """The experiment's query over `topic`."""
    return (
        f"SELECT sip, count(*), sum(bytes) FROM {topic} GROUP BY sip "
        f"WINDOWING {window_words(slide_s)} WITH (idle_timeout='30 s')"
    )


# The same question in Flink SQL, its rows in the shape of Mars's (window_start in epoch ms).
FLINK_QUERY = FlinkQuery(
    table="records",
    columns=(("timestamp", "BIGINT"), ("sip", "STRING"), ("bytes", "BIGINT")),
    time="TO_TIMESTAMP_LTZ(`timestamp`, 0)",
    select=(
        f"SELECT {WINDOW_START_MS} AS window_start, sip, COUNT(*) AS count_star, "
        "SUM(`bytes`) AS sum_bytes\n"
        # INTERVAL 'n' SECOND takes at most 2 digits (SECOND(2)): 300 s as minutes
        f"FROM TABLE(TUMBLE(TABLE records, DESCRIPTOR(ts), INTERVAL '{WINDOW_S // 60}' MINUTE))\n"
        "GROUP BY window_start, window_end, sip"
    ),
    sink_columns=(
        ("window_start", "BIGINT"),
        ("sip", "STRING"),
        ("count_star", "BIGINT"),
        ("sum_bytes", "BIGINT"),
    ),
)


@dataclass(frozen=True, slots=True)
class GroupScaleSettings:
    groups: tuple[int, ...] = env_ints("MARS_GROUP_SCALE_GROUPS", (8_000, 300_000))
    records: int = env_ints("MARS_GROUP_SCALE_RECORDS", (1_000_000,))[0]
    mappers: int = 2
    reducers: int = 2  # two owners' memory and merges, as in a deployment
    flink_parallelism: int = 2  # one task slot per core, as in experiment 12
    # Per owner, so small that every unit spills at 300,000 groups (about 2 MB of frames each).
    spill_budget_bytes: int = env_ints("MARS_GROUP_SCALE_SPILL_BUDGET", (1 << 20,))[0]
    # slides in seconds; 300: tumbling (`MARS_GROUP_SCALE_SLIDES=300,60` adds hopping windows)
    slides: tuple[int, ...] = env_ints("MARS_GROUP_SCALE_SLIDES", (WINDOW_S,))
    # `MARS_GROUP_SCALE_STATES=columnar,spilled`: some of them only
    states: tuple[str, ...] = (
        tuple(filter(None, os.environ.get("MARS_GROUP_SCALE_STATES", "").split(","))) or STATES
    )
    # Runs of each state at each group count (unless --runs says otherwise), taken round the
    # counts; the report and the targets take each count's median: a single run of 1 to 3 s
    # spread 0.41x-0.70x in the rate kept at 300,000 groups over six invocations one evening.
    runs: int = 3
    warmup: bool = True  # one uncounted run first (`warmup_groups`)
    QUICK: ClassVar[dict[str, object]] = {
        "records": 200_000,
        "groups": (8_000, 100_000),
        "runs": 1,
        "warmup": False,
    }

    def warmup_groups(self) -> int | None:
        """The group count of the uncounted first run: the most up to `WARMUP_MAX_SIPS`; None
        without a warm-up, or when every count is more."""
        fitting = [g for g in self.groups if g <= WARMUP_MAX_SIPS]
        return max(fitting) if self.warmup and fitting else None


@dataclass(slots=True, kw_only=True)
class GroupScaleRun:
    state: str
    groups: int  # the data windows' result rows (their distinct window and key pairs)
    records: int
    slide_s: int = WINDOW_S  # the window's size: tumbling
    repeat: int = 1  # which of the settings' runs
    seconds: float = math.nan
    records_per_s: float = math.nan
    complete: bool = False
    reducer_idle_rss_mb: float = math.nan
    reducer_peak_rss_mb: float = math.nan
    bytes_per_group: float = math.nan
    redis_peak_mb: float = math.nan
    spilled_windows: int = 0  # merged frames the reducers wrote to disk
    checkpoint_s: float = math.nan
    checkpoint_bytes: int = 0
    delta_s: float = math.nan  # a delta checkpoint after one more data set (Python state)
    delta_bytes: int = 0
    merge_groups_per_s: float = math.nan  # the state alone
    state_bytes_per_group: float = math.nan  # the state alone
    check: str = ""  # hopping: its rows against the Python state's


@dataclass(slots=True, kw_only=True)
class FlinkGroupRun:
    """Flink SQL at one group count: its time, CPU and memory, and its rows compared with
    Mars's (`check`: what agreed or the first difference)."""

    groups: int  # the data window's result rows
    records: int
    seconds: float = math.nan
    records_per_s: float = math.nan
    complete: bool = False
    startup_s: float = math.nan  # the JVM and TableEnvironment, before the clock starts
    submit_s: float = math.nan  # the INSERT's planning, MiniCluster start, submission: timed
    cpu_s: float = math.nan
    peak_rss_mb: float = math.nan
    agrees: bool = False  # its rows equal every Mars run's at this group count
    check: str = ""
    settings: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class GroupScaleResult:
    mappers: int = 0
    reducers: int = 0
    flink_parallelism: int = 0
    spill_budget_bytes: int = 0
    warmup: GroupScaleRun | None = None  # the uncounted first run
    runs: list[GroupScaleRun] = field(default_factory=list)
    flink: list[FlinkGroupRun] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


GROUP_ROW = ("window_start", "sip", "count_star", "sum_bytes")


@dataclass(slots=True)
class GroupRows(ResultReader):
    """A result reader that also keeps each row's `sip`, count and sum of bytes."""

    key_fields: tuple[str, ...] = ("sip",)
    kept_fields: tuple[str, ...] = ("sum_bytes",)
    rows: list[tuple[int, str, int, int]] = field(default_factory=list)
    frames: list[pl.DataFrame] = field(default_factory=list)  # rows decoded as columns

    def keep(self, rows: list[Fields], arrival: float) -> None:
        for start, count, sip, total in rows:
            if isinstance(start, int) and isinstance(count, int) and isinstance(total, int):
                self.rows.append((start, str(sip), count, total))

    def keep_columns(self, columns: pl.DataFrame, arrival: float) -> None:
        if not isinstance(columns.get_column("c3").dtype, pl.Int64 | pl.Null):
            self.keep(columns.rows(), arrival)
            return
        kept = columns.filter(pl.all_horizontal(pl.col("c0", "c1", "c3").is_not_null()))
        self.frames.append(
            kept.select(
                pl.col("c0").cast(pl.Int64),
                pl.col("c2").cast(pl.String).fill_null("None"),  # as `str(sip)` in `keep`
                pl.col("c1", "c3").cast(pl.Int64),
            ).rename(dict(zip(("c0", "c2", "c1", "c3"), GROUP_ROW, strict=True)))
        )

    def frame(self) -> pl.DataFrame:
        """The data windows' rows (the sentinels' windows left out)."""
        with self._lock:
            rows, frames = list(self.rows), list(self.frames)
        return pl.concat([rows_frame(rows), *frames]).filter(pl.col("window_start") < DATA_END_MS)


def rows_frame(rows: list[tuple[int, str, int, int]]) -> pl.DataFrame:
    """(window_start, sip, count, sum) rows as a frame of the data windows' `window_start`,
    `sip`, `count_star`, `sum_bytes`."""
    schema = dict(zip(GROUP_ROW, (pl.Int64, pl.String, pl.Int64, pl.Int64), strict=True))
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    return frame.filter(pl.col("window_start") < DATA_END_MS)


def compare_rows(
    found: pl.DataFrame, expected: pl.DataFrame, *, keys: tuple[str, ...] = ("sip",)
) -> str | None:
    """None when `found` holds exactly `expected`'s rows (one per `keys`, `sip` alone: one
    window's rows); else the first difference, in words."""
    found, expected = (
        frame.select(*keys, "count_star", "sum_bytes") for frame in (found, expected)
    )
    for name, frame in (("found", found), ("expected", expected)):
        twice = frame.height - frame.select(keys).n_unique()
        if twice:
            return f"{twice:,} rows repeat a {', '.join(keys)} in the {name} rows"
    joined = found.join(expected, on=keys, how="full", coalesce=True, suffix="_expected")
    differ = joined.filter(
        pl.col("count_star").ne_missing(pl.col("count_star_expected"))
        | pl.col("sum_bytes").ne_missing(pl.col("sum_bytes_expected"))
    ).sort(keys)
    if differ.is_empty():
        return None
    first = differ.row(0, named=True)
    return (
        f"{differ.height:,} of {joined.height:,} rows differ, first "
        f"{', '.join(str(first[k]) for k in keys)}: "
        f"({first['count_star']}, {first['sum_bytes']}) vs "
        f"({first['count_star_expected']}, {first['sum_bytes_expected']})"
    )


def flink_check(flink: pl.DataFrame, mars: Mapping[str, pl.DataFrame]) -> tuple[bool, str]:
    """Whether Flink's rows equal every Mars run's (one tumbling window's, by `sip`), and what
    the report says about it."""
    if not mars:
        return False, "no Mars rows to compare with"
    problems = {state: compare_rows(flink, rows) for state, rows in mars.items()}
    wrong = {state: problem for state, problem in problems.items() if problem}
    if not wrong:
        return True, f"{flink.height:,} rows equal to Mars's ({', '.join(mars)} state)"
    return False, "; ".join(f"vs Mars {state}: {problem}" for state, problem in wrong.items())


def records_for(settings: GroupScaleSettings, sips: int) -> int:
    """The records preloaded for `sips` sips: `settings.records`, or `RECORDS_PER_SIP` a sip
    when that is more."""
    return max(settings.records, RECORDS_PER_SIP * sips)


def slides_for(settings: GroupScaleSettings, sips: int) -> list[int]:
    """The slides run at `sips` sips: hopping ones only up to `HOPPING_MAX_SIPS`."""
    return [s for s in settings.slides if s == WINDOW_S or sips <= HOPPING_MAX_SIPS]


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
    ctx: Context,
    settings: GroupScaleSettings,
    topic: str,
    *,
    state: str,
    groups: int,
    records: int,
    slide_s: int = WINDOW_S,
) -> tuple[GroupScaleRun, pl.DataFrame]:
    bench, config = ctx.bench, ctx.config
    env = {"MARS_REDUCER__COLUMNAR_STATE": "false" if state == "python" else "true"}
    if state == "spilled":
        env["MARS_REDUCER__STATE_BUDGET_BYTES"] = str(settings.spill_budget_bytes)
    found = GroupScaleRun(state=state, groups=groups, records=records, slide_s=slide_s)
    with bench.run(extra_env=env) as run:
        run.start_mappers(settings.mappers)
        reducers = run.start_reducers(settings.reducers)
        time.sleep(2.0)  # imports done: the idle figure
        found.reducer_idle_rss_mb = sum(rss_mb(h.pid) or 0.0 for h in reducers)
        task_id = fresh_id("groups-")
        reader = bench.read_results(GroupRows, default_output_topic(task_id))
        with bench.redis_sampler() as redis_peak:
            started = time.time()
            spec = run.register(mars_sql(topic, slide_s), task_id=task_id)
            assert spec.output_topic == reader.topic, (spec.output_topic, reader.topic)
            # every record counted once in each of its windows (ordered data: none late)
            counted = records * (WINDOW_S // slide_s)
            finished = wait_rows(reader, counted, timeout_s=config.timeout_s)
            figures = run.figures()["reducers"]
            found.spilled_windows = spilled_windows(run.metrics_urls(reducers))
        reader.stop()
    rows = reader.frame()
    found.groups = rows.height
    found.complete = not math.isnan(finished)
    if found.complete:
        found.seconds = finished - started
        found.records_per_s = records / found.seconds
    peaks = [f.peak_rss_mb for f in figures]
    if None not in peaks:
        found.reducer_peak_rss_mb = sum(p or 0.0 for p in peaks)
        grown = found.reducer_peak_rss_mb - found.reducer_idle_rss_mb
        found.bytes_per_group = grown * 1024**2 / max(found.groups, 1)
    found.redis_peak_mb = redis_peak.peak_bytes / 1024**2
    return found, rows


def wait_rows(
    reader: ResultReader,
    records: int,
    *,
    timeout_s: float,
    alive: Callable[[], bool] = lambda: True,
) -> float:
    """The wall time the data windows' last row became readable, once their counts add up to
    `records`; NaN at the timeout or when the writer stopped first."""
    if reader.wait_total(records, before_ms=DATA_END_MS, timeout_s=timeout_s, alive=alive):
        return reader.completion_time_s(before_ms=DATA_END_MS)
    return math.nan


def flink_run(
    ctx: Context,
    settings: GroupScaleSettings,
    topic: str,
    *,
    records: int,
    log_dir: Path,
    mars: Mapping[str, pl.DataFrame],
) -> FlinkGroupRun:
    """Flink SQL over `topic` (`records` in it); its rows compared with Mars's (`mars`, by
    state)."""
    bench = ctx.bench
    output = fresh_id("flink-groups-")
    job = FlinkJsonJob(
        query=FLINK_QUERY,
        bootstrap=bench.bootstrap,
        topic=topic,
        output=output,
        run_id=output.removeprefix("flink-"),
        parallelism=settings.flink_parallelism,
    )
    reader = bench.read_results(GroupRows, output)
    try:
        ran = run_flink_job(
            job,
            log_dir=log_dir,
            log_name="flink-group-scale.log",
            wait=lambda alive: wait_rows(
                reader, records, timeout_s=ctx.config.timeout_s, alive=alive
            ),
        )
    finally:
        reader.stop()
    rows = reader.frame()
    agrees, check = flink_check(rows, mars)
    return FlinkGroupRun(
        groups=rows.height,
        records=records,
        seconds=ran.seconds,
        records_per_s=records / ran.seconds if ran.complete else math.nan,
        complete=ran.complete,
        startup_s=ran.startup_s,
        submit_s=ran.submit_s,
        cpu_s=ran.cpu_s,
        peak_rss_mb=ran.peak_rss_mb,
        agrees=agrees,
        check=check,
        settings=ran.settings,
    )


def hopping_check(rows: Mapping[str, pl.DataFrame], state: str) -> str:
    """A hopping run's rows against the Python state's (run first), by window and `sip`."""
    if state == "python":
        return "the reference"
    if "python" not in rows:
        return "not compared: no Python state run"
    problem = compare_rows(rows[state], rows["python"], keys=("window_start", "sip"))
    return (
        f"differs from the Python state's: {problem}" if problem else "equal to the Python state's"
    )


def spilled_windows(metrics_urls: list[str]) -> int:
    """`mars_reducer_spilled_windows_total` summed over the reducers."""
    total = 0.0
    for url in metrics_urls:
        for family in text_string_to_metric_families(httpx.get(url, timeout=10).text):
            if family.name == "mars_reducer_spilled_windows":
                total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return int(total)


def state_figures(found: GroupScaleRun) -> None:
    """The state alone at the run's groups (`benchmarks.group_scale_state`)."""
    decay_ms = load_settings().reducer.freed_pages_decay_ms
    process = spawn_module(
        "benchmarks.group_scale_state",
        ["--groups", str(found.groups), "--state", found.state],
        # the allocator as the cluster's reducers have it (`mars reducer`, same settings)
        env={"_RJEM_MALLOC_CONF": polars_allocator_options(decay_ms)},
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
    """Per group count: Mars with each state, then Flink SQL on the same topic; Flink missing
    or failing is noted and Mars measured all the same."""
    result = GroupScaleResult(
        mappers=settings.mappers,
        reducers=settings.reducers,
        flink_parallelism=settings.flink_parallelism,
        spill_budget_bytes=settings.spill_budget_bytes,
    )
    topics: dict[int, str] = {}
    for groups in settings.groups:
        topics[groups] = "GS" + fresh_id(f"{groups}_").replace("-", "_")
        preload_json(ctx, topics[groups], records=records_for(settings, groups), groups=groups)
    warmup = settings.warmup_groups()
    if warmup is not None:
        result.warmup, _ = cluster_run(
            ctx,
            settings,
            topics[warmup],
            state="columnar",
            groups=warmup,
            records=records_for(settings, warmup),
        )
        ctx.log(
            f"  warm-up, columnar state, {result.warmup.groups:,} groups, not counted: "
            f"{fmt(result.warmup.records_per_s)} records/s"
        )
    # The first run's tumbling rows by group count and state: what Flink's rows are held to
    mars: dict[int, dict[str, pl.DataFrame]] = {}
    # Runs go round the group counts, so a slower spell of the machine falls on all of them.
    for repeat in range(1, settings.runs + 1):
        for groups in settings.groups:
            for slide_s in slides_for(settings, groups):
                found_rows = mars_runs(
                    ctx, settings, result, topics[groups], groups, slide_s=slide_s, repeat=repeat
                )
                if slide_s == WINDOW_S and repeat == 1:
                    mars[groups] = {
                        state: rows.drop("window_start") for state, rows in found_rows.items()
                    }
    if WINDOW_S in settings.slides:  # Flink runs the tumbling query only
        flink_runs(ctx, settings, result, topics, mars)
    return result


def flink_runs(
    ctx: Context,
    settings: GroupScaleSettings,
    result: GroupScaleResult,
    topics: Mapping[int, str],
    mars: Mapping[int, dict[str, pl.DataFrame]],
) -> None:
    """Flink SQL at each group count, added to `result`; missing or failing, it is noted."""
    log_dir = ctx.work_dir("group_scale")
    for groups in settings.groups:
        try:
            flink = flink_run(
                ctx,
                settings,
                topics[groups],
                records=records_for(settings, groups),
                log_dir=log_dir,
                mars=mars.get(groups, {}),
            )
        except PeerUnavailable as error:
            note(result.notes, f"Flink SQL not measured: {error}", ctx.log)
            continue
        except Exception as error:  # a failing peer must not lose Mars's runs
            note(result.notes, f"Flink SQL at {groups:,} groups failed: {error!r:.300}", ctx.log)
            continue
        ctx.log(
            f"  Flink SQL, {flink.groups:,} groups: {fmt(flink.records_per_s)} records/s, "
            f"{fmt(flink.cpu_s, '.1f')} CPU s, peak RSS {fmt(flink.peak_rss_mb)} MiB; "
            f"{flink.check}"
        )
        result.flink.append(flink)


def mars_runs(
    ctx: Context,
    settings: GroupScaleSettings,
    result: GroupScaleResult,
    topic: str,
    groups: int,
    *,
    slide_s: int,
    repeat: int,
) -> dict[str, pl.DataFrame]:
    """One run of each state at a group count and slide, added to `result`; their rows."""
    found_rows: dict[str, pl.DataFrame] = {}
    for state in settings.states:
        found, found_rows[state] = cluster_run(
            ctx,
            settings,
            topic,
            state=state,
            groups=groups,
            records=records_for(settings, groups),
            slide_s=slide_s,
        )
        found.repeat = repeat
        # the state alone, once: one window, no spilling
        if state != "spilled" and slide_s == WINDOW_S and repeat == 1:
            state_figures(found)
        if slide_s != WINDOW_S:
            found.check = hopping_check(found_rows, state)
        ctx.log(
            f"  run {repeat}, {state} state, {window_words(slide_s)}, {found.groups:,} groups: "
            f"{fmt(found.records_per_s)} records/s, "
            f"{fmt(found.bytes_per_group)} B per open group (reducers' peak "
            f"{fmt(found.reducer_peak_rss_mb)} MiB, idle "
            f"{fmt(found.reducer_idle_rss_mb)}), Redis peak "
            f"{fmt(found.redis_peak_mb, '.1f')} MiB, checkpoint "
            f"{fmt(found.checkpoint_s, '.3f')} s {fmt(found.checkpoint_bytes)} B, "
            f"{found.spilled_windows:,} windows spilled"
            + (f"; {found.check}" if found.check else "")
        )
        result.runs.append(found)
    return found_rows


def group_scale_section(result: GroupScaleResult) -> str:
    rows = [
        f"| {run.state} | {run.repeat} | {window_words(run.slide_s)} | {fmt(run.groups)} "
        f"| {fmt(run.records_per_s)} "
        f"| {fmt(run.reducer_peak_rss_mb)} ({fmt(run.reducer_idle_rss_mb)} idle) "
        f"| {fmt(run.bytes_per_group)} | {fmt(run.redis_peak_mb, '.1f')} "
        f"| {fmt(run.merge_groups_per_s)} | {fmt(run.state_bytes_per_group)} "
        f"| {fmt(run.checkpoint_s, '.3f')} | {fmt(run.checkpoint_bytes)} "
        f"| {fmt(run.delta_s, '.3f')} | {fmt(run.delta_bytes)} | {fmt(run.spilled_windows)} "
        f"| {run.check or '—'} |"
        for run in result.runs
    ]
    # complete runs only: an incomplete one has no rate, and its groups are the rows it got
    tumbling = [run for run in result.runs if run.slide_s == WINDOW_S and run.complete]
    rates_by_system = {
        state: [
            (run.groups, run.repeat, run.records_per_s) for run in tumbling if run.state == state
        ]
        for state in STATES
    }
    rates_by_system["Flink SQL"] = [(run.groups, 1, run.records_per_s) for run in result.flink]
    ratios = [
        line for name, rates in rates_by_system.items() if (line := kept_rate_line(name, rates))
    ]
    added = []
    for state in STATES:
        peaks = sorted(
            medians_by(
                (r.groups, r.reducer_peak_rss_mb) for r in tumbling if r.state == state
            ).items()
        )
        if len(peaks) >= 2:
            fewest, most = peaks[0], peaks[-1]
            added.append(
                f"{state}: {fmt(bytes_per_added(fewest, most))} B "
                f"({fmt(fewest[0])} to {fmt(most[0])} groups)"
            )
    return "\n".join(
        [
            f"`mars bench --experiments group_scale`: {result.mappers} mappers, "
            f"{result.reducers} reducers, JSON input, one 300 s window "
            "(see `benchmarks/exp_group_scale.py`). `spilled`: the columnar state with "
            f"`reducer.state_budget_bytes` {fmt(result.spill_budget_bytes)} per owner, so its "
            "windows go to disk in hash partitions of their keys, merged and closed a "
            "partition at a time. A window "
            "with a SLIDE: the same records in 300 s windows every SLIDE seconds, so up to "
            "300 / SLIDE windows are open at once; its groups are the data windows' rows "
            "(window and sip pairs), its records/s the records' (each counted in every window "
            "it is in), its rows checked against the Python state's. Records preloaded: "
            + ", ".join(f"{fmt(r)} for {fmt(g)} groups" for g, r in records_used(result))
            + f" (at least {RECORDS_PER_SIP} per sip: `RECORDS_PER_SIP`)."
            + warmup_words(result.warmup),
            "",
            "| state | run | window | groups | records/s | reducers' peak RSS MiB "
            "| B per open group "
            "| Redis peak MiB | state alone: groups merged/s | state alone: B per group "
            "| checkpoint s | checkpoint B | delta checkpoint s | delta checkpoint B "
            "| windows spilled | rows |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            *spill_lines(result),
            *flink_table(result),
            "Throughput ratio (most groups over fewest; Mars: the medians of its runs, and run "
            "by run): " + "; ".join(ratios) + ".",
            "",
            "Reducers' peak RSS per group added (the growth of the peak from the fewest groups "
            "to the most, over the groups added; `B per open group` above also holds what "
            "the reducers pay at any group count): " + "; ".join(added) + ".",
            *(f"\nNote: {text}" for text in result.notes),
        ]
    )


def warmup_words(warmup: GroupScaleRun | None) -> str:
    """The report's sentence on the uncounted first run (`GroupScaleSettings.warmup`)."""
    if warmup is None:
        return " No warm-up run."
    return (
        f" Before the runs, one columnar run at {fmt(warmup.groups)} groups, not counted "
        f"({fmt(warmup.records_per_s)} records/s): the fresh broker JIT-compiles a large "
        "transactional close's paths the first times it takes one."
    )


def kept_rate_line(system: str, runs: list[tuple[int, int, float]]) -> str:
    """`system`'s median records/s at its most groups over its median at its fewest, and each
    run's ratio to the same run at the fewest groups, from (groups, run, records/s) of its runs
    ("" unless two group counts ran)."""
    rates = medians_by((groups, rate) for groups, _, rate in runs)
    if len(rates) < 2:
        return ""
    low, high = min(rates), max(rates)
    by_repeat = {(groups, repeat): rate for groups, repeat, rate in runs}
    each = [
        fmt(by_repeat[(high, repeat)] / by_repeat[(low, repeat)], ".2f") + "x"
        for repeat in sorted({repeat for _, repeat, _ in runs})
        if (high, repeat) in by_repeat and (low, repeat) in by_repeat
    ]
    return (
        f"{system}: {fmt(rates[high] / rates[low], '.2f')}x at {fmt(high)} groups vs {fmt(low)}"
        + (f" (run by run {', '.join(each)})" if len(each) > 1 else "")
    )


def records_used(result: GroupScaleResult) -> list[tuple[int, int]]:
    """(groups, records) of the tumbling runs, one per group count."""
    used = {run.groups: run.records for run in result.runs if run.slide_s == WINDOW_S}
    return sorted(used.items())


def spill_lines(result: GroupScaleResult) -> list[str]:
    """The spilling state's peak beside the columnar state's in memory, per group count and
    window (none without both runs)."""
    columnar = {
        (run.groups, run.slide_s, run.repeat): run for run in result.runs if run.state == "columnar"
    }
    found = []
    for spilled in (run for run in result.runs if run.state == "spilled"):
        held = columnar.get((spilled.groups, spilled.slide_s, spilled.repeat))
        if held is None:
            continue
        grown = spilled.reducer_peak_rss_mb - spilled.reducer_idle_rss_mb
        held_grown = held.reducer_peak_rss_mb - held.reducer_idle_rss_mb
        found.append(
            f"{window_words(spilled.slide_s)} at {fmt(spilled.groups)} groups, run "
            f"{spilled.repeat}: "
            f"{fmt(grown / held_grown, '.2f')}x the columnar state's peak over idle "
            f"({fmt(grown)} vs {fmt(held_grown)} MiB), "
            f"{fmt(spilled.records_per_s / held.records_per_s, '.2f')}x its rate"
        )
    if not found:
        return []
    return ["Spilling beside the columnar state in memory: " + "; ".join(found) + ".", ""]


def flink_table(result: GroupScaleResult) -> list[str]:
    """Flink SQL beside Mars's columnar state at each group count (none when Flink did not
    run)."""
    if not result.flink:
        return []
    columnar = medians_by(
        (run.groups, run.records_per_s)
        for run in result.runs
        if run.state == "columnar" and run.slide_s == WINDOW_S and run.complete
    )
    rows = []
    for flink in result.flink:
        mars_rate = columnar.get(flink.groups, math.nan)
        rows.append(
            f"| {fmt(flink.groups)} | {fmt(flink.records_per_s)} | {fmt(mars_rate)} "
            f"| {fmt(mars_rate / flink.records_per_s, '.2f')} | {fmt(flink.cpu_s, '.1f')} "
            f"| {fmt(flink.peak_rss_mb)} | {fmt(flink.submit_s, '.1f')} "
            f"| {fmt(flink.startup_s, '.1f')} "
            f"| {'yes' if flink.agrees else 'NO'}: {flink.check} |"
        )
    settings = result.flink[0].settings
    return [
        f"Flink SQL {settings.get('flink', '?')} (connector {settings.get('connector', '?')}, "
        f"PyFlink's MiniCluster, parallelism {result.flink_parallelism}, exactly-once sink, "
        f"checkpoints every {settings.get('checkpoint_interval_s', '?')} s) on the same topic: "
        "records/s from the INSERT's submission until the last row is readable "
        "(read_committed), as in section 12, so the INSERT's own call (planning, the "
        "MiniCluster's start, the job's submission: `INSERT call s`) is inside the time, the "
        "JVM's and TableEnvironment's start before it (`start-up s`) is not; CPU s and peak "
        "RSS of its process tree (JVM and Python) meanwhile; its rows (sip, count, sum of "
        "bytes) compared with each Mars state's first run's.",
        "",
        "| groups | Flink SQL records/s | Mars columnar records/s (median) | Mars columnar / Flink "
        "| Flink CPU s | Flink peak RSS MiB | Flink INSERT call s | Flink start-up s "
        "| rows equal to Mars's |",
        "|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


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
