"""`docs/benchmarks.md` from a results dict (pure: no I/O besides what the caller writes)."""

from __future__ import annotations

import math
from typing import Any

from benchmarks.profile_reading import CONSUME, NATIVE_CONSUME
from benchmarks.report_balance import BALANCE_HEADING, balance_section
from benchmarks.report_e2e import E2E_HEADING, STEADY_HEADING, e2e_section, steady_section
from benchmarks.report_format import fmt, image, med
from benchmarks.report_nexmark import NEXMARK_HEADING, nexmark_section
from benchmarks.report_pull import PULL_HEADING, pull_section
from benchmarks.report_spark_stream import SPARK_STREAM_HEADING, spark_stream_section
from benchmarks.report_tasks import TASKS_HEADING, tasks_section
from benchmarks.state_figures import growth, window_label
from benchmarks.targets import STATE_GROWTH_TARGET, check_targets
from mars.config import MAPPER_BATCH_SIZE

BATCH_HEADING = "## 1. Mapper throughput vs batch size"
PROCESSES_HEADING = "## 2. Throughput vs number of mapper processes"
LATENCY_HEADING = "## 4. Latency: watermark past window end + grace -> results readable"
MEMORY_HEADING = "## 5. Memory"
FAULTS_HEADING = "## 6. Accuracy under faults (Table 1, smaller)"
STATE_HEADING = "## 7. Memory vs window length (bounded state)"
PROFILE_HEADING = "## Where a mapper spends its time, and what limits it"
# The sections each experiment renders: a run of some experiments replaces only these in an
# earlier report (benchmarks.report_merge).
SECTIONS: dict[str, tuple[str, ...]] = {
    "batch": (BATCH_HEADING,),
    "processes": (PROCESSES_HEADING,),
    "e2e": (E2E_HEADING, MEMORY_HEADING),
    "steady": (STEADY_HEADING,),
    "latency": (LATENCY_HEADING,),
    "faults": (FAULTS_HEADING,),
    "state": (STATE_HEADING,),
    "pull": (PULL_HEADING,),
    "balance": (BALANCE_HEADING,),
    "tasks": (TASKS_HEADING,),
    "profile": (PROFILE_HEADING,),
    "nexmark": (NEXMARK_HEADING,),
    "spark_stream": (SPARK_STREAM_HEADING,),
}


def render_report(results: dict[str, Any], *, images: dict[str, str]) -> str:
    """The whole report. `images` maps a plot name to its path relative to docs/."""
    machine = results.get("machine", {})
    data = results.get("dataset", {})
    code = results.get("code", {})
    lines = [
        "# Benchmarks",
        "",
        "The paper's experiments, scaled to one small machine, measured by `mars bench` "
        "(package `benchmarks/`). Every figure is the median of the runs of the same "
        "invocation (min–max in brackets); ratios compare runs of that invocation only.",
        "",
        "## Machine and run",
        "",
        f"- command: `{results.get('command', 'mars bench')}`",
        f"- date: {machine.get('date', '?')}",
        f"- code: {_code_text(code)}",
        f"- machine: {machine.get('nproc', '?')} CPUs ({machine.get('cpu_model', '?')}), "
        f"{machine.get('ram_gib', '?')} GiB RAM, Linux {machine.get('kernel', '?')}, "
        f"Python {machine.get('python', '?')}",
        f"- load average at start: {machine.get('load_average', '?')}, at the end: "
        f"{results.get('load_average_end', '?')} (the benchmark's own cluster, processes and "
        "load generator count in it): wall-clock rates are what the measured processes got, "
        "CPU-second rates depend less on what else ran",
        f"- runs per measurement: {results.get('config', {}).get('runs', '?')}"
        + (" (`--quick`: a smoke check, not a measurement)" if results.get("quick") else ""),
        f"- data: {fmt(data.get('records'))} of the paper's 20-field tuples as CSV lines "
        f"({fmt(data.get('mean_bytes'), '.0f')} bytes mean, the paper's ~150-byte tuples; "
        f"{fmt(data.get('mbytes'), '.1f')} MB), {data.get('partitions', '?')} partitions, "
        f"event time over {data.get('span_s', '?')} s, 1,000 sips x 8 types; preloaded once "
        "and re-read by every run (fresh task id and consumer group per run)",
        "- query: `SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp "
        "WINDOWING 60 s` (tumbling, grace 0)",
        "",
        "## Targets",
        "",
        "| target | goal | measured | verdict | share of the goal |",
        "|---|---|---|---|---:|",
    ]
    for row in check_targets(results):
        lines.append(
            f"| {row.name} | {row.target} | {row.measured} | {row.verdict} "
            f"| {fmt(row.of_goal, '.0%')} |"
        )
    lines += ["", *_notes(results.get("notes", []))]
    lines += _batch_section(results.get("batch"), images)
    lines += _process_section(results.get("processes"), images)
    lines += e2e_section(results.get("e2e"), images)
    lines += steady_section(results.get("steady"))
    lines += _latency_section(results.get("latency"), images)
    lines += _memory_section(results.get("e2e"))
    lines += _faults_section(results.get("faults"))
    lines += _state_section(results.get("state"), images)
    lines += pull_section(results.get("pull"))
    lines += balance_section(results.get("balance"))
    lines += spark_stream_section(results.get("spark_stream"))
    lines += tasks_section(results.get("tasks"))
    lines += nexmark_section(results.get("nexmark"))
    lines += _profile_section(results.get("profile"))
    lines += _method_section()
    return "\n".join(lines).rstrip() + "\n"


