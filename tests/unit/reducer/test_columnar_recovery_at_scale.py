"""One unit's columnar state at the scale of a real window, as its owner drives it: thousands of
addresses each sent twice (two random orders), small data sets merged a few per step, the state
spilled past a budget or kept in memory, a checkpoint at most steps (a delta when the budget
allows, as `UnitOwner._write_checkpoint` decides) and now and then a new owner recovering from
the committed chain and the data sets from its rseq. After every checkpoint the chain holds the
groups of every data set merged so far; at the end the closed window counts every record.

The property tests use a few keys, where a delta of the groups changed soon passes the budget
and the next checkpoint is full; here deltas follow each other as they do in a real window (the
case of the CI failure of 2026-11-27: a delta after a delta lost contributions)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mars.aggregates import CountAll, Sum
from mars.engine.checkpoint_chain import chain_columnar, encode_delta
from mars.engine.dataset import Groups, encode_dataset
from mars.windows import WindowAssigner
from reducer.columnar_windows import ColumnarWindowState
from reducer.delta_budget import DeltaBudget
from reducer.spilled_frames import SpillFolder

AGGREGATES = (CountAll(), Sum())
WINDOW = WindowAssigner(size_ms=600_000, slide_ms=600_000, grace_ms=0)
ADDRESSES = 5_000
MAX_DELTAS = 16  # reducer.checkpoint_deltas's default


def address(i: int) -> tuple[str]:
    return (f"10.{i >> 16}.{(i >> 8) & 0xFF}.{i & 0xFF}",)


def data_sets(rng: random.Random) -> list[Groups]:
    """Every address twice, in two random orders, cut into data sets of 50-300 records."""
    order = [*rng.sample(range(ADDRESSES), ADDRESSES), *rng.sample(range(ADDRESSES), ADDRESSES)]
    found: list[Groups] = []
    at = 0
    while at < len(order):
        groups: Groups = {}
        size = rng.randint(50, 300)
        for i in order[at : at + size]:
            state = groups.setdefault(address(i), [0, 0])
            state[0] += 1
            state[1] += i % 1000
        found.append(groups)
        at += size
    return found


def merged_through(datasets: list[Groups], seq: int) -> Groups:
    """The groups of data sets 1..seq merged (the reference)."""
    total: Groups = {}
    for groups in datasets[:seq]:
        for key, (count, summed) in groups.items():
            state = total.setdefault(key, [0, 0])
            state[0] += count
            state[1] += summed
    return total


@pytest.mark.parametrize("budget_bytes", [None, 256 * 1024], ids=["in-memory", "spilled"])
@pytest.mark.parametrize("seed", range(6))
def test_chains_and_the_closed_window_hold_every_data_set_through_new_owners(
    seed: int, budget_bytes: int | None, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    groups = data_sets(rng)
    encoded = [encode_dataset(AGGREGATES, {0: g}) for g in groups]

    def new_owner(**progress: object) -> ColumnarWindowState:
        return ColumnarWindowState.starting_columnar(
            assigner=WINDOW,
            aggregates=AGGREGATES,
            incremental=True,
            budget_bytes=budget_bytes,
            spill_folder=SpillFolder.open(tmp_path),
            **progress,  # type: ignore[arg-type]
        )

    state, budget = new_owner(rseqs={0: 1}), DeltaBudget(max_deltas=MAX_DELTAS)
    chain: list[bytes] = []
    progress: dict[str, object] = {}
    deltas = 0
    while state.merged[0] < len(encoded):
        last = min(len(encoded), state.merged[0] + rng.randint(1, 4))
        for seq in range(state.merged[0] + 1, last + 1):
            assert state.merge_encoded(0, seq, encoded[seq - 1]) is not None
        state.keep_within_budget()
        if rng.random() < 0.7:
            delta = state.delta_data()
            if chain and delta is not None and budget.allows(delta[1]):
                chain.append(encode_delta(delta[0]))
                budget.wrote_delta(delta[1])
                deltas += 1
            else:
                chain = [state.checkpoint_data()]
                budget.wrote_full(state.columnar_groups())
            state.checkpointed()
            progress = {"rseqs": state.rseqs(), "replayed_through": dict(state.merged)}
            recovered = chain_columnar(chain, AGGREGATES)
            assert recovered is not None
            rows = {tuple(row[:1]): list(row[1:]) for row in recovered.frames[0].rows()}
            assert rows == merged_through(groups, state.merged[0])
        if progress and rng.random() < 0.1:  # a new owner: the committed chain, then a replay
            state.release()
            state = new_owner(checkpoint=chain_columnar(chain, AGGREGATES), **progress)
            budget = DeltaBudget(max_deltas=MAX_DELTAS)
    [closed] = state.close(WINDOW.size_ms)
    assert closed.all_groups(AGGREGATES) == merged_through(groups, len(groups))
    assert deltas > len(encoded) // 20  # deltas in a row, as in a real window
