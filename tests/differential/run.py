"""Cases through the real pipeline: topics, records, tasks, results, comparison, shrinking.

`run_group` produces each case's stream into a topic of its own (every partition in order),
registers its task (the mappers then read the whole stream from the beginning, in batches of
the pipeline's size; or, for a `via_backfill` case, registers it paused, lets `backfill` apply
the stream and resumes it), waits until every task has read all its records and emitted what the
oracle expects (the last windows close by idle close, `IDLE_TIMEOUT`), reads the result topics
with read_committed and compares. The tasks are deleted afterwards, so a long run does not
accumulate them.

`shrink` makes a failing case's stream smaller while it keeps failing (dropping chunks of
records, then single records, as delta debugging does), rerunning it alone each time.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient

from mars.tasks.spec import TaskSpec
from tests.differential.cases import Case
from tests.differential.compare import problems
from tests.differential.oracle import Expected, expected_of
from tests.integration.pipeline import TopicReader, produce_in_order
from tests.integration.watched import WatchedPipeline, make_topic

IDLE_TIMEOUT = "2 s"
Backfill = Callable[[TaskSpec], None]


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    problems: list[str]
    rows: int  # result rows compared


def run_group(
    pipeline: WatchedPipeline,
    admin: AdminClient,
    bootstrap: str,
    cases: Sequence[Case],
    *,
    prefix: str,
    backfill: Backfill | None = None,
    timeout_s: float = 60,
) -> list[Outcome]:
    """Run `cases` at once; `timeout_s`: how long after idle close the results may take."""
    tasks: list[str] = []
    outputs: list[str] = []
    updates: list[str | None] = []  # EMIT CHANGES: the updates topic
    for i, case in enumerate(cases):
        topic = make_topic(admin, f"{prefix}_{i}", partitions=len(case.partitions))
        produce_in_order(
            bootstrap,
            topic,
            ((p, value) for p, values in enumerate(case.encoded()) for value in values),
        )
        task = f"{prefix}t{i}"
        paused = backfill is not None and case.via_backfill
        body = _call(
            pipeline,
            "POST",
            "/tasks",
            {
                "sql": case.task_sql(topic),
                "id": task,
                "options": {"idle_timeout": IDLE_TIMEOUT, "buckets": 1 + case.seed % 4},
                "status": "PAUSED" if paused else "RUNNING",
            },
        )
        if paused:
            assert backfill is not None
            backfill(TaskSpec.from_json_dict(body["spec"]))
            _call(pipeline, "POST", f"/tasks/{task}/resume")
        tasks.append(task)
        outputs.append(body["topics"]["output"])
        updates.append(TaskSpec.from_json_dict(body["spec"]).updates_topic)
    expected = [expected_of(case) for case in cases]
    reader = TopicReader(bootstrap, outputs + [u for u in updates if u is not None])
    try:
        closing_s = (
            max(c.shape.size_ms + c.shape.grace_ms + (c.shape.key_lag_ms or 0) for c in cases)
            / 1000
        )
        deadline = time.monotonic() + timeout_s + closing_s
        while time.monotonic() < deadline:
            reader.poll_for(0.5)
            stats = [_stats(pipeline, task) for task in tasks]
            if all(
                s.get("records_in", 0) >= case.records
                and len(reader.values(out)) >= _rows_wanted(case, e)
                and (up is None or len(_final_updates(reader, up)) >= _rows_wanted(case, e))
                for s, case, e, out, up in zip(
                    stats, cases, expected, outputs, updates, strict=True
                )
            ):
                break
        reader.poll_for(2.0)  # anything beyond the expected rows shows now
        stats = [_stats(pipeline, task) for task in tasks]
        outcomes = [
            Outcome(
                case=case,
                problems=problems(case, e, reader.values(out), s)
                + (
                    []
                    if up is None
                    else [
                        f"updates topic: {problem}"
                        for problem in problems(case, e, _final_updates(reader, up), s)
                    ]
                ),
                rows=len(reader.values(out)),
            )
            for case, e, out, up, s in zip(cases, expected, outputs, updates, stats, strict=True)
        ]
    finally:
        reader.close()
    for task in tasks:
        _call(pipeline, "DELETE", f"/tasks/{task}")
    return outcomes


def shrink(
    case: Case, still_fails: Callable[[Case], bool], *, attempts: int = 24
) -> tuple[Case, int]:
    """A smaller stream on which `still_fails`; returns it and the attempts made."""
    made = 0
    chunks = 2
    while made < attempts:
        records = [(p, value) for p, values in enumerate(case.partitions) for value in values]
        if len(records) <= 1:
            break
        size = max(1, len(records) // chunks)
        reduced = False
        for start in range(0, len(records), size):
            if made >= attempts:
                break
            kept = records[:start] + records[start + size :]
            candidate = case.with_partitions(_by_partition(kept, len(case.partitions)))
            made += 1
            if still_fails(candidate):
                case, reduced = candidate, True
                chunks = max(chunks - 1, 2)
                break
        if not reduced:
            if size == 1:
                break
            chunks = min(len(records), chunks * 2)
    return case, made


def _by_partition(
    records: Sequence[tuple[int, bytes]], partitions: int
) -> tuple[tuple[bytes, ...], ...]:
    grouped: dict[int, list[bytes]] = defaultdict(list)
    for p, value in records:
        grouped[p].append(value)
    return tuple(tuple(grouped[p]) for p in range(partitions))


def _final_updates(reader: TopicReader, topic: str) -> list[dict[str, Any]]:
    """The updates topic's final rows (`"final": true`; tombstones and current values left out)."""
    return [row for row in reader.values(topic) if row and row.get("final")]


def _rows_wanted(case: Case, expected: Expected) -> int:
    if case.shape.top_k is None:
        return len(expected.rows)
    per_window: dict[tuple[Any, ...], int] = defaultdict(int)
    for key in expected.rows:
        per_window[case.shape.window_of(key)] += 1
    return sum(min(case.shape.top_k[1], n) for n in per_window.values())


def _call(
    pipeline: WatchedPipeline, method: str, path: str, body: dict[str, Any] | None = None
) -> dict[str, Any]:
    response = pipeline.call(method, path, body=body, timeout=60)
    assert response.is_success, f"{method} {path}: {response.status_code} {response.text}"
    return dict(response.json()) if response.content else {}


def _stats(pipeline: WatchedPipeline, task: str) -> dict[str, int]:
    body = pipeline.get(f"/tasks/{task}")
    return dict(body["stats"]["counters"])
