"""Experiment 6 ([Mars]'s accuracy experiment, smaller): accuracy under faults.

A topic with 0.5 % malformed records and 3 s of disorder (so some records are late), read by
2 mappers and 2 reducers; a mapper is SIGKILLed at ~30 % of the input and a reducer at ~60 %,
each replaced at once. Check: sum of counts over all results + late + bad == produced, and no
(window, sip, type) emitted twice.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from benchmarks.experiment import Base, Context, Section, render
from benchmarks.harness import fresh_id
from benchmarks.report_format import fmt
from benchmarks.results_reader import ResultReader
from benchmarks.workload import paper_sql, preload
from mars.tasks.spec import default_output_topic


@dataclass(frozen=True, slots=True)
class FaultSettings:
    records: int = 200_000
    QUICK: ClassVar[dict[str, object]] = {"records": 50_000}


@dataclass(frozen=True, slots=True, kw_only=True)
class FaultResult:
    """Where every produced record went, the kills (`events`) and whether it adds up."""

    produced: int = 0
    in_results: int = 0
    late: int = 0
    bad: int = 0
    duplicates: int = 0
    seconds: float = 0.0
    events: list[str] = field(default_factory=list)
    ok: bool = False


class Faults(Base[FaultSettings, FaultResult]):
    """Experiment 6 (the module's docstring)."""

    name = "faults"
    title = "experiment 6, accuracy under faults"
    sections = (Section(6, "## 6. Accuracy under faults (Table 1, smaller)"),)
    settings_type = FaultSettings
    result_type = FaultResult

    def run(self, ctx: Context, settings: FaultSettings) -> FaultResult:
        return faults_experiment(ctx, records=settings.records)

    def report(self, result: FaultResult | None, images: Mapping[str, str]) -> tuple[str, ...]:
        if not result:
            return self.not_run()
        accounted = result.in_results + result.late + result.bad
        row = [
            *(fmt(v) for v in (result.produced, result.in_results, result.late, result.bad)),
            fmt(accounted),
            str(result.duplicates),
            "**exact**" if result.ok else "**MISMATCH**",
        ]
        return (render("faults", events="; ".join(result.events), row=" | ".join(row)),)


def faults_experiment(ctx: Context, *, records: int) -> FaultResult:
    bench, timeout_s = ctx.bench, ctx.config.timeout_s
    topic = fresh_id("faults_")
    data = preload(
        bench.kafka,
        topic=topic,
        records=records,
        partitions=4,
        span_s=300,
        sentinel=False,
        malformed_ratio=0.005,
        disorder_s=3,
        seed=11,
    )
    env = {"MARS_REDUCER__POLL_INTERVAL_MS": "50", "MARS_ZOOKEEPER__SESSION_TIMEOUT_S": "4"}
    events: list[str] = []
    with bench.run(batch_size=1000, extra_env=env) as run:
        run.start_mappers(2)
        run.start_reducers(2)
        task_id = fresh_id("faults-")
        reader = bench.read_results(ResultReader, default_output_topic(task_id))
        run.register(paper_sql(topic, window="10 s", idle="2 s"), task_id=task_id)
        started = time.monotonic()
        run.wait_records_in(int(records * 0.3), timeout_s=timeout_s)
        run.mappers[0].kill()
        events.append(
            f"kill -9 {run.mappers[0].name} at {run.stats().get('records_in', 0):,} records in"
        )
        run.start_mappers(1)
        run.wait_records_in(int(records * 0.6), timeout_s=timeout_s)
        run.reducers[0].kill()
        events.append(
            f"kill -9 {run.reducers[0].name} at {run.stats().get('records_in', 0):,} records in"
        )
        run.start_reducers(1)
        accounted = 0
        stats: dict[str, int] = {}
        while time.monotonic() - started < timeout_s:
            stats = run.stats()
            late = stats.get("late", 0) + stats.get("late_reducer", 0)
            accounted = reader.total() + late + stats.get("bad", 0)
            if accounted >= records:
                break
            time.sleep(0.5)
        time.sleep(2)  # anything emitted twice would show up now
        stats = run.stats()
        reader.stop()
    in_results = reader.total()
    late = stats.get("late", 0) + stats.get("late_reducer", 0)
    bad = stats.get("bad", 0)
    seconds = time.monotonic() - started
    duplicates = reader.duplicates()  # (counted from the rows' keys once reading is over)
    for event in events:
        ctx.log(f"  {event}")
    return FaultResult(
        produced=data.records,
        in_results=in_results,
        late=late,
        bad=bad,
        duplicates=duplicates,
        seconds=seconds,
        events=events,
        ok=in_results + late + bad == data.records and duplicates == 0,
    )