def _code_text(code: dict[str, Any]) -> str:
    uncommitted = code.get("uncommitted")
    changes = f" plus uncommitted changes in {', '.join(uncommitted)}" if uncommitted else ""
    return f"commit `{code.get('commit', '?')}`{changes}"


def run_note(results: dict[str, Any]) -> str:
    """The line that opens a section merged into an earlier report: which run measured it."""
    machine = results.get("machine", {})
    return (
        f"*Measured by `{results.get('command', 'mars bench')}` on {machine.get('date', '?')}, "
        f"{_code_text(results.get('code', {}))}, load average at start "
        f"{machine.get('load_average', '?')}, at the end {results.get('load_average_end', '?')}"
        ': not the run of "Machine and run" above.*'
    )


def _notes(notes: list[str]) -> list[str]:
    return [f"- {note}" for note in notes] + ([""] if notes else [])


def _batch_section(batch: dict[str, Any] | None, images: dict[str, str]) -> list[str]:
    lines = [BATCH_HEADING, ""]
    if not batch:
        return [*lines, "Not run.", ""]
    lines += [
        "One `mars mapper` process, no reducer (backpressure marks out of reach), steady state "
        "between 10 % and 90 % of the records, from the exact `records_in` counter in Redis. "
        "Batch sizes up to 100 are capped by time (measured over a fixed window after the "
        "first progress, not the whole topic).",
        "",
        "| batch size | records/s | MB/s | records per CPU-second | records read |",
        "|---:|---:|---:|---:|---:|",
    ]
    for size, row in batch.items():
        capped = f" (capped at {row['cap_s']:.0f} s)" if row.get("cap_s") else ""
        read = ", ".join(fmt(r) for r in row.get("records_read", []))
        lines.append(
            f"| {int(size):,} | {med(row['records_per_s'])} | {med(row['mb_per_s'], '.1f')} "
            f"| {med(row['records_per_cpu_s'])} | {read}{capped} |"
        )
    return [*lines, "", *image(images, "batch", "mapper throughput vs batch size")]


def _process_section(processes: dict[str, Any] | None, images: dict[str, str]) -> list[str]:
    lines = [PROCESSES_HEADING, ""]
    if not processes:
        return [*lines, "Not run.", ""]
    lines += [
        f"Mappers in one consumer group over the same topic (batch {MAPPER_BATCH_SIZE:,}, no "
        "reducer).",
        "",
        "| mappers | records/s | MB/s | records per CPU-second |",
        "|---:|---:|---:|---:|",
    ]
    for count, row in processes.items():
        lines.append(
            f"| {count} | {med(row['records_per_s'])} | {med(row['mb_per_s'], '.1f')} "
            f"| {med(row['records_per_cpu_s'])} |"
        )
    return [*lines, "", *image(images, "processes", "throughput vs mapper processes")]


