"""Section 3 of `docs/benchmarks.md`: the paper's query end to end, Mars vs its peers (PySpark
Structured Streaming, Quix Streams) vs the consume+decode ceiling (experiment 3)."""

from __future__ import annotations

from typing import Any

from benchmarks.report_format import fmt, image, med
from benchmarks.stats import ratio

E2E_HEADING = (
    "## 3. End to end: Mars vs PySpark Structured Streaming vs Quix Streams vs the ceiling"
)
TABLE = [
    "| system | start-up s | seconds | records/s | MB/s | CPU seconds "
    "| CPU seconds per million records |",
    "|---|---:|---:|---:|---:|---:|---:|",
]


def e2e_section(e2e: dict[str, Any] | None, images: dict[str, str]) -> list[str]:
    lines = [E2E_HEADING, ""]
    if not e2e:
        return [*lines, "Not run.", ""]
    quix = e2e.get("quix")
    lines += [
        f"Mars: {e2e['mappers']} mappers + {e2e['reducers']} reducer(s), started and idle "
        "before the task is registered; time from registering the task until every data "
        "window's results are readable (read_committed) in the result topic. Spark: the same "
        "query (`groupBy(window(ts, 60 s), sip, type).count()`, watermark 0 s, append mode, "
        "Kafka sink, `local[2]`, 4 shuffle partitions, default trigger) on the same topic; "
        "time from `query.start()` (session already up) until the same condition. "
        + (_quix_text(quix) + " " if quix else "")
        + "One sentinel record per partition, a day after the data, moves every system's "
        "event time past the last data window. Ceiling: consume + decode only (the mapper's "
        "per-message loop and decode path), one process per core, no aggregation, no Redis; "
        "its records/s is the steady state between 10 % and 90 % of the records, as for the "
        "mappers. Runs are interleaved.",
        "",
        *TABLE,
        _row("Mars", e2e["mars"]),
        _row("PySpark Structured Streaming", e2e["spark"]),
    ]
    if quix:
        lines.append(_row(f"Quix Streams {quix.get('settings', {}).get('quixstreams', '')}", quix))
    ceiling = e2e["ceiling"]
    per_cpu = ceiling["records_per_cpu_s"]
    per_million = 1e6 / per_cpu["median"] if per_cpu.get("median") else None
    lines += [
        f"| ceiling (consume + decode) | — | — | {med(ceiling['records_per_s'])} "
        f"| {med(ceiling.get('mb_per_s'), '.1f')} | — | {fmt(per_million, '.2f')} |",
        "",
        *_reading(e2e),
        *[f"- {note}" for note in e2e.get("notes", [])],
    ]
    if e2e.get("notes"):
        lines.append("")
    return [*lines, *image(images, "e2e", "end-to-end throughput")]


def _row(name: str, system: dict[str, Any]) -> str:
    return (
        f"| {name} | {med(system.get('startup_s'), '.1f')} | {med(system['seconds'], '.1f')} "
        f"| {med(system['records_per_s'])} | {med(system.get('mb_per_s'), '.1f')} "
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


def _applications(count: int) -> str:
    if count == 1:
        return "one application"
    return f"{count} applications in one consumer group, each its own state directory"


def _reading(e2e: dict[str, Any]) -> list[str]:
    mars_rate = e2e["mars"]["records_per_s"].get("median", float("nan"))
    ratios = [f"Mars vs PySpark: {fmt(ratio(mars_rate, _rate(e2e['spark'])), '.2f')}x"]
    if e2e.get("quix"):
        ratios.append(f"Mars vs Quix Streams: {fmt(ratio(mars_rate, _rate(e2e['quix'])), '.2f')}x")
    session = [r.get("session_start_s") for r in e2e["spark"].get("runs", [])]
    return [
        "; ".join(ratios) + " (records/s, medians). Start-up, before each clock starts and "
        "not counted in the seconds: Mars, its mappers and reducers until each is a member in "
        "ZooKeeper; Spark, the driver and its JVM until `query.start()` (the session alone: "
        + ", ".join(fmt(s, ".1f") + " s" for s in session)
        + "); Quix Streams, its processes until the Application is built (imports included; "
        "topic creation, the consumer group's join and state recovery come after `app.run()` "
        "and count in its seconds). CPU seconds: Mars, mappers and reducers from "
        "registration; Spark, driver and JVM from `query.start()`; Quix Streams, its "
        "processes from `app.run()`. MB/s: records/s x the mean record size.",
        "",
    ]


def _rate(system: dict[str, Any]) -> float:
    value = system.get("records_per_s", {}).get("median")
    return float(value) if isinstance(value, int | float) else float("nan")
