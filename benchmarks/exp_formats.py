"""Experiment 3c: the steady state of experiment 3b per input format. The same tuples (same
seed) are preloaded four times, as CSV lines, JSON objects, and bare Avro and Protobuf payloads
of the reference schema (each a topic of its own; the binary ones read through the task's
`schema_file`). Mars runs the reference query over each topic; PySpark Structured Streaming and
Flink SQL run it over the JSON topic, in the same invocation, runs interleaved.

What it checks (`benchmarks/report_input_formats.py`): Mars's records per CPU-second over JSON
and over Avro within 1.25x of its CSV figure (CPU seconds of the mappers and reducers, so the
load of the machine matters less than for wall-clock rates), and over JSON at least 3x PySpark's
marginal rate and ahead of Flink SQL's, as experiment 3b asks over CSV.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from benchmarks.e2e_figures import SystemFigures
from benchmarks.e2e_peers import flink_run, spark_run
from benchmarks.exp_end_to_end import mars_run, peer_run
from benchmarks.experiment import Base, Context, Section
from benchmarks.report_input_formats import FORMATS_HEADING, formats_section
from benchmarks.workload import Dataset, preload
from devtools.gen import Encoding

ENCODINGS = (Encoding.CSV, Encoding.JSON, Encoding.AVRO, Encoding.PROTOBUF)


@dataclass(frozen=True, slots=True)
class FormatsSettings:
    records: int = 3_000_000  # per format: experiment 3b's steady state
    flink_parallelism: int = 2  # one task slot per core, as in experiment 3
    QUICK: ClassVar[dict[str, object]] = {"records": 600_000}


@dataclass(frozen=True, slots=True, kw_only=True)
class FormatsResult:
    """Mars per encoding (`csv`, `json`, `avro`, `protobuf`), the peers over JSON, and each
    topic's size (`topics`: encoding -> topic, records, mean_bytes, mbytes)."""

    mappers: int = 0
    reducers: int = 0
    mars: dict[str, SystemFigures] = field(default_factory=dict)
    spark_json: SystemFigures | None = None
    flink_json: SystemFigures | None = None
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class InputFormats(Base[FormatsSettings, FormatsResult]):
    """Experiment 3c (the module's docstring)."""

    name = "formats"
    title = "experiment 3b per input format: CSV, JSON, Avro, Protobuf; the peers over JSON"
    sections = (Section(3.6, FORMATS_HEADING),)
    settings_type = FormatsSettings
    result_type = FormatsResult

    def run(self, ctx: Context, settings: FormatsSettings) -> FormatsResult:
        config, log, work_dir = ctx.config, ctx.log, ctx.work_dir(self.name)
        topics: dict[Encoding, Dataset] = {}
        for encoding in ENCODINGS:
            topic = f"S_format_{encoding.value}"
            log(f"preloading {settings.records:,} {encoding.value} records into {topic} ...")
            topics[encoding] = preload(
                ctx.bench.kafka,
                topic=topic,
                records=settings.records,
                partitions=config.partitions,
                span_s=config.span_s,
                encoding=encoding,
                schema_dir=work_dir,
            )
            log(f"  {topics[encoding].mbytes:.1f} MB")
        json_topic = topics[Encoding.JSON]
        mars: dict[str, list[dict[str, Any]]] = {e.value: [] for e in ENCODINGS}
        spark: list[dict[str, Any]] = []
        flink: list[dict[str, Any]] = []
        notes: list[str] = []
        for index in range(config.runs):
            for encoding, data in topics.items():
                found = mars_run(
                    ctx.bench,
                    data,
                    mappers=config.mappers,
                    reducers=config.reducers,
                    timeout_s=config.timeout_s,
                )
                mars[encoding.value].append(found)
                log(f"  mars {encoding.value} run {index + 1}: {found['seconds']:.1f} s")
            for runs, name, run in (
                (
                    spark,
                    "PySpark Structured Streaming",
                    lambda: spark_run(
                        ctx.bench, json_topic, timeout_s=config.timeout_s, log_dir=work_dir
                    ),
                ),
                (
                    flink,
                    "Flink SQL",
                    lambda: flink_run(
                        ctx.bench,
                        json_topic,
                        parallelism=settings.flink_parallelism,
                        timeout_s=config.timeout_s,
                        log_dir=work_dir,
                    ),
                ),
            ):
                peer = peer_run(run, name=name, data=json_topic, notes=notes, log=log)
                if peer is not None:
                    runs.append(peer)
                    log(f"  {name} json run {index + 1}: {peer['seconds']:.1f} s")
        return FormatsResult(
            mappers=config.mappers,
            reducers=config.reducers,
            mars={e.value: SystemFigures.of(mars[e.value], topics[e]) for e in ENCODINGS},
            spark_json=SystemFigures.of(spark, json_topic) if spark else None,
            flink_json=replace(
                SystemFigures.of(flink, json_topic),
                parallelism=settings.flink_parallelism,
                settings=flink[0]["settings"],
            )
            if flink
            else None,
            topics={
                e.value: {
                    "topic": data.topic,
                    "records": data.records,
                    "mean_bytes": data.mean_bytes,
                    "mbytes": data.mbytes,
                }
                for e, data in topics.items()
            },
            notes=notes,
        )

    def report(self, result: FormatsResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        return (formats_section(result),) if result else self.not_run()