def _latency_points(latency: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    points = [("half the maximum (target)", latency)]
    if latency.get("lighter"):
        points.append(("a quarter of the maximum", latency["lighter"]))
    return points


def _latency_section(latency: dict[str, Any] | None, images: dict[str, str]) -> list[str]:
    lines = [LATENCY_HEADING, ""]
    if not latency:
        return [*lines, "Not run.", ""]
    lines += [
        f"Live traffic paced at {fmt(latency['rate'])} records/s (about half the measured "
        f"end-to-end maximum), event time = wall clock, {latency['window_s']} s tumbling "
        f"windows (so a {latency['duration_s']} s run closes many), grace 0, 2 mappers + 1 "
        "reducer. Per window: the wall time its last result row reached a live read_committed "
        "consumer, minus the time the watermark passed its end. The latter is derived from "
        "the source data: for each partition the Kafka timestamp (producer CreateTime) of "
        "its first record with event time >= end; the max over partitions (the watermark is "
        "the min over partitions). Windows of the first 10 s are left out (warm-up).",
        "",
        "| traffic | records/s | windows | p50 | p99 | max |",
        "|---|---:|---:|---:|---:|---:|",
        *[
            f"| {label} | {fmt(point['rate'])} | {point['windows']} "
            f"| {fmt(point['p50_s'], '.3f')} s | {fmt(point['p99_s'], '.3f')} s "
            f"| {fmt(point['max_s'], '.3f')} s |"
            for label, point in _latency_points(latency)
        ],
        "",
        "The first row is the target's measurement; the second is the same experiment at half "
        "that rate, to tell a latency floor from the cost of load (the paced load generator, "
        "a Python process, and the Kafka broker share the machine's two cores with the "
        "pipeline).",
        "",
    ]
    return [*lines, *image(images, "latency", "latency distribution")]


def _memory_section(e2e: dict[str, Any] | None) -> list[str]:
    lines = [MEMORY_HEADING, ""]
    if not e2e:
        return [*lines, "Not run (measured in the end-to-end runs).", ""]
    memory = e2e["memory"]
    return [
        *lines,
        "Measured in the Mars end-to-end runs: Redis `used_memory` sampled every 100 ms "
        "(INFO's `used_memory_peak` is the server's lifetime peak, which CONFIG RESETSTAT does "
        "not reset), mapper and reducer peak RSS (`VmHWM` in /proc/<pid>/status), the "
        "largest process of each role per run.",
        "",
        "| what | peak MiB |",
        "|---|---:|",
        f"| Redis used_memory | {med(memory['redis_peak_mb'], '.1f')} |",
        f"| mapper RSS | {med(memory['mapper_peak_rss_mb'], '.0f')} |",
        f"| reducer RSS | {med(memory['reducer_peak_rss_mb'], '.0f')} |",
        f"| Spark driver + JVM RSS (for comparison) | {med(memory['spark_peak_rss_mb'], '.0f')} |",
        *(
            [f"| Quix Streams RSS, all its processes (for comparison) | {quix} |"]
            if (quix := med(memory.get("quix_peak_rss_mb"), ".0f")) != "—"
            else []
        ),
        *(
            [f"| Flink SQL RSS, Python process + JVM (for comparison) | {flink} |"]
            if (flink := med(memory.get("flink_peak_rss_mb"), ".0f")) != "—"
            else []
        ),
        "",
    ]


def _faults_section(faults: dict[str, Any] | None) -> list[str]:
    lines = [FAULTS_HEADING, ""]
    if not faults:
        return [*lines, "Not run.", ""]
    verdict = "**exact**" if faults["ok"] else "**MISMATCH**"
    return [
        *lines,
        "0.5 % malformed records, 3 s disorder (some records late), 10 s windows, 2 mappers "
        "+ 2 reducers, batch 1,000; " + "; ".join(faults["events"]) + "; each replaced at once.",
        "",
        "| produced | in window results | late | bad | results + late + bad | duplicates | |",
        "|---:|---:|---:|---:|---:|---:|---|",
        f"| {fmt(faults['produced'])} | {fmt(faults['in_results'])} | {fmt(faults['late'])} "
        f"| {fmt(faults['bad'])} | {fmt(faults['in_results'] + faults['late'] + faults['bad'])} "
        f"| {faults['duplicates']} | {verdict} |",
        "",
    ]


def _state_section(state: dict[str, Any] | None, images: dict[str, str]) -> list[str]:
    lines = [STATE_HEADING, ""]
    if not state:
        return [*lines, "Not run.", ""]
    by_window = state["by_window"]
    found = growth(by_window)
    short, long = window_label(found["shortest_s"]), window_label(found["longest_s"])
    lengths = ", ".join(window_label(int(w)) for w in by_window)
    count = max((len(row.get("runs", [])) for row in by_window.values()), default=0)
    lines += [
        f"The same live traffic into one fresh task per window length ({lengths}; {count} "
        f"run{'s' if count != 1 else ''} each, interleaved): "
        f"{fmt(state['rate'])} records/s for {state['duration_s']} s "
        f"({fmt(state['rate'] * state['duration_s'])} records), event time = wall clock, "
        f"{fmt(state['groups'])} groups ({state['sips']} sips x "
        f"{state['groups'] // state['sips']} types, every one in a "
        "window within its first seconds); `SELECT sip, type, count(*) FROM <topic> GROUP BY "
        "sip, type WINDOWING <length>` (tumbling, grace 0), fresh processes per length "
        f"({state['mappers']} mappers + {state['reducers']} reducer; the mappers' "
        "backpressure marks out of reach, as in every run here, so nothing caps the growth). "
        "While the traffic flows, Redis `used_memory` and the reducer's VmRSS are sampled "
        "every 100 ms. Redis counts above the idle server, read just before the traffic "
        f"(after an unmeasured {state.get('warmup_s', 0)} s warm-up task, so the server's "
        "one-time growth during its first task counts for no window length): the task's "
        "state. Peak: the largest sample (reducer: VmHWM); steady: the median of the second "
        "half of the run. A run of a few minutes closes the short windows and, unless a "
        "window end happens to fall inside it, none of the long ones: bounded state gives "
        "the same figures for every length, state kept until its window closes grows for as "
        f"long as the run lasts ({long} / {short} then about the run's length over {short}).",
        "",
        "| window | Redis peak MiB above idle | Redis steady MiB above idle | reducer peak RSS MiB "
        "| reducer steady RSS MiB | windows emitted | records in |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for window_s, row in by_window.items():
        runs = row.get("runs", [])
        lines.append(
            f"| {window_label(int(window_s))} | {med(row['redis_state_peak_mb'], '.1f')} "
            f"| {med(row['redis_state_steady_mb'], '.1f')} "
            f"| {med(row['reducer_peak_rss_mb'])} | {med(row['reducer_steady_rss_mb'])} "
            f"| {', '.join(str(r['windows_emitted']) for r in runs)} "
            f"| {', '.join(fmt(r['records_in']) for r in runs)} |"
        )
    lines += [
        f"| **{long} / {short}** | {fmt(found['redis_state_peak_mb'], '.2f')}x "
        f"| {fmt(found['redis_state_steady_mb'], '.2f')}x "
        f"| {fmt(found['reducer_peak_rss_mb'], '.2f')}x "
        f"| {fmt(found['reducer_steady_rss_mb'], '.2f')}x | | |",
        "",
        "Idle, just before the traffic (over the window lengths): Redis used_memory "
        f"{_span(by_window, 'redis_idle_mb', '.1f')} MiB, reducer RSS "
        f"{_span(by_window, 'reducer_idle_rss_mb', '.0f')} MiB. The target: {long} within "
        f"{STATE_GROWTH_TARGET}x of {short} for the Redis and the reducer peaks.",
        "",
    ]
    if state["duration_s"] < 2 * found["shortest_s"]:
        lines += [
            f"**This run is too short to tell bounded from growing state**: in "
            f"{state['duration_s']} s a state that grows until its window closes grows about "
            f"as long for {short} windows as for {long} ones; the ratios tell them apart "
            f"only in runs well over {STATE_GROWTH_TARGET}x {short}.",
            "",
        ]
    return [*lines, *image(images, "state", "memory over time per window length")]


def _span(by_window: dict[str, Any], name: str, spec: str) -> str:
    """`low–high` of a figure's medians over the window lengths (one value when equal)."""
    values = [row[name]["median"] for row in by_window.values()]
    low, high = fmt(min(values, default=math.nan), spec), fmt(max(values, default=math.nan), spec)
    return low if low == high else f"{low}–{high}"


def limits(shares: dict[str, float]) -> list[str]:
    """What the profile says limits a mapper; `shares` = frame -> share of the mapper loop."""

    def share(name: str) -> str:
        return f"{shares.get(name, 0.0):.0%}"

    return [
        f"Kafka consume is {share(NATIVE_CONSUME)} of the loop with the native consumer "
        "(librdkafka's batch reads of each partition's queue, each partition's offsets and "
        "joined values built in Rust; its waits for records count here too) and "
        f"{share(CONSUME)} with confluent-kafka's, whose `Message` per record the per-message "
        f"loop `group_by_partition` ({share('group_by_partition')}) takes apart; the "
        "consume+decode ceilings pay the same.",
        f"CSV decode is {share('CsvRecordDecoder.decode')}: Polars's CSV reader parses the "
        "whole batch in one call, after one Rust pass checks each line's width (the native "
        "consumer hands the records already joined; confluent-kafka's are joined first).",
        f"Data sets are {share('Preaggregator._datasets')}: the paper's query has 8,000 "
        "(sip, type) groups per window, so a batch's data sets hold up to one partial group "
        "per group and window it touches: Polars groups, msgspec encodes each column once, "
        "and with mars_native Rust cuts the columns into entries, hashes, sorts and joins them.",
        f"Redis (the apply script) is {share('SeqStore.apply_batch')}: not the limit.",
    ]


def _profile_section(profile: dict[str, Any] | None) -> list[str]:
    lines = [PROFILE_HEADING, ""]
    if not profile:
        return [*lines, "Not profiled in this run.", ""]
    top = profile.get("top", [])
    return [
        *lines,
        f"One mapper reading the whole topic (batch {MAPPER_BATCH_SIZE:,}, "
        f"{profile.get('what', '')}), sampled by py-spy from outside at 200 Hz; shares of the "
        "CPU samples of its loop (`MapperLoop.run_once`):",
        "",
        *[f"- {line}" for line in profile.get("reading", [])],
        "",
        "What this means for the targets:",
        "",
        *[f"- {line}" for line in limits(profile.get("shares", {}))],
        "",
        "The functions with the largest shares (inclusive):",
        "",
        "| function | share of the loop |",
        "|---|---:|",
        *[f"| `{name}` | {value:.0%} |" for name, value in top],
        "",
    ]


def _method_section() -> list[str]:
    return [
        "## Method and caveats",
        "",
        "- Everything runs on one machine: Kafka (KRaft), ZooKeeper, Redis, the Mars processes, "
        "Spark and the load generator share its cores, as in the paper's single-node "
        "experiments but with far fewer cores.",
        "- Throughput runs read a preloaded topic (as the paper does); each run is a fresh task "
        "id (fresh Redis keys) and a fresh consumer group, under its own ZooKeeper root.",
        "- Reproduce: `make bench` (or `.venv/bin/mars bench [--quick] [--experiments ...] "
        "[--runs N]`); raw results are written to `benchmarks/results/` (not committed).",
        "",
    ]
