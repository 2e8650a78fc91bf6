"""Section 3 of `docs/benchmarks.md`: the paper's query end to end, Mars vs its peers (PySpark
Structured Streaming, Quix Streams, Flink SQL) vs the consume+decode ceiling (experiment 3)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.experiment import render
from benchmarks.report_format import fmt, image, med
from benchmarks.stats import ratio
from benchmarks.targets import (
    STEADY_VS_FLINK_TARGET,
    STEADY_VS_QUIX_TARGET,
    STEADY_VS_SPARK_TARGET,
)

E2E_HEADING = (
    "## 3. End to end: Mars vs PySpark Structured Streaming vs Quix Streams vs Flink SQL "
    "vs the ceiling"
)
STEADY_HEADING = "## 3b. Steady state: experiment 3 at ten times the records"
MEMORY_HEADING = "## 5. Memory"
TABLE = [
    "| system | start-up s | seconds | records/s | MB/s | records/s with start-up "
    "| CPU seconds | CPU seconds per million records |",
    "|---|---:|---:|---:|---:|---:|---:|---:|",
]


def e2e_section(e2e: dict[str, Any], images: Mapping[str, str]) -> list[str]:
    lines: list[str] = []
    quix = e2e.get("quix")
    flink = e2e.get("flink")
    lines += [
        f"Mars: {e2e['mappers']} mappers + {e2e['reducers']} reducer(s), started and idle "
        "before the task is registered; time from registering the task until every data "
        "window's results are readable (read_committed) in the result topic. Spark: the same "
        "query (`groupBy(window(ts, 60 s), sip, type).count()`, watermark 0 s, append mode, "
        "Kafka sink, `local[2]`, 4 shuffle partitions, default trigger) on the same topic; "
        "time from `query.start()` (session already up) until the same condition. "
        + (_quix_text(quix) + " " if quix else "")
        + (_flink_text(flink) + " " if flink else "")
        + "One sentinel record per partition, a day after the data, moves every system's "
        "event time past the last data window. Ceiling: consume + decode only (the mapper's "
        "consumer settings, heap settings and decode path), one process per core, no "
        "aggregation, no Redis; its records/s is the steady state between 10 % and 90 % of the "
        "records, as for the mappers. Measured twice: with confluent-kafka's consumer and the "
        "mapper's per-message loop (the Python path, the mapper target's reference), and with "
        "the native consumer the mappers use by default (`mapper.consumer`). Runs are "
        "interleaved.",
        "",
        *_table(e2e),
        "",
        *_reading(e2e),
        *[f"- {note}" for note in e2e.get("notes", [])],
    ]
    if e2e.get("notes"):
        lines.append("")
    return [*lines, image(images, "e2e", "end-to-end throughput")]


def steady_section(steady: dict[str, Any]) -> list[str]:
    """Experiment 3 again over a larger preloaded topic, with the issue's steady-state targets."""
    lines: list[str] = []
    data = steady.get("dataset", {})
    lines += [
        f"The same systems, query, settings and clocks as experiment 3, over "
        f"{fmt(data.get('records'))} records ({fmt(data.get('mbytes'), '.0f')} MB, topic "
        f"`{data.get('topic', '?')}`, {data.get('partitions', '?')} partitions, event time over "
        f"{data.get('span_s', '?')} s), where start-up no longer dominates: the marginal rate "
        "(records/s, start-up excluded) is what each system sustains.",
        "",
        *_table(steady),
        "",
        *_steady_verdicts(steady),
        *_reading(steady),
        *[f"- {note}" for note in steady.get("notes", [])],
    ]
    return lines


def _steady_verdicts(steady: dict[str, Any]) -> list[str]:
    mars_rate = _rate(steady["mars"])
    lines = ["Targets (records/s, medians of this invocation):", ""]
    checks = [  # (peer, its results, Mars's rate over its rate must reach, or pass)
        ("PySpark Structured Streaming", steady.get("spark"), STEADY_VS_SPARK_TARGET, False),
        ("Quix Streams", steady.get("quix"), STEADY_VS_QUIX_TARGET, False),
        ("Flink SQL (ahead: more than 1x)", steady.get("flink"), STEADY_VS_FLINK_TARGET, True),
    ]
    for name, system, goal, strictly in checks:
        if not system or not system.get("runs"):
            lines.append(f"- vs {name}: not measured in this run")
            continue
        got = ratio(mars_rate, _rate(system))
        met = got > goal if strictly else got >= goal
        verdict = "met" if met else f"**missed** by {fmt(goal - got, '.2f')}x"
        lines.append(f"- vs {name}: {fmt(got, '.2f')}x, target {fmt(goal, 'g')}x: {verdict}")
    return [*lines, ""]


