"""Experiment 4: how long after the watermark passes a window's end (+ grace, 0 here) are its
results readable in Kafka (read_committed)?

Live paced traffic (event time = wall clock) at a fraction of the measured maximum rate,
5 s tumbling windows so a run closes many windows. Per window: readable = wall time the last
of its result rows reached a live read_committed consumer; watermark passage = from the
source data (`benchmarks.watermark_times`). Windows ending in the first `warmup_s` are left
out (the mappers start from an empty group). The load generator runs in its own process, so
the reader's arrival times are not delayed by the generator holding this process's GIL.
"""

from __future__ import annotations

import dataclasses
import math
import multiprocessing
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import ClassVar

from benchmarks.e2e_figures import EndToEndResult
from benchmarks.experiment import Base, Context, Section, render
from benchmarks.harness import BenchCluster, Run, fresh_id
from benchmarks.report_format import fmt, image
from benchmarks.results_reader import ResultReader
from benchmarks.stats import percentile
from benchmarks.watermark_times import (
    crossing_times,
    read_event_times,
    watermark_passage,
    window_latencies,
)
from benchmarks.workload import paper_sql
from devtools.gen import Encoding, GeneratorConfig
from devtools.gen.produce import produce
from mars.config import KafkaSettings
from mars.tasks.spec import default_output_topic


@dataclass(frozen=True, slots=True, kw_only=True)
class Traffic:
    """The load generator's process, started at `start_s` (epoch s, its first event time)."""

    process: BaseProcess
    start_s: int

    def join(self) -> None:
        """Until every record is sent; a failed generator raises."""
        self.process.join()
        if self.process.exitcode != 0:
            raise RuntimeError(f"the load generator failed (exit code {self.process.exitcode})")

    def stop(self) -> None:
        """SIGTERM the generator if it is still sending (the measurement is over)."""
        if self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=10)


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveTask:
    """A task (the reference query by default) over a fresh live topic, its processes running, a
    reader on its result topic."""

    bench: BenchCluster
    run: Run
    topic: str
    task_id: str
    window_s: int
    reader: ResultReader

    def send(self, *, rate: float, duration_s: int, sips: int = 1000) -> int:
        """Paced traffic (event time = wall clock, `sips` distinct sips x 8 types) from a
        separate process, until sent; the first event time (epoch s)."""
        traffic = self.start_traffic(rate=rate, duration_s=duration_s, sips=sips)
        traffic.join()
        return traffic.start_s

    def start_traffic(self, *, rate: float, duration_s: int, sips: int = 1000) -> Traffic:
        """The same traffic as `send`, returning at once: measure while it flows."""
        return start_traffic(
            self.bench.kafka, self.topic, rate=rate, duration_s=duration_s, sips=sips
        )

    def passages(self, *, start_s: int, duration_s: int) -> dict[int, int]:
        """Window end (ms) -> when the watermark passed it (ms), from the source data."""
        return source_passages(
            self.bench.kafka,
            self.topic,
            ends_ms=window_ends(start_s, duration_s, self.window_s),
        )


def start_traffic(
    kafka: KafkaSettings,
    topic: str,
    *,
    rate: float,
    duration_s: int,
    sips: int = 1000,
    zipf_s: float = 0.0,
) -> Traffic:
    """Paced CSV traffic into `topic` (event time = wall clock, `sips` distinct sips x 8
    types, Zipf-skewed fields when `zipf_s` > 0) from a separate process, returning at once."""
    start_s = int(time.time())
    config = GeneratorConfig(
        count=int(rate * duration_s),
        seed=start_s,
        start_s=start_s,
        span_s=duration_s,
        sip_cardinality=sips,
        zipf_s=zipf_s,
        encoding=Encoding.CSV,
    )
    generator = multiprocessing.get_context("spawn").Process(
        target=produce,
        args=(kafka, topic, config),
        kwargs={"rate": rate, "chunk_size": max(1000, int(rate))},
    )
    generator.start()
    return Traffic(process=generator, start_s=start_s)


def source_passages(kafka: KafkaSettings, topic: str, *, ends_ms: list[int]) -> dict[int, int]:
    """Window end (ms) -> when the watermark passed it (ms), from the source topic's data."""
    return watermark_passage(
        {
            p: crossing_times(records, ends_ms)
            for p, records in read_event_times(kafka, topic).items()
        }
    )


@contextmanager
def live_task(
    bench: BenchCluster,
    *,
    window_s: int,
    mappers: int,
    reducers: int,
    prefix: str = "lat",
    query: Callable[[str], str] | None = None,
) -> Iterator[LiveTask]:
    """Mappers and reducers with default settings (the latency a user gets), the task
    registered on a fresh 4-partition topic; the reader stops and the processes with it.
    `query` gives the task's SQL for the topic (default: the reference query, `window_s`
    windows)."""
    topic = fresh_id(f"{prefix}_")
    bench.create_topic(topic, 4)
    with bench.run() as run:
        run.start_mappers(mappers)
        run.start_reducers(reducers)
        task_id = fresh_id(f"{prefix}-")
        reader = bench.read_results(ResultReader, default_output_topic(task_id))
        sql = query(topic) if query else paper_sql(topic, window=f"{window_s} s", idle="60 s")
        run.register(sql, task_id=task_id)
        try:
            yield LiveTask(
                bench=bench,
                run=run,
                topic=topic,
                task_id=task_id,
                window_s=window_s,
                reader=reader,
            )
        finally:
            reader.stop()


