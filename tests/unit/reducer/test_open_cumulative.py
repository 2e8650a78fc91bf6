"""Pure tests of the open cumulative windows (`OpenCumulativeState`): the close rule, late
contributions, and exactly-once output across crashes and replays against a brute force."""

from __future__ import annotations

import random

import pytest

from mars.aggregates import CountAll, Sum
from mars.engine.dataset import DataSet, OpenWindows
from mars.windows import CumulativeWindows
from reducer.open_cumulative import OpenCumulativeState

AGGS = (CountAll(), Sum())
WINDOWS = CumulativeWindows(size_ms=40, step_ms=10, grace_ms=5)
Emitted = dict[tuple[int, int, tuple[str, ...]], list[int]]  # (start, end, key) -> states


def dataset(windows: dict[int, dict[tuple[str, ...], list[int]]]) -> DataSet:
    return DataSet(aggregates=AGGS, windows={s: dict(g) for s, g in windows.items()})


def state(**kwargs: object) -> OpenCumulativeState:
    return OpenCumulativeState.starting(
        cumulate=WINDOWS,
        aggregates=AGGS,
        rseqs={0: 1},
        **kwargs,  # type: ignore[arg-type]
    )


def emitted(state: OpenCumulativeState, watermark: int | None) -> Emitted:
    out: Emitted = {}
    for window in state.close(watermark):
        for key, states in window.groups.items():
            *aggregates, end = states
            assert (window.start, end, key) not in out
            out[(window.start, end, key)] = aggregates
    return out


def test_each_step_emits_the_window_so_far_for_every_group_of_its_max_window() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 2]}, 10: {("b",): [1, 5]}}))
    assert emitted(s, 14) == {}
    assert emitted(s, 15) == {(0, 10, ("a",)): [1, 2]}
    # ("a",) had nothing in [10, 20): it is emitted again with its day so far (Flink's rule).
    assert emitted(s, 25) == {(0, 20, ("a",)): [1, 2], (0, 20, ("b",)): [1, 5]}
    s.merge(0, 2, dataset({20: {("a",): [2, 1]}, 40: {("c",): [1, 1]}}))
    assert emitted(s, 45) == {
        (0, 30, ("a",)): [3, 3],
        (0, 30, ("b",)): [1, 5],
        (0, 40, ("a",)): [3, 3],
        (0, 40, ("b",)): [1, 5],
    }
    assert s.windows == {40: {("c",): [1, 1]}}  # the max window [0, 40) is gone
    assert s.rseq(0) == 2


def test_nothing_is_emitted_before_a_max_window_has_data() -> None:
    s = state()
    s.merge(0, 1, dataset({30: {("a",): [1, 1]}}))
    assert emitted(s, 1_000) == {(0, 40, ("a",)): [1, 1]}
    assert s.windows == {} and s.rseq(0) == 2


def test_a_contribution_to_an_emitted_window_is_late_and_counts_in_the_later_ones() -> None:
    s = state()
    s.merge(0, 1, dataset({0: {("a",): [1, 1]}}))
    emitted(s, 25)
    late = s.merge(0, 2, dataset({10: {("a",): [4, 4]}, 50: {("b",): [1, 1]}}))
    assert [(x.window_start, x.states[-1], x.records) for x in late] == [(0, 20, 4)]
    assert emitted(s, 35) == {(0, 30, ("a",)): [5, 5]}
    emitted(s, 1_000)
    late = s.merge(0, 3, dataset({30: {("a",): [2, 2]}}))
    assert [(x.window_start, x.records) for x in late] == [(0, 2)]
    assert s.windows == {}


def test_replayed_contributions_are_not_late_again() -> None:
    s = state(replayed_through={0: 1}, closed_watermark=25)
    assert s.merge(0, 1, dataset({10: {("a",): [1, 1]}})) == []
    assert emitted(s, 35) == {(0, 30, ("a",)): [1, 1]}


class Run:
    """A unit's life: steps of (data set, watermark), each committed; a checkpoint at some
    commits; crashes right after a commit restart from the committed progress."""

    def __init__(self) -> None:
        self.state = state()
        self.datasets: dict[int, DataSet] = {}
        self.out: Emitted = {}
        self.committed: tuple[int | None, int, int] = (None, 1, 0)  # watermark, rseq, merged
        self.checkpoint: OpenWindows = {}

    def step(self, seq: int, data: DataSet, watermark: int, *, checkpoint: bool) -> None:
        self.datasets[seq] = data
        self.state.merge(0, seq, data)
        out = emitted(self.state, watermark)
        assert not set(out) & set(self.out), "a window emitted twice"
        self.out.update(out)
        if checkpoint:
            self.checkpoint = {k: dict(g) for k, g in self.state.windows.items()}
            self.state.checkpointed()
        self.committed = (self.state.closed_watermark, self.state.rseq(0), seq)

    def crash(self) -> None:
        watermark, rseq, merged = self.committed
        self.state = OpenCumulativeState.starting(
            cumulate=WINDOWS,
            aggregates=AGGS,
            rseqs={0: rseq},
            replayed_through={0: merged},
            closed_watermark=watermark,
            checkpoint=self.checkpoint,
        )
        for seq in range(rseq, merged + 1):
            assert self.state.merge(0, seq, self.datasets[seq]) == []
        assert emitted(self.state, None) == {}


@pytest.mark.parametrize("seed", range(30))
def test_every_window_once_and_exact_across_crashes(seed: int) -> None:
    rng = random.Random(seed)
    run = Run()
    contributions: list[tuple[int, tuple[str, ...], int]] = []  # (slice, key, value)
    watermark = rng.randint(-50, 0)
    for seq in range(1, 40):
        windows: dict[int, dict[tuple[str, ...], list[int]]] = {}
        for _ in range(rng.randint(0, 4)):
            # On time: a slice whose window is still open at the watermark (mars.windows).
            slice_start = WINDOWS.slice_start(watermark - WINDOWS.grace_ms) + 10 * rng.randint(0, 6)
            key = (rng.choice("abc"),)
            value = rng.randint(1, 9)
            contributions.append((slice_start, key, value))
            group = windows.setdefault(slice_start, {}).setdefault(key, [0, 0])
            group[0] += 1
            group[1] += value
        watermark += rng.choice([0, 3, 10, 10, 25])
        run.step(seq, dataset(windows), watermark, checkpoint=rng.random() < 0.3)
        if rng.random() < 0.2:
            run.crash()
    final = watermark + 1_000
    run.step(40, dataset({}), final, checkpoint=False)
    expected: Emitted = {}
    for slice_start, key, value in contributions:
        start = WINDOWS.max_start(slice_start)
        for end in range(slice_start + 10, start + 41, 10):
            group = expected.setdefault((start, end, key), [0, 0])
            group[0] += 1
            group[1] += value
    # Flink's rule: every cumulative window holding data, for each of its groups.
    assert run.out == expected
    assert run.state.windows == {}
