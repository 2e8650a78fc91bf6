"""Experiment 6 (the paper's Table 1, smaller): accuracy under faults.

A topic with 0.5 % malformed records and 3 s of disorder (so some records are late), read by
2 mappers and 2 reducers; a mapper is SIGKILLed at ~30 % of the input and a reducer at ~60 %,
each replaced at once. Check: sum of counts over all results + late + bad == produced, and no
(window, sip, type) emitted twice.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.harness import BenchCluster, fresh_id
from benchmarks.results_reader import ResultReader
from benchmarks.workload import paper_sql, preload


def faults_experiment(
    bench: BenchCluster, *, records: int, timeout_s: float, log: Any = print
) -> dict[str, Any]:
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
        output = f"mars.results.{task_id}"
        bench.create_topic(output, bench.settings.kafka.result_partitions)
        reader = ResultReader(kafka=bench.kafka, topic=output, count_field="count_star")
        reader.start()
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
    for event in events:
        log(f"  {event}")
    return {
        "produced": data.records,
        "in_results": in_results,
        "late": late,
        "bad": bad,
        "duplicates": reader.duplicates(),
        "seconds": time.monotonic() - started,
        "events": events,
        "ok": in_results + late + bad == data.records and reader.duplicates() == 0,
    }
