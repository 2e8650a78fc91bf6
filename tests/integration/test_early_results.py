"""Current values of open windows: EMIT CHANGES and pull queries, on a 10-minute window under
live traffic, with a mapper, a reducer and the API as real processes.

- the updates topic shows each group's count growing before the window closes; the last update
  of each (window, group) is marked final and equals its result, which the results topic holds
  exactly once, equal to the DuckDB oracle;
- pull queries (`GET /tasks/{id}/windows`) answer while traffic flows, never above the final
  values and never older than they say; once the stream is merged they equal the oracle over
  every record accepted; filters by group and window work, a bad one is a 422; after the close
  the same query returns the final rows. Once per watermark mode: with `watermark = 'key'` a
  group closed by its key clock leaves the current rows for its final one.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devtools.gen import GeneratorConfig
from devtools.local import ClusterState
from tests.integration.pipeline import OracleInBackground, TopicReader, check_exact, wait_for
from tests.integration.watched import (
    WatchedPipeline,
    close_every_window,
    live_producer,
    make_topic,
)
from tests.oracle import ExpectedResults

pytestmark = pytest.mark.integration

RATE = 1_000
PRODUCE_S = 30
PARTITIONS = 2
WINDOW_MS = 600_000
EMIT_EVERY_S = 5
SQL = (
    "SELECT type, count(*) AS n, sum(bytes) AS total FROM {topic} "
    f"GROUP BY type WINDOWING 10 m EMIT CHANGES EVERY {EMIT_EVERY_S} s"
)
CHECKPOINT_INTERVAL_MS = 2_000
STALENESS_BOUND_MS = CHECKPOINT_INTERVAL_MS + 3_000  # + one owner publication and the poll


@pytest.mark.pipeline(
    mappers=1,
    reducers=1,
    env={"MARS_REDUCER__CHECKPOINT_INTERVAL_MS": str(CHECKPOINT_INTERVAL_MS)},
)
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "watermark",
    [{}, {"watermark": "key", "key_lag": "0 s"}],
    ids=["partition-watermark", "key-watermark"],
)
def test_emit_changes_and_pull_queries_on_a_ten_minute_window(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
    watermark: dict[str, str],
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    task = f"{unique_name}t"
    options = {"idle_timeout": "10 m", "buckets": 2, **watermark}
    body = pipeline.register(SQL.format(topic=topic), task_id=task, options=options)
    updates_topic = f"mars.updates.{task}"
    assert body["spec"]["options"]["emit_interval_ms"] == EMIT_EVERY_S * 1000
    start_s = int(time.time())
    config = GeneratorConfig(count=RATE * PRODUCE_S, start_s=start_s, span_s=PRODUCE_S, seed=5)
    oracle = OracleInBackground(
        config,
        group_by=["type"],
        window_ms=WINDOW_MS,
        aggregates={"n": "count(*)", "total": "sum(bytes)"},
    )
    producer = live_producer(
        cluster.kafka_bootstrap, topic, start_s=start_s, rate=RATE, seconds=PRODUCE_S, seed=5
    )
    during = _pull_while(pipeline, task, producer.done)
    producer.join(timeout_s=30)
    expected, _malformed = oracle.result(timeout_s=120)
    oracle.close()
    _check_pulls_during_traffic(during, expected)
    _check_pull_after_merge(pipeline, task, expected)
    _check_filters(pipeline, task, expected)

    close_every_window(
        cluster.kafka_bootstrap, topic, after_s=start_s + PRODUCE_S, partitions=PARTITIONS
    )
    reader = TopicReader(cluster.kafka_bootstrap, [body["topics"]["output"], updates_topic])
    try:
        wait_for(
            lambda: len(reader.values(body["topics"]["output"])) >= len(expected),
            timeout_s=60,
            what="the final results",
            logs=pipeline.logs,
            every=lambda: reader.poll_for(0.5),
        )
        reader.poll_for(2.0)
        results = reader.values(body["topics"]["output"])
        updates = reader.values(updates_topic)
    finally:
        reader.close()
    check_exact(results, expected, ("type",), ("n", "total"))
    _check_updates(updates, results)
    final = pipeline.get(f"/tasks/{task}/windows")
    closed = {(r["window_start"], r["type"]): r["n"] for r in final["rows"] if r["final"]}
    assert closed == {(key[0], key[1]): value["n"] for key, value in expected.items()}


def _pull_while(pipeline: WatchedPipeline, task: str, done: Any) -> list[dict[str, Any]]:
    answers = []
    while not done():
        answers.append(pipeline.get(f"/tasks/{task}/windows"))
        time.sleep(1.0)
    return answers


def _current(answer: dict[str, Any]) -> dict[tuple[int, str], dict[str, Any]]:
    return {(r["window_start"], r["type"]): r for r in answer["rows"] if not r["final"]}


def _check_pulls_during_traffic(answers: list[dict[str, Any]], expected: ExpectedResults) -> None:
    """Values while traffic flows: never above the final ones, growing, and as fresh as said."""
    with_values = [a for a in answers if _current(a)]
    assert len(with_values) >= 5, answers[-3:]
    previous: dict[tuple[int, str], int] = {}
    grew = 0  # values of a group seen growing between answers (its window still open)
    for answer in with_values:
        assert answer["as_of_ms"] is not None
        assert answer["staleness_ms"] <= STALENESS_BOUND_MS, answer["staleness_ms"]
        for key, row in _current(answer).items():
            assert row["n"] <= expected[key]["n"], (key, row, expected[key])
            assert row["n"] >= previous.get(key, 0), (key, row["n"], previous[key])
            grew += key in previous and row["n"] > previous[key]
            previous[key] = row["n"]
    assert grew > 0


def _check_pull_after_merge(
    pipeline: WatchedPipeline, task: str, expected: ExpectedResults
) -> None:
    """Once the whole stream is merged and checkpointed, the values are the oracle's: within
    the stated staleness of the stream's end, a pull answers exactly. The 30 s of traffic may
    straddle a 10-minute boundary: the earlier window then closes, and its rows come final."""
    last: dict[str, Any] = {}

    def exact() -> bool:
        last.update(pipeline.get(f"/tasks/{task}/windows"))
        got = {
            (r["window_start"], r["type"]): {"n": r["n"], "total": r["total"]} for r in last["rows"]
        }
        return got == dict(expected)

    waited = wait_for(exact, timeout_s=30, what="pull values equal to the oracle's")
    assert waited * 1000 <= STALENESS_BOUND_MS + 2_000, waited
    assert last["backlog_datasets"] == 0 and last["staleness_ms"] <= STALENESS_BOUND_MS


def _check_filters(pipeline: WatchedPipeline, task: str, expected: ExpectedResults) -> None:
    (window, group), values = next(iter(expected.items()))
    answer = pipeline.get(f"/tasks/{task}/windows?group.type={group}&window_start={window}")
    assert [(r["window_start"], r["type"], r["n"]) for r in answer["rows"]] == [
        (window, group, values["n"])
    ]
    assert pipeline.get(f"/tasks/{task}/windows?group.type=no-such-type")["rows"] == []
    bad = pipeline.call("GET", f"/tasks/{task}/windows?group.sip=1.2.3.4")
    assert bad.status_code == 422
    assert "group.sip: not a group column" in bad.json()["error"]["message"]


def _check_updates(updates: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    """Per (window, group): counts grow, at least one non-final update came before the close,
    the last update is final and equals the result."""
    by_key: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for update in updates:
        by_key[(update["window_start"], update["type"])].append(update)
    finals = {(r["window_start"], r["type"]): r for r in results}
    assert set(by_key) >= set(finals)
    for key, result in finals.items():
        history = by_key[key]
        counts = [u["n"] for u in history]
        assert counts == sorted(counts), (key, counts)
        assert any(not u["final"] for u in history), key
        assert [u["final"] for u in history].count(True) == 1 and history[-1]["final"], key
        assert {k: v for k, v in history[-1].items() if k != "final"} == result
