"""The differential test: random tasks x random streams through the real pipeline, every result
row and counter compared with the DuckDB oracle of docs/semantics.md (tests/differential/).

Two mappers and two reducers as real processes on the local cluster, one reducer with the
Python open-window state and one with the columnar state (`reducer.columnar_state`) that
spills every merged frame to disk after each step (`reducer.state_budget_bytes` 0, in hash
partitions of any size: `reducer.spill_partition_min_rows` 1), so a tumbling or hopping case
of COUNT, SUM, MIN, MAX and AVG has units in each; mapper batches of 64 records, so batches
cut every stream (lateness must not depend on where). Cases run in groups of `GROUP` tasks at
once, each over a topic of its own. One case in six is registered paused, its whole stream
applied by a Spark backfill (local[2]), then resumed.

`make test` runs the fixed seed for `MARS_DIFFERENTIAL_BUDGET_S` seconds (default 240) or
`MARS_DIFFERENTIAL_CASES` cases (default 24: three groups, with every window kind, key
watermarks, EMIT CHANGES, Avro, Protobuf and backfill cases among them), whichever ends first.
The long mode sets both:

    MARS_DIFFERENTIAL_CASES=500 MARS_DIFFERENTIAL_BUDGET_S=7200 MARS_DIFFERENTIAL_SEED=1 \
        .venv/bin/python -m pytest tests/integration/test_differential.py -s

A failure prints the seed, the SQL and the stream shrunk to a smaller one that still fails;
`random_case(seed)` (tests/differential/cases.py) rebuilds the original.
`MARS_DIFFERENTIAL_WINDOW=cumulate` (or tumbling, hopping, session) runs only cases of that
window kind; `MARS_DIFFERENTIAL_WATERMARK=key` only cases with `watermark = 'key'` (of that
kind, with both).
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.aggregates import state_aggregates
from mars.config import Settings
from mars.sql.parser import parse_task
from mars.tasks.spec import TaskSpec
from reducer.columnar_choice import uses_columnar_state
from spark.backfill_job import BackfillJob, run_backfill
from spark.sources import KafkaSource
from tests.differential.cases import Case, random_case
from tests.differential.run import Outcome, run_group, shrink
from tests.integration.watched import WatchedPipeline, scrape, total

pytestmark = pytest.mark.integration

SEED = int(os.environ.get("MARS_DIFFERENTIAL_SEED", "20261125"))
CASES = int(os.environ.get("MARS_DIFFERENTIAL_CASES", "24"))
BUDGET_S = float(os.environ.get("MARS_DIFFERENTIAL_BUDGET_S", "240"))
# Only cases of this window kind (tumbling, hopping, session, cumulate): the seeds from SEED on
# whose case draws it, CASES of them.
WINDOW = os.environ.get("MARS_DIFFERENTIAL_WINDOW")
KEY_WATERMARK = os.environ.get("MARS_DIFFERENTIAL_WATERMARK") == "key"
GROUP = 8
# The second reducer: columns, every merged frame spilled to disk after each step, in as many
# partitions as the windows' rows allow (up to 64), so closes read them a partition at a time.
COLUMNAR_REDUCER = {
    "MARS_REDUCER__COLUMNAR_STATE": "true",
    "MARS_REDUCER__STATE_BUDGET_BYTES": "0",
    "MARS_REDUCER__SPILL_PARTITION_MIN_ROWS": "1",
}
MIN_CASES = min(CASES, 16)  # a budget that runs fewer is a broken test, not a pass


def _columnar(case: Case) -> bool:
    """Whether the case's units on the columnar reducer hold their windows in columns."""
    spec = parse_task(case.task_sql("S"), task_id="t")
    return uses_columnar_state(spec, state_aggregates(spec), enabled=True)