def _table(e2e: dict[str, Any]) -> list[str]:
    lines = [*TABLE, _row("Mars", e2e["mars"]), _row("PySpark Structured Streaming", e2e["spark"])]
    quix, flink = e2e.get("quix"), e2e.get("flink")
    if quix:
        lines.append(_row(f"Quix Streams {quix.get('settings', {}).get('quixstreams', '')}", quix))
    if flink:
        lines.append(_row(f"Flink SQL {flink.get('settings', {}).get('flink', '')}", flink))
    for key, name in (
        ("ceiling", "ceiling (consume + decode)"),
        ("ceiling_native", "ceiling, native consumer (consume + decode)"),
    ):
        ceiling = e2e.get(key)
        if not ceiling:
            continue
        per_cpu = ceiling["records_per_cpu_s"]
        per_million = 1e6 / per_cpu["median"] if per_cpu.get("median") else None
        lines.append(
            f"| {name} | — | — | {med(ceiling['records_per_s'])} "
            f"| {med(ceiling.get('mb_per_s'), '.1f')} | — | — | {fmt(per_million, '.2f')} |"
        )
    return lines


def _row(name: str, system: dict[str, Any]) -> str:
    return (
        f"| {name.strip()} | {med(system.get('startup_s'), '.1f')} "
        f"| {med(system['seconds'], '.1f')} | {med(system['records_per_s'])} "
        f"| {med(system.get('mb_per_s'), '.1f')} "
        f"| {med(system.get('records_per_s_with_startup'))} "
        f"| {med(system['cpu_s'], '.1f')} | {med(system.get('cpu_s_per_million'), '.1f')} |"
    )


def _quix_text(quix: dict[str, Any]) -> str:
    settings = quix.get("settings") or {}
    if not settings:
        return "Quix Streams: not measured in this run (see below)."
    return (
        f"Quix Streams {settings['quixstreams']} (its own virtualenv, "
        f"`scripts/setup_peers.sh`): {_applications(quix['processes'])} "
        "(RocksDB state), "
        f'`processing_guarantee="{settings["processing_guarantee"]}"` (Kafka transactions; '
        "it reads read_committed), "
        f'`auto_offset_reset="{settings["auto_offset_reset"]}"`, `commit_interval` '
        f"{fmt(settings['commit_interval_s'], 'g')} s (the default: results become readable "
        "at each commit); the CSV value parsed by a deserializer, event time taken from it by "
        "the topic's timestamp extractor, `group_by([sip, type])` (a repartition topic), "
        f"`tumbling_window({settings['window_s']} s, grace {settings['grace_s']} s).count()"
        f'.final(closing_strategy="{settings["closing_strategy"]}")`, state in RocksDB '
        "backed by changelog topics (the defaults), JSON rows to the result topic with "
        "`to_topic`; time from `app.run()` until the same condition. Quix Streams closes a "
        "window when the largest event time its state partition has seen passes end + grace, "
        "with no watermark over the source partitions: a grace as long as the data's span "
        "keeps the records read from one partition ahead of another from being dropped as "
        "late (with grace 0 they are), and the sentinels are held back until one was read from "
        f"every source partition, then copied under {settings['sentinel_copies']} keys to "
        "reach every partition of the repartition topic (hence one application reading every "
        "source partition: copied at once, one partition's sentinel closed windows that the "
        "others' records still belonged to)."
    )


