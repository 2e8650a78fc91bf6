"""Section 10 of `docs/benchmarks.md`: the live pre-aggregation, mapper processes vs the Spark
stream (experiment 10), from its results."""

from __future__ import annotations

from typing import TYPE_CHECKING

from benchmarks.experiment import render
from benchmarks.report_format import fmt
from benchmarks.stream_figures import ModeFigures

if TYPE_CHECKING:  # the experiment's module imports this one
    from benchmarks.exp_spark_stream import SparkStreamResult

SPARK_STREAM_HEADING = "## 10. Live pre-aggregation: mapper processes vs the Spark stream"


def spark_stream_section(found: SparkStreamResult) -> str:
    data, modes, ratios = found.dataset, found.modes, found.ratios
    spark = modes["spark"]
    labels = {
        "mappers": f"{found.mappers} `mars mapper` processes",
        "spark": f"`mars spark stream`, standalone master + {found.workers} workers",
    }
    batches = spark.micro_batches
    return render(
        "spark_stream",
        records=fmt(data["records"]),
        mbytes=fmt(data["mbytes"], ".1f"),
        partitions=data["partitions"],
        mappers=labels["mappers"],
        spark=labels["spark"],
        batch_size=fmt(found.batch_size),
        executor_memory=found.executor_memory,
        trigger_s=fmt(found.trigger_s, ".0f"),
        cluster_s=fmt(found.spark_cluster_start_s, ".1f"),
        rows="\n".join(_row(labels[name], modes[name]) for name in ("mappers", "spark")),
        **{f"ratio_{name}": fmt(value, ".2f") for name, value in ratios.items()},
        batches=f"{fmt(batches)} micro-batch{'' if batches == 1 else 'es'}",
        cpu_s=fmt(spark.cpu_s, ".1f"),
        executors_cpu_s=fmt(spark.executors_cpu_s, ".1f"),
    )


def _row(label: str, mode: ModeFigures) -> str:
    if not mode.complete:
        return (
            f"| {label} | {fmt(mode.startup_s, '.1f')} s | | not all applied "
            f"({fmt(mode.records_in)} records) | | | | |"
        )
    return (
        f"| {label} | {fmt(mode.startup_s, '.1f')} s | {fmt(mode.steady_from_s, '.1f')} s "
        f"| {fmt(mode.seconds, '.1f')} s | {fmt(mode.records_per_s)} "
        f"| {fmt(mode.steady_records_per_s)} | {fmt(mode.cpu_s, '.1f')} "
        f"| {fmt(mode.steady_records_per_cpu_s)} |"
    )