def _binary_cases(outcomes: list[Outcome]) -> str:
    """How many cases read Avro / Protobuf, and how many of those read nested paths."""
    counts = []
    for name in ("Avro", "Protobuf"):
        cases = [o.case for o in outcomes if o.case.input_format == name.lower()]
        counts.append(f"{len(cases)} {name} ({sum(bool(c.shape.paths) for c in cases)} nested)")
    return " and ".join(counts)


def _wanted(seed: int) -> bool:
    shape = random_case(seed).shape
    return (not WINDOW or shape.window == WINDOW) and (
        not KEY_WATERMARK or shape.key_lag_ms is not None
    )


@pytest.mark.pipeline(
    mappers=2,
    reducers=1,
    env={
        "MARS_MAPPER__BATCH_SIZE": "64",
        "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "500",
        "MARS_REDUCER__COLUMNAR_STATE": "false",  # the first reducer: the Python state
    },
)
@pytest.mark.timeout(int(BUDGET_S) + 600)
def test_random_tasks_over_random_streams_equal_the_oracle(
    pipeline: WatchedPipeline,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
    spark: Any,
    settings: Settings,
) -> None:
    def backfill(spec: TaskSpec) -> None:
        job = BackfillJob(spec=spec, source=KafkaSource(), job="differential")
        summary = run_backfill(spark, settings=settings, job=job)
        assert summary.records_read == summary.records_in

    pipeline.procs.start("reducer", env=COLUMNAR_REDUCER)
    started = time.monotonic()
    outcomes: list[Outcome] = []
    seeds = [SEED + i for i in range(CASES)]
    if WINDOW or KEY_WATERMARK:  # both compose: session cases with key watermarks
        seeds = list(itertools.islice(filter(_wanted, itertools.count(SEED)), CASES))
    for first in range(0, len(seeds), GROUP):
        if time.monotonic() - started > BUDGET_S:
            break
        cases = [random_case(seed) for seed in seeds[first : first + GROUP]]
        outcomes += run_group(
            pipeline,
            kafka_admin,
            cluster.kafka_bootstrap,
            cases,
            prefix=f"{unique_name}g{first}",
            backfill=backfill,
        )
    failed = [o for o in outcomes if o.problems]
    print(
        f"\ndifferential: seed {SEED}, {len(outcomes)} cases, "
        f"{sum(o.case.records for o in outcomes)} records, "
        f"{sum(o.rows for o in outcomes)} result rows compared, {len(failed)} failed, "
        f"{sum(_columnar(o.case) for o in outcomes)} cases in columns on one reducer, "
        f"{_binary_cases(outcomes)}, "
        f"{time.monotonic() - started:.0f} s"
    )
    for outcome in failed:
        print(f"  seed {outcome.case.seed}: {outcome.problems[0]}")
    if failed:
        first_failure = failed[0]
        attempt = iter(range(1_000))

        def still_fails(candidate: object) -> bool:
            assert isinstance(candidate, Case)
            [outcome] = run_group(
                pipeline,
                kafka_admin,
                cluster.kafka_bootstrap,
                [candidate],
                prefix=f"{unique_name}s{next(attempt)}",
                backfill=backfill,
            )
            return bool(outcome.problems)

        small, tries = shrink(first_failure.case, still_fails)
        pytest.fail(
            f"{len(failed)} of {len(outcomes)} cases differ from the oracle; the first:\n"
            + "\n".join(first_failure.problems[:20])
            + f"\n\nshrunk in {tries} runs to:\n{small.describe()}",
            pytrace=False,
        )
    assert len(outcomes) >= MIN_CASES, f"only {len(outcomes)} cases ran in {BUDGET_S} s"
    if not (WINDOW or KEY_WATERMARK) and len(outcomes) >= MIN_CASES:
        assert any(map(_columnar, (o.case for o in outcomes))), "no case held in columns"
        scrapes = [scrape(address) for address in pipeline.targets().get("reducer", [])]
        assert total(scrapes, "mars_reducer_spilled_windows_total") > 0, "no window spilled"
