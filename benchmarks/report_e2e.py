"""Sections 3, 3b and 5 of `docs/benchmarks.md`: the reference query end to end, Mars vs its
peers (PySpark Structured Streaming, Quix Streams, Flink SQL) vs the consume+decode ceiling
(experiment 3), again at steady state, and the memory of the Mars runs (experiment 5)."""

from __future__ import annotations

from collections.abc import Mapping

from benchmarks.e2e_figures import EndToEndResult, MemoryFigures, SystemFigures
from benchmarks.experiment import render
from benchmarks.report_format import bullets, fmt, image, med
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


def e2e_section(e2e: EndToEndResult, images: Mapping[str, str]) -> str:
    return render(
        "e2e",
        mappers=e2e.mappers,
        reducers=e2e.reducers,
        quix=_peer_text("quix", e2e.quix, "Quix Streams"),
        flink=_peer_text("flink", e2e.flink, "Flink SQL"),
        table=_table(e2e),
        reading=_reading(e2e),
        notes=bullets(e2e.notes),
        image=image(images, "e2e", "end-to-end throughput"),
    )


def steady_section(steady: EndToEndResult) -> str:
    """Experiment 3 again over a larger preloaded topic, with the issue's steady-state targets."""
    data = steady.dataset or {}
    return render(
        "steady",
        records=fmt(data.get("records")),
        mbytes=fmt(data.get("mbytes"), ".0f"),
        topic=data.get("topic", "?"),
        partitions=data.get("partitions", "?"),
        span_s=data.get("span_s", "?"),
        table=_table(steady),
        verdicts=bullets(_steady_verdicts(steady)),
        reading=_reading(steady),
        notes=bullets(steady.notes),
    )


def memory_section(memory: MemoryFigures) -> str:
    """Experiment 5: memory, measured in the Mars end-to-end runs (peers for comparison)."""
    peers = [
        f"| {label} (for comparison) | {value} |"
        for label, found in (
            ("Quix Streams RSS, all its processes", memory.quix_peak_rss_mb),
            ("Flink SQL RSS, Python process + JVM", memory.flink_peak_rss_mb),
        )
        if (value := med(found, ".0f")) != "—"
    ]
    return render(
        "memory",
        redis=med(memory.redis_peak_mb, ".1f"),
        mapper=med(memory.mapper_peak_rss_mb, ".0f"),
        reducer=med(memory.reducer_peak_rss_mb, ".0f"),
        spark=med(memory.spark_peak_rss_mb, ".0f"),
        peers="\n".join(peers),
    )


def _steady_verdicts(steady: EndToEndResult) -> list[str]:
    mars_rate = steady.mars.records_per_s.median
    checks = [  # (peer, its results, Mars's rate over its rate must reach, or pass)
        ("PySpark Structured Streaming", steady.spark, STEADY_VS_SPARK_TARGET, False),
        ("Quix Streams", steady.quix, STEADY_VS_QUIX_TARGET, False),
        ("Flink SQL (ahead: more than 1x)", steady.flink, STEADY_VS_FLINK_TARGET, True),
    ]
    lines = []
    for name, system, goal, strictly in checks:
        if not system or not system.runs:
            lines.append(f"vs {name}: not measured in this run")
            continue
        got = ratio(mars_rate, system.records_per_s.median)
        met = got > goal if strictly else got >= goal
        verdict = "met" if met else f"**missed** by {fmt(goal - got, '.2f')}x"
        lines.append(f"vs {name}: {fmt(got, '.2f')}x, target {fmt(goal, 'g')}x: {verdict}")
    return lines


def _table(e2e: EndToEndResult) -> str:
    rows = [_row("Mars", e2e.mars), _row("PySpark Structured Streaming", e2e.spark)]
    for peer, name, key in (
        (e2e.quix, "Quix Streams", "quixstreams"),
        (e2e.flink, "Flink SQL", "flink"),
    ):
        if peer:
            rows.append(_row(f"{name} {peer.settings.get(key, '')}", peer))
    for ceiling, name in (
        (e2e.ceiling, "ceiling (consume + decode)"),
        (e2e.ceiling_native, "ceiling, native consumer (consume + decode)"),
    ):
        if ceiling:
            per_cpu = ceiling.records_per_cpu_s.median
            rows.append(
                f"| {name} | — | — | {med(ceiling.records_per_s)} "
                f"| {med(ceiling.mb_per_s, '.1f')} | — | — | {fmt(ratio(1e6, per_cpu), '.2f')} |"
            )
    return "\n".join(rows)


def _row(name: str, system: SystemFigures) -> str:
    return (
        f"| {name.strip()} | {med(system.startup_s, '.1f')} "
        f"| {med(system.seconds, '.1f')} | {med(system.records_per_s)} "
        f"| {med(system.mb_per_s, '.1f')} | {med(system.records_per_s_with_startup)} "
        f"| {med(system.cpu_s, '.1f')} | {med(system.cpu_s_per_million, '.1f')} |"
    )


def _peer_text(template: str, peer: SystemFigures | None, name: str) -> str:
    """How a peer was run, from its settings; `` for results from before it was measured."""
    if peer is None:
        return ""
    if not peer.settings:
        return f"{name}: not measured in this run (see below). "
    applications = (
        "one application"
        if peer.processes == 1
        else f"{peer.processes} applications in one consumer group, each its own state directory"
    )
    values = dict(peer.settings)
    for interval in ("commit_interval_s", "checkpoint_interval_s"):
        if interval in values:
            values[interval] = fmt(values[interval], "g")
    return render(template, applications=applications, **values) + " "


def _reading(e2e: EndToEndResult) -> str:
    mars_rate = e2e.mars.records_per_s.median
    ratios = [f"Mars vs PySpark: {fmt(ratio(mars_rate, e2e.spark.records_per_s.median), '.2f')}x"]
    for peer, name in ((e2e.quix, "Quix Streams"), (e2e.flink, "Flink SQL")):
        if peer:
            got = ratio(mars_rate, peer.records_per_s.median)
            ratios.append(f"Mars vs {name}: {fmt(got, '.2f')}x")
    flink = e2e.flink if e2e.flink and e2e.flink.runs else None
    return render(
        "e2e_reading",
        ratios="; ".join(ratios),
        spark_sessions=_sessions(e2e.spark),
        flink_start=render("e2e_flink_start", sessions=_sessions(flink)) if flink else "",
        flink_cpu="; Flink SQL, its Python process and JVM once the INSERT is submitted"
        if flink
        else "",
    )


def _sessions(system: SystemFigures) -> str:
    """Each run's time until the peer's session was up (`SESSION`), from its launch."""
    return ", ".join(fmt(r.get("session_start_s"), ".1f") + " s" for r in system.runs)
