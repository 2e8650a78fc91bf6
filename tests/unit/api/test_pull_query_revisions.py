"""A pull query reads a checkpoint written before a replacement added an aggregate: its states
are padded to the task's, and the new aggregate is NULL in that window."""

from __future__ import annotations

from typing import cast

from api.pull_queries import DecodedCheckpoints
from mars.aggregates import aggregates_for, state_aggregates
from mars.engine.dataset import encode_dataset
from mars.engine.finalize import result_spec, window_rows
from mars.sql import parse_task
from mars.store import SeqStore
from mars.tasks.replacement import replaced

OLD = "SELECT sip, count(*) AS n FROM flows GROUP BY sip WINDOWING 10 s"
NEW = "SELECT sip, count(*) AS n, sum(bytes) AS total FROM flows GROUP BY sip WINDOWING 10 s"


class _Checkpoints:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads = 0

    def read_checkpoints(self, task: str, bucket: int, fields: list[str]) -> list[bytes]:
        self.reads += 1
        return [self.data]


def test_a_checkpoint_from_before_the_change_reads_under_the_new_query() -> None:
    old = parse_task(OLD, task_id="t")
    spec = replaced(old, parse_task(NEW, task_id="t"), from_window_ms=20_000)
    store = _Checkpoints(encode_dataset(aggregates_for(old.aggregates), {10_000: {("a",): [4]}}))
    cache = DecodedCheckpoints()
    for _ in range(2):  # decoded once, fitted on every read
        windows = cache.read(cast(SeqStore, store), "t", 0, "1:x", state_aggregates(spec))
        assert windows is not None
        rows = window_rows(result_spec(spec), 10_000, windows[10_000])
        assert [(row["n"], row["total"]) for row in rows] == [(4, None)]
    assert store.reads == 1
