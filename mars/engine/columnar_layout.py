"""The columns of one window's groups in the reducer's columnar state and checkpoints.

One row per group: the key values in `k0, k1, ...`, then each aggregate's state in `a<i>`
(COUNT, SUM, MIN, MAX: the state itself, NULL for None) or, for AVG, its (sum, count) in
`a<i>s` and `a<i>n`. `frame_groups` turns such a frame back into the Python state.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from mars.aggregates import Aggregate, Average
from mars.engine.dataset import Groups


def state_columns(aggregates: Sequence[Aggregate[Any]]) -> list[str]:
    names: list[str] = []
    for i, agg in enumerate(aggregates):
        names += [f"a{i}s", f"a{i}n"] if isinstance(agg, Average) else [f"a{i}"]
    return names


def key_columns(width: int) -> list[str]:
    return [f"k{j}" for j in range(width)]


def key_width(aggregates: Sequence[Aggregate[Any]], frame: pl.DataFrame) -> int:
    return frame.width - len(state_columns(aggregates))


def frame_groups(aggregates: Sequence[Aggregate[Any]], frame: pl.DataFrame) -> Groups:
    """A frame's rows as the Python state: key tuple -> one state per aggregate."""
    width = key_width(aggregates, frame)
    lists: list[list[Any]] = []
    for i, agg in enumerate(aggregates):
        if isinstance(agg, Average):
            sums = frame.get_column(f"a{i}s").to_list()
            counts = frame.get_column(f"a{i}n").to_list()
            lists.append(list(zip(sums, counts, strict=True)))
        else:
            lists.append(frame.get_column(f"a{i}").to_list())
    if width == 0:  # a global aggregate: at most one group, the empty key
        return {(): [values[0] for values in lists]} if frame.height else {}
    keys = zip(*(frame.get_column(name).to_list() for name in key_columns(width)), strict=True)
    return dict(zip(keys, map(list, zip(*lists, strict=True)), strict=True))
