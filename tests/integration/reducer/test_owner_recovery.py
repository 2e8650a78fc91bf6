"""A new owner resumes from the committed progress: nothing twice, nothing lost, Redis GC'd."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest
import redis

from mars.store import SeqStore, TaskKeys
from mars.tasks.spec import TaskSpec
from reducer.output import OutputError, ToWrite
from tests.integration.reducer.harness import FakeClock, MemoryOutput, ScriptedMapper, make_owner
from tests.integration.reducer.test_window_semantics import count_spec


class FailingOutput(MemoryOutput):
    """Fails the n-th commit (1-based) before anything becomes visible."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.attempts = 0

    def commit(self, records: Iterable[ToWrite]) -> None:
        self.attempts += 1
        if self.attempts == self.fail_at:
            raise OutputError("injected: crash before the commit")
        super().commit(records)


def produce(mapper: ScriptedMapper, rng: random.Random, n: int) -> Counter[tuple[int, str]]:
    """n records with slightly disordered times; returns the expected count per (window, key)."""
    expected: Counter[tuple[int, str]] = Counter()
    base = mapper.stream_times.get(0) or 0
    batch: list[dict[str, Any]] = []
    for i in range(n):
        t = base + i // 3 + rng.randint(0, 1)
        key = rng.choice("abc")
        batch.append({"k": key, "t": t})
        if len(batch) == 7:
            before = mapper.late
            mapper.send(0, batch)
            assert mapper.late == before  # grace covers the disorder
            for row in batch:
                expected[(row["t"] // 2 * 2, row["k"])] += 1
            batch = []
    return expected


def emitted(output: MemoryOutput, spec: TaskSpec) -> Counter[tuple[int, str]]:
    result: Counter[tuple[int, str]] = Counter()
    seen: set[tuple[int, str]] = set()
    for row in output.records(spec.output_topic):
        window_key = (row["window_start"], row["k"])
        assert window_key not in seen, f"{window_key} emitted twice"
        seen.add(window_key)
        result[window_key] = row["c"]
    return result


@pytest.mark.parametrize("fail_at", [1, 2, 3])
def test_crash_before_commit_then_new_owner_replays_exactly_once(
    store: SeqStore, task_id: str, redis_client: redis.Redis, fail_at: int
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), FailingOutput(fail_at)
    mapper = ScriptedMapper(spec, store, clock)
    rng = random.Random(fail_at)
    mapper.heartbeat(caught_up=False)
    expected = Counter[tuple[int, str]]()
    owner = make_owner(spec, store, clock, output)
    for _round in range(4):
        expected += produce(mapper, rng, 70)
        try:
            owner.step()
        except OutputError:
            owner = make_owner(spec, store, clock, output)  # the crashed owner is gone
    clock.advance(5_000)
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert output.starts >= 2
    assert emitted(output, spec) == expected
    keys = TaskKeys(task_id)
    assert redis_client.exists(keys.datasets(0)) == 0


def test_crash_after_commit_before_release(
    store: SeqStore, task_id: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    rng = random.Random(7)
    expected = produce(mapper, rng, 140)
    owner = make_owner(spec, store, clock, output)
    with monkeypatch.context() as patch:
        patch.setattr(store, "release", _raise)
        with pytest.raises(RuntimeError, match="injected"):
            owner.step()
    assert store.snapshot(task_id, 0).rseq == 1  # Redis never heard of the commit
    expected += produce(mapper, rng, 70)
    owner = make_owner(spec, store, clock, output)
    owner.step()
    clock.advance(5_000)
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert emitted(output, spec) == expected
    snapshot = store.snapshot(task_id, 0)
    assert snapshot.rseq == snapshot.seq + 1
    assert redis_client.exists(TaskKeys(task_id).datasets(0)) == 0


def test_bounded_reads_do_not_close_early(store: SeqStore, task_id: str) -> None:
    spec = count_spec(task_id)
    clock, output = FakeClock(), MemoryOutput()
    mapper = ScriptedMapper(spec, store, clock)
    mapper.heartbeat(caught_up=False)
    expected = produce(mapper, random.Random(3), 210)
    owner = make_owner(spec, store, clock, output, max_datasets_per_read=4)
    outcome = owner.step()
    assert outcome.merged == 4 and outcome.watermark is None  # not caught up: no close
    while owner.step().merged:
        pass
    clock.advance(5_000)
    mapper.heartbeat(caught_up=True)
    owner.step()
    assert emitted(output, spec) == expected


def _raise(*_args: object, **_kwargs: object) -> int:
    raise RuntimeError("injected: crash before release")
