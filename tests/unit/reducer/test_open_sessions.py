"""Session windows end to end in memory: mapper pre-aggregation in random batches, the owner's
merge/close/commit/checkpoint cycle with a crash and a replay, against the DuckDB oracle."""

from __future__ import annotations

import copy
import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest

from mars.aggregates import CountAll, Max, Sum, state_aggregates
from mars.engine.dataset import DataSet, OpenWindows, decode_dataset, encode_dataset
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.tasks.spec import AggFunc
from mars.windows import SessionWindows
from reducer.open_sessions import OpenSessionState
from tests.session_oracle import Session, expected_sessions
from tests.unit.engine.engine_helpers import make_spec

AGGS = (CountAll(), Sum(), Max())
GAP, GRACE = 10, 5


def dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    """Partial sessions as mappers send them: first -> key -> [count, sum, last]."""
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def state(**kwargs: Any) -> OpenSessionState:
    return OpenSessionState.starting(
        sessions=SessionWindows(gap_ms=GAP, grace_ms=GRACE), aggregates=AGGS, **kwargs
    )


def test_a_partial_bridging_two_sessions_merges_them_into_one() -> None:
    s = state(rseqs={0: 1})
    s.merge(0, 1, dataset({0: {("a",): [1, 1, 0]}, 25: {("a",): [2, 2, 27]}}))
    assert sorted(s.windows) == [0, 25]
    s.merge(0, 2, dataset({9: {("a",): [1, 5, 16]}}))  # within GAP of both: bridges them
    assert s.windows == {0: {("a",): [4, 8, 27]}}
    s.merge(0, 3, dataset({8: {("a",): [1, 1, 8]}}))
    assert s.windows == {0: {("a",): [5, 9, 27]}}
    assert s.close(27 + GAP + GRACE) == []  # a record at 27 + GAP could still join it
    [closed] = s.close(27 + GAP + GRACE + 1)
    assert (closed.start, closed.groups) == (0, {("a",): [5, 9, 27]})


def test_a_partial_more_than_grace_behind_the_closed_watermark_is_late_and_checkpoints() -> None:
    s = state(rseqs={0: 1})
    s.merge(0, 1, dataset({0: {("a",): [1, 1, 0]}}))
    s.close(100)
    s.checkpointed()
    # 94 + GRACE < 100: late; 95 + GRACE == 100: on time (equal is never late)
    late = s.merge(0, 2, dataset({94: {("a",): [3, 3, 120]}, 95: {("b",): [1, 1, 95]}}))
    assert [(x.window_start, x.key, x.records) for x in late] == [(94, ("a",), 3)]
    assert s.checkpoint_now and list(s.windows) == [95]
    s.checkpointed()
    assert not s.checkpoint_now and s.rseq(0) == 3


def test_a_growing_session_holds_one_closing_entry_whatever_its_merges() -> None:
    s = state(rseqs={0: 1})
    for seq in range(1, 1_001):  # one session, extended by every data set
        s.merge(0, seq, dataset({seq: {("a",): [1, 1, seq]}}))
        s.close(seq - 1)
    assert len(s._closing) == 1 and list(s.windows) == [1]
    [closed] = s.close(1_000 + GAP + GRACE + 1)
    assert closed.groups == {("a",): [1_000, 1_000, 1_000]} and s._closing == []


@dataclass
class Owner:
    """The part of `UnitOwner.step` that decides what is committed, over in-memory data sets."""

    state: OpenSessionState
    checkpoint_every: int
    rng: random.Random
    emitted: list[tuple[tuple[str, int], Session]] = field(default_factory=list)
    late_records: int = 0
    committed: dict[str, Any] = field(default_factory=dict)

    def step(self, seq: int, data: bytes, watermark: int) -> None:
        late = self.state.merge(0, seq, decode_dataset(data))
        closed = self.state.close(watermark)
        checkpoint = self.state.checkpoint_now or (
            self.state.needs_checkpoint and self.rng.randrange(self.checkpoint_every) == 0
        )
        if closed or late or checkpoint or self.state.rseqs() != self.committed.get("rseqs"):
            if checkpoint:
                self.committed["checkpoint"] = copy.deepcopy(self.state.windows)
                self.state.checkpointed()
            self.committed.update(
                rseqs=self.state.rseqs(),
                merged=dict(self.state.merged),
                closed_watermark=self.state.closed_watermark,
            )
            self.late_records += sum(x.records for x in late)
            for window in closed:
                for (key,), (count, total, last) in window.groups.items():
                    self.emitted.append(((key, window.start), Session(last, count, total)))

    def restarted(self) -> Owner:
        """A new owner from the committed progress (what was not committed is lost)."""
        checkpoint: OpenWindows = copy.deepcopy(self.committed.get("checkpoint", {}))
        return Owner(
            state=state(
                rseqs=self.committed["rseqs"],
                replayed_through=self.committed["merged"],
                closed_watermark=self.committed["closed_watermark"],
                checkpoint=checkpoint,
            ),
            checkpoint_every=self.checkpoint_every,
            rng=self.rng,
            emitted=self.emitted,
            late_records=self.late_records,
            committed=dict(self.committed),
        )