def _flink_text(flink: dict[str, Any]) -> str:
    settings = flink.get("settings") or {}
    if not settings:
        return "Flink SQL: not measured in this run (see below)."
    return (
        f"Flink SQL {settings['flink']} (PyFlink in the same virtualenv, with the Kafka SQL "
        f"connector {settings['connector']} from Maven Central, `scripts/setup_peers.sh`): "
        "one job in PyFlink's local MiniCluster (inside its gateway JVM), parallelism "
        f"{settings['parallelism']}; a Kafka source table (`scan.startup.mode = "
        f"'{settings['startup_mode']}'`, the CSV format), event time `ts` from the record's epoch "
        f"seconds with `WATERMARK FOR ts AS ts` ({settings['watermark_delay_s']} s; the "
        "source keeps a watermark per partition and emits their minimum), `TUMBLE(TABLE "
        f"source, DESCRIPTOR(ts), INTERVAL '{settings['window_s']}' SECOND)` grouped by "
        "window, sip and type with `COUNT(*)`, JSON rows to a Kafka sink table with "
        f"`sink.delivery-guarantee = '{settings['delivery_guarantee']}'` (Kafka transactions "
        "committed when a checkpoint completes: results become readable then; checkpoints "
        f"every {fmt(settings['checkpoint_interval_s'], 'g')} s, as Quix Streams' default "
        "commit interval, for Flink takes none unless told); time from `execute_sql(INSERT)` (the "
        "TableEnvironment and its JVM already up) until the same condition."
    )


def _applications(count: int) -> str:
    if count == 1:
        return "one application"
    return f"{count} applications in one consumer group, each its own state directory"


def _reading(e2e: dict[str, Any]) -> list[str]:
    mars_rate = e2e["mars"]["records_per_s"].get("median", float("nan"))
    ratios = [f"Mars vs PySpark: {fmt(ratio(mars_rate, _rate(e2e['spark'])), '.2f')}x"]
    if e2e.get("quix"):
        ratios.append(f"Mars vs Quix Streams: {fmt(ratio(mars_rate, _rate(e2e['quix'])), '.2f')}x")
    flink = e2e.get("flink")
    if flink:
        ratios.append(f"Mars vs Flink SQL: {fmt(ratio(mars_rate, _rate(flink)), '.2f')}x")
    flink_start = (
        "; Flink SQL, its Python process and the gateway JVM until `execute_sql(INSERT)` "
        f"(the TableEnvironment alone: {_sessions(flink)}; planning and submitting the job "
        "and the Kafka source's start come after and count in its seconds)"
        if flink and flink.get("runs")
        else ""
    )
    flink_cpu = "; Flink SQL, its Python process and JVM once the INSERT is submitted"
    return [
        "; ".join(ratios) + " (records/s, medians). records/s and MB/s are the marginal rate: "
        "the records over the seconds, start-up excluded; records/s with start-up: the "
        "records over start-up + seconds. Start-up, before each clock starts and "
        "not counted in the seconds: Mars, its mappers and reducers until each is a member in "
        "ZooKeeper; Spark, the driver and its JVM until `query.start()` (the session alone: "
        + _sessions(e2e["spark"])
        + "); Quix Streams, its processes until the Application is built (imports included; "
        "topic creation, the consumer group's join and state recovery come after `app.run()` "
        "and count in its seconds)"
        + flink_start
        + ". CPU seconds: Mars, mappers and reducers from "
        "registration; Spark, driver and JVM from `query.start()`; Quix Streams, its "
        "processes from `app.run()`"
        + (flink_cpu if flink_start else "")
        + ". MB/s: records/s x the mean record size.",
        "",
    ]


def _sessions(system: dict[str, Any]) -> str:
    """Each run's time until the peer's session was up (`SESSION`), from its launch."""
    return ", ".join(fmt(r.get("session_start_s"), ".1f") + " s" for r in system.get("runs", []))


def _rate(system: dict[str, Any]) -> float:
    value = system.get("records_per_s", {}).get("median")
    return float(value) if isinstance(value, int | float) else float("nan")


def memory_section(e2e: dict[str, Any]) -> str:
    """Experiment 5: memory, measured in the Mars end-to-end runs (peers for comparison)."""
    memory = e2e["memory"]
    peers = [
        f"| {label} (for comparison) | {value} |"
        for label, key in (
            ("Quix Streams RSS, all its processes", "quix_peak_rss_mb"),
            ("Flink SQL RSS, Python process + JVM", "flink_peak_rss_mb"),
        )
        if (value := med(memory.get(key), ".0f")) != "—"
    ]
    return render(
        "memory",
        redis=med(memory["redis_peak_mb"], ".1f"),
        mapper=med(memory["mapper_peak_rss_mb"], ".0f"),
        reducer=med(memory["reducer_peak_rss_mb"], ".0f"),
        spark=med(memory["spark_peak_rss_mb"], ".0f"),
        peers="\n".join(peers),
    )
