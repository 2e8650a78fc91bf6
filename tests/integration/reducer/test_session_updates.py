"""EMIT CHANGES on session windows through an owner's death (real Redis, fake clock, in-memory
output): a session merged into an earlier one leaves a tombstone under its old key on the
updates topic, even when the owner dies after the checkpoint that forgot that session."""

from __future__ import annotations

import json
from typing import Any

from mars.sql import parse_task
from mars.store import SeqStore
from reducer.output import OutRecord
from tests.integration.reducer.harness import FakeClock, MemoryOutput, ScriptedMapper, make_owner

CHECKPOINT_INTERVAL_MS = 1_000
T0 = 1_000_000  # event time of the first record


def compacted(records: list[OutRecord]) -> dict[bytes, dict[str, Any]]:
    """The updates topic as compaction leaves it: the last value per key, tombstones gone."""
    last: dict[bytes, bytes | None] = {}
    for record in records:
        last[record.key] = record.value
    return {key: json.loads(value) for key, value in last.items() if value is not None}


def test_a_merged_away_session_is_tombstoned_though_its_owner_died_after_the_checkpoint(
    store: SeqStore, task_id: str
) -> None:
    spec = parse_task(
        "SELECT k, COUNT(*) AS n FROM S GROUP BY k WINDOWING SESSION 3 s GRACE 2 s "
        "EMIT CHANGES EVERY 10 s WITH (event_time='t', event_time_format='epoch_ms', "
        "buckets=1, idle_timeout='1 s')",
        task_id=task_id,
    )
    assert spec.updates_topic is not None
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=CHECKPOINT_INTERVAL_MS)

    mapper.send(0, [{"k": "a", "t": T0 + 1_000}])
    owner.step()  # the first updates are due at once: the session at T0 + 1 s is published
    clock.advance(2 * CHECKPOINT_INTERVAL_MS)
    # Out of order within GRACE: the session now starts at T0, its old key is obsolete. The
    # next updates are 10 s away, but the checkpoint is due and forgets the old session.
    mapper.send(0, [{"k": "a", "t": T0}])
    owner.step()
    progress = output.progress()
    assert progress is not None and progress.checkpoint is not None

    # The owner dies; a new one starts from that checkpoint, which holds only the T0 session.
    owner = make_owner(spec, store, clock, output, checkpoint_interval_ms=CHECKPOINT_INTERVAL_MS)
    owner.recover()
    clock.advance(3_600_000)  # input stopped: idle close closes the session
    mapper.heartbeat(caught_up=True)
    owner.step()

    updates = [r for batch in output.commits for r in batch if r.topic == spec.updates_topic]
    rows = compacted(updates)
    assert [(row["window_start"], row["n"], row["final"]) for row in rows.values()] == [
        (T0, 2, True)
    ]
