"""Section 10 of `docs/benchmarks.md`: the live pre-aggregation, mapper processes vs the Spark
stream (experiment 10), from its results."""

from __future__ import annotations

from typing import Any

from benchmarks.report_format import fmt

SPARK_STREAM_HEADING = "## 10. Live pre-aggregation: mapper processes vs the Spark stream"


def spark_stream_section(found: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    data, modes, ratios = found["dataset"], found["modes"], found["ratios"]
    spark = modes["spark"]
    labels = {
        "mappers": f"{found['mappers']} `mars mapper` processes",
        "spark": f"`mars spark stream`, standalone master + {found['workers']} workers",
    }
    return [
        *lines,
        f"The paper's query over {fmt(data['records'])} preloaded CSV tuples "
        f"({fmt(data['mbytes'], '.1f')} MB, {data['partitions']} partitions, no sentinel), "
        "pre-aggregated by each mode on a fresh task (own ZooKeeper root), one after the other: "
        f"{labels['mappers']} (batch {fmt(found['batch_size'])}), then the task registered "
        f"`WITH (preaggregation = 'spark')` and {labels['spark']} (1 core, 1 GiB each, "
        f"`spark.executor.memory={found['executor_memory']}`, trigger "
        f"{fmt(found['trigger_s'], '.0f')} s, chunks of {fmt(found['batch_size'])} records). "
        "No reducer: only the pre-aggregation is measured (records applied in Redis). Times "
        "from each mode's launch (processes started) until the task's exact `records_in` "
        "counter (Redis) reaches the preloaded count; start-up until the first record is "
        "applied (Spark: driver, application, executors and the first micro-batch's plan; the "
        "first micro-batch takes the whole topic); steady: from 10 % of the records applied "
        "to all of them. CPU seconds from the launch: the mappers; Spark's driver (Python and "
        "its JVM), master and workers with their executors (Kafka, Redis and the benchmark "
        f"not counted). The Spark master and workers were started before both modes (in "
        f"{fmt(found['spark_cluster_start_s'], '.1f')} s, not counted) and idle during the "
        "mappers' run. One run.",
        "",
        "| mode | start-up | 10 % applied at | all applied at | records/s from launch "
        "| steady records/s | CPU s | steady records per CPU-second |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *[_row(labels[name], modes[name]) for name in ("mappers", "spark")],
        f"| **mappers / Spark** | | | | {fmt(ratios['records_per_s'], '.2f')}x "
        f"| {fmt(ratios['steady_records_per_s'], '.2f')}x | "
        f"| {fmt(ratios['steady_records_per_cpu_s'], '.2f')}x |",
        "",
        f"The Spark stream ran {_batches(spark.get('micro_batches'))}; of its "
        f"{fmt(spark['cpu_s'], '.1f')} CPU seconds, the master, the workers and the executors "
        f"took {fmt(spark.get('executors_cpu_s'), '.1f')}, the driver the rest.",
        "",
    ]


def _row(label: str, mode: dict[str, Any]) -> str:
    if not mode["complete"]:
        return (
            f"| {label} | {fmt(mode['startup_s'], '.1f')} s | | not all applied "
            f"({fmt(mode['records_in'])} records) | | | | |"
        )
    return (
        f"| {label} | {fmt(mode['startup_s'], '.1f')} s | {fmt(mode['steady_from_s'], '.1f')} s "
        f"| {fmt(mode['seconds'], '.1f')} s | {fmt(mode['records_per_s'])} "
        f"| {fmt(mode['steady_records_per_s'])} | {fmt(mode['cpu_s'], '.1f')} "
        f"| {fmt(mode['steady_records_per_cpu_s'])} |"
    )


def _batches(count: int | None) -> str:
    return f"{fmt(count)} micro-batch{'' if count == 1 else 'es'}"
