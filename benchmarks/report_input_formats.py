"""Section 3c of `docs/benchmarks.md`: experiment 3b per input format (`benchmarks/exp_formats.py`),
with the formats' targets: Mars's cost per record over JSON and Avro against CSV's, and Mars
over JSON against the peers over JSON."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.e2e_figures import SystemFigures
from benchmarks.experiment import render
from benchmarks.report_format import bullets, fmt, med
from benchmarks.stats import ratio
from benchmarks.targets import (
    FORMAT_COST_VS_CSV_TARGET,
    STEADY_VS_FLINK_TARGET,
    STEADY_VS_SPARK_TARGET,
)

if TYPE_CHECKING:
    from benchmarks.exp_formats import FormatsResult

FORMATS_HEADING = "## 3c. Steady state per input format: CSV, JSON, Avro, Protobuf"
_LABELS = {"csv": "CSV", "json": "JSON", "avro": "Avro", "protobuf": "Protobuf"}


def per_cpu_second(system: SystemFigures) -> float:
    """Records per CPU-second (median of the runs)."""
    return ratio(1e6, system.cpu_s_per_million.median)


def formats_section(result: FormatsResult) -> str:
    csv = result.mars.get("csv")
    csv_per_cpu = per_cpu_second(csv) if csv else float("nan")
    rows = [
        _row(f"Mars, {_LABELS.get(name, name)}", system, result.topics.get(name, {}), csv_per_cpu)
        for name, system in result.mars.items()
    ]
    for name, peer in (
        ("PySpark Structured Streaming, JSON", result.spark_json),
        (f"Flink SQL {(result.flink_json.settings if result.flink_json else {}).get('flink', '')}"
         ", JSON", result.flink_json),
    ):  # fmt: skip
        if peer is not None:
            rows.append(_row(name, peer, result.topics.get("json", {}), csv_per_cpu))
    some = next(iter(result.topics.values()), {})
    return render(
        "formats",
        records=fmt(some.get("records")),
        mappers=result.mappers,
        reducers=result.reducers,
        table="\n".join(rows),
        verdicts=bullets(format_verdicts(result)),
        notes=bullets(result.notes),
    )


def format_verdicts(result: FormatsResult) -> list[str]:
    """The formats' targets, each `met` or `**missed**` (or not measured)."""
    lines = []
    csv = result.mars.get("csv")
    for name in ("json", "avro"):
        system = result.mars.get(name)
        if csv is None or system is None:
            lines.append(f"Mars {_LABELS[name]} vs CSV, CPU per record: not measured")
            continue
        cost = ratio(per_cpu_second(csv), per_cpu_second(system))
        verdict = "met" if cost <= FORMAT_COST_VS_CSV_TARGET else "**missed**"
        lines.append(
            f"Mars {_LABELS[name]}: {fmt(cost, '.2f')}x CSV's CPU per record, target <= "
            f"{fmt(FORMAT_COST_VS_CSV_TARGET, 'g')}x: {verdict}"
        )
    json_mars = result.mars.get("json")
    for name, peer, goal, strictly in (
        ("PySpark Structured Streaming", result.spark_json, STEADY_VS_SPARK_TARGET, False),
        ("Flink SQL (ahead: more than 1x)", result.flink_json, STEADY_VS_FLINK_TARGET, True),
    ):
        if json_mars is None or peer is None or not peer.runs:
            lines.append(f"Mars JSON vs {name} JSON: not measured in this run")
            continue
        got = ratio(json_mars.records_per_s.median, peer.records_per_s.median)
        met = got > goal if strictly else got >= goal
        verdict = "met" if met else "**missed**"
        lines.append(
            f"Mars JSON vs {name} JSON, records/s: {fmt(got, '.2f')}x, target "
            f"{fmt(goal, 'g')}x: {verdict}"
        )
    return lines


def _row(name: str, system: SystemFigures, topic: dict[str, object], csv_per_cpu: float) -> str:
    per_cpu = per_cpu_second(system)
    return (
        f"| {name} | {fmt(topic.get('mean_bytes'), '.0f')} | {med(system.seconds, '.1f')} "
        f"| {med(system.records_per_s)} | {med(system.mb_per_s, '.1f')} "
        f"| {med(system.cpu_s_per_million, '.2f')} | {fmt(per_cpu)} "
        f"| {fmt(ratio(csv_per_cpu, per_cpu), '.2f')}x |"
    )