def generated(rng: random.Random, count: int) -> list[tuple[int, str, int, int]]:
    """(partition, key, ts, value) with bursts and pauses per key and some disorder."""
    records = []
    clock = {p: 0 for p in (0, 1)}
    for _ in range(count):
        partition = rng.randrange(2)
        clock[partition] += rng.choice([0, 1, 2, 3, 15])
        jitter = rng.choice([0, 0, 0, -2, -4, -7])  # -7: beyond GRACE, mostly late
        records.append(
            (partition, rng.choice("abc"), max(0, clock[partition] + jitter), rng.randrange(9))
        )
    return records


@pytest.mark.parametrize("seed", range(20))
def test_sessions_are_exact_across_batches_partitions_and_a_crash(seed: int) -> None:
    rng = random.Random(seed)
    records = generated(rng, 300)
    spec = make_spec(
        aggregates=((AggFunc.COUNT, None, "n"), (AggFunc.SUM, "v", "total")),
        size_ms=GAP,
        grace_ms=GRACE,
        session=True,
        buckets=1,
    )
    assert [type(a) for a in state_aggregates(spec)] == [CountAll, Sum, Max]
    preaggregator = Preaggregator.for_spec(spec)
    by_partition = {p: [r for r in records if r[0] == p] for p in (0, 1)}
    offsets = {0: 0, 1: 0}
    stream_times: dict[int, int] = {}
    # (data set, watermark after it): a watermark closes only what is merged by then
    datasets: list[tuple[bytes, int]] = []
    mapper_late = 0
    while any(offsets[p] < len(by_partition[p]) for p in (0, 1)):
        batch: list[SourceRecord] = []
        for p in (0, 1):  # one batch may hold both partitions, like a mapper's poll
            take = rng.randrange(0, 12)
            for _, key, ts, value in by_partition[p][offsets[p] : offsets[p] + take]:
                row = {"k": key, "ts": ts, "v": value}
                value = json.dumps(row).encode()
                batch.append(SourceRecord(partition=p, offset=offsets[p], value=value))
                offsets[p] += 1
        if not batch:
            continue
        partials = preaggregator.run(batch, dict(stream_times), now_ms=0)
        mapper_late += len(partials.late)
        stream_times = dict(partials.stream_times)
        if partials.datasets:
            watermark = min(stream_times.get(p, 0) for p in (0, 1))
            datasets.append((partials.datasets[0], watermark))

    owner = Owner(state=state(rseqs={0: 1}), checkpoint_every=4, rng=rng)
    crash_after = rng.randrange(len(datasets))
    for seq, (data, watermark) in enumerate(datasets, start=1):
        owner.step(seq, data, watermark)
        if seq == crash_after:
            owner = owner.restarted()
            for replay_seq in range(owner.committed["rseqs"][0], seq + 1):
                owner.step(replay_seq, *datasets[replay_seq - 1])
    owner.step(len(datasets) + 1, encode_dataset(AGGS, {}), 10**9)  # every session closes

    expected = expected_sessions(records, gap_ms=GAP, grace_ms=GRACE)
    assert mapper_late == expected.late
    assert owner.late_records == 0  # no idle close here: nothing is late at the reducer
    keys = [key for key, _ in owner.emitted]
    assert len(keys) == len(set(keys)), "a session was emitted twice"
    assert dict(owner.emitted) == expected.sessions


def test_emit_changes_tracks_changed_sessions_and_the_ones_merged_away() -> None:
    s = state(rseqs={0: 1}, track_changes=True)
    s.merge(
        0, 1, dataset({0: {("a",): [1, 1, 0]}, 25: {("a",): [2, 2, 27]}, 3: {("b",): [1, 1, 3]}})
    )
    assert [(w.start, w.groups) for w in s.take_changes()] == [
        (0, {("a",): [1, 1, 0]}),
        (3, {("b",): [1, 1, 3]}),
        (25, {("a",): [2, 2, 27]}),
    ]
    assert s.take_gone() == [] and not s.has_changes
    s.merge(0, 2, dataset({9: {("a",): [1, 5, 16]}}))  # bridges a's two sessions into [0, 27]
    assert [(w.start, w.groups) for w in s.take_changes()] == [(0, {("a",): [4, 8, 27]})]
    assert s.take_gone() == [(25, ("a",))]  # its key gets a tombstone
    s.merge(0, 3, dataset({30: {("b",): [1, 1, 30]}}))
    s.close(3 + GAP + GRACE)  # b's first session closes: its final row, no update
    assert [(w.start, list(w.groups)) for w in s.take_changes()] == [(30, [("b",)])]
