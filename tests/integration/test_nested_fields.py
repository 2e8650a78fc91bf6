"""A task over live nested JSON, through the real pipeline, equal to the DuckDB oracle.

The records carry a nested object `m` (tests/differential/cases.py: missing or null at every
level, now and then a value of the wrong kind) and their event time both at the top (`ts`,
what the oracle reads) and nested (`meta.ts`, what one task reads). Two tasks, one mapper and
one reducer as real processes: group keys, WHERE and aggregate arguments are paths
(`m.u.id`, `m.tags[0]`, `m.w`); every result row and the bad/late/filtered counters must equal
the oracle's, which reads the paths with DuckDB's json functions.
"""

from __future__ import annotations

import json
import random

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from tests.differential.cases import AGGREGATES, Case, TaskShape, nested_object
from tests.differential.run import run_group
from tests.integration.watched import WatchedPipeline

pytestmark = pytest.mark.integration

BY_ALIAS = {a.alias: a for a in AGGREGATES}


class _NestedTimeShape(TaskShape):
    """A task shape whose event time is the path `meta.ts` (the same value as `ts`)."""

    __slots__ = ()

    def mars_sql(self, topic: str) -> str:
        sql = TaskShape.mars_sql(self, topic)
        return sql.replace("event_time = 'ts'", "event_time = 'meta.ts'")


def _stream(seed: int, partitions: int, count: int) -> tuple[tuple[bytes, ...], ...]:
    rng = random.Random(seed)
    streams: list[tuple[bytes, ...]] = []
    for p in range(partitions):
        now = 1_700_000_000_000 + p * 7
        records = []
        for _ in range(count):
            now += rng.choice([0, 5, 20, 40])
            ts = now - (rng.choice([0, 0, 0, 150]))  # a little disorder, some of it late
            body = {"ts": ts, "meta": {"ts": ts, "src": "x"}, "k1": rng.choice("abc")}
            body["m"] = nested_object(rng)
            records.append(json.dumps(body).encode())
        streams.append(tuple(records))
    return tuple(streams)


@pytest.mark.pipeline(mappers=1, reducers=1, env={"MARS_MAPPER__BATCH_SIZE": "50"})
@pytest.mark.timeout(300)
def test_tasks_over_nested_json_equal_the_oracle(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    by_user = _NestedTimeShape(
        keys=("m.u.id", "k1"),
        aggregates=(BY_ALIAS["n"], BY_ALIAS["smw"], BY_ALIAS["dtag"]),
        window="tumbling",
        size_ms=500,
        slide_ms=500,
        grace_ms=100,
        unit="ms",
        where="m.w IS NOT NULL OR m.u.id > 2",
    )
    by_tag = TaskShape(
        keys=("m.tags[0]",),
        aggregates=(BY_ALIAS["n"], BY_ALIAS["mxid"]),
        window="hopping",
        size_ms=1_000,
        slide_ms=500,
        grace_ms=0,
        unit="ms",
    )
    cases = [
        Case(seed=1, shape=by_user, partitions=_stream(1, 2, 300)),
        Case(seed=2, shape=by_tag, partitions=_stream(2, 2, 300)),
    ]
    outcomes = run_group(
        pipeline, kafka_admin, cluster.kafka_bootstrap, cases, prefix=f"{unique_name}n"
    )
    for outcome in outcomes:
        assert not outcome.problems, "\n".join(outcome.problems[:20])
        assert outcome.rows > 10