def latency_run(
    ctx: Context, settings: LatencySettings, *, rate: float, warmup_s: float = 10.0
) -> list[float]:
    """Latencies (seconds) of the windows of one run."""
    window_s, duration_s, config = settings.window_s, settings.duration_s, ctx.config
    with live_task(
        ctx.bench, window_s=window_s, mappers=config.mappers, reducers=config.reducers
    ) as live:
        start_s = live.send(rate=rate, duration_s=duration_s)
        time.sleep(window_s + 5)
    return window_latencies(
        {start: seen.last_arrival_s for start, seen in live.reader.snapshot().items()},
        live.passages(start_s=start_s, duration_s=duration_s),
        window_ms=window_s * 1000,
        from_ms=int((start_s + warmup_s) * 1000),
    )


def window_ends(start_s: int, duration_s: int, window_s: int) -> list[int]:
    first = (start_s // window_s + 1) * window_s
    return [s * 1000 for s in range(first, start_s + duration_s + window_s, window_s)]


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyRun:
    windows: int = 0
    p50_s: float = math.nan
    p99_s: float = math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyResult:
    """Every window's latency at `rate`; `lighter`: the same at half that rate."""

    rate: float = math.nan
    window_s: int = 0
    duration_s: int = 0
    windows: int = 0
    p50_s: float = math.nan
    p99_s: float = math.nan
    max_s: float = math.nan
    latencies_s: list[float] = field(default_factory=list)
    runs: list[LatencyRun] = field(default_factory=list)
    lighter: LatencyResult | None = None


@dataclass(frozen=True, slots=True)
class LatencySettings:
    duration_s: int = 60
    window_s: int = 5
    QUICK: ClassVar[dict[str, object]] = {"duration_s": 30}


class Latency(Base[LatencySettings, LatencyResult]):
    """Experiment 4 at half the measured maximum rate, then at half of that (`lighter`), to
    tell the latency floor from the cost of load on a machine the load generator and Kafka
    share with the pipeline."""

    name = "latency"
    title = "experiment 4, latency at half the measured maximum rate"
    sections = (Section(4, "## 4. Latency: watermark past window end + grace -> results readable"),)
    settings_type = LatencySettings
    result_type = LatencyResult

    def run(self, ctx: Context, settings: LatencySettings) -> LatencyResult:
        rate = half_the_maximum(ctx.results)
        found = latency_experiment(ctx, settings, rate=rate)
        return dataclasses.replace(
            found, lighter=latency_experiment(ctx, settings, rate=round(rate / 2, -2))
        )

    def report(self, result: LatencyResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return self.not_run()
        points = [("half the maximum (target)", result)]
        if result.lighter:
            points.append(("a quarter of the maximum", result.lighter))
        rows = [
            f"| {label} | {fmt(point.rate)} | {point.windows} | {fmt(point.p50_s, '.3f')} s "
            f"| {fmt(point.p99_s, '.3f')} s | {fmt(point.max_s, '.3f')} s |"
            for label, point in points
        ]
        text = render(
            "latency",
            rate=fmt(result.rate),
            window_s=result.window_s,
            duration_s=result.duration_s,
            rows="\n".join(rows),
            image=image(images, "latency", "latency distribution"),
        )
        return (text,)


def half_the_maximum(results: Mapping[str, object]) -> float:
    """Half the end-to-end median if measured, else half 2 mappers', else 5,000 records/s."""
    e2e, processes = results.get("e2e"), results.get("processes")
    candidates = [
        e2e.mars.records_per_s.median if isinstance(e2e, EndToEndResult) else None,
        processes["2"].records_per_s.median
        if isinstance(processes, dict) and "2" in processes
        else None,
    ]
    for value in candidates:
        if isinstance(value, int | float) and not math.isnan(value) and value > 0:
            return round(value / 2, -2)
    return 5000.0


def latency_experiment(ctx: Context, settings: LatencySettings, *, rate: float) -> LatencyResult:
    latencies: list[float] = []
    per_run = []
    for index in range(ctx.config.runs):
        found = latency_run(ctx, settings, rate=rate)
        latencies += found
        per_run.append(
            LatencyRun(windows=len(found), p50_s=percentile(found, 50), p99_s=percentile(found, 99))
        )
        ctx.log(f"  latency run {index + 1}: {len(found)} windows, p50 {per_run[-1].p50_s:.3f} s")
    return LatencyResult(
        rate=rate,
        window_s=settings.window_s,
        duration_s=settings.duration_s,
        windows=len(latencies),
        p50_s=percentile(latencies, 50),
        p99_s=percentile(latencies, 99),
        max_s=max(latencies, default=math.nan),
        latencies_s=latencies,
        runs=per_run,
    )
