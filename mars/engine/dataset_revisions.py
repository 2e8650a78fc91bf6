"""Data sets written before a task's query gained aggregates, read after it did.

A compatible replacement appends aggregates to the task's state list (mars.tasks.replacement),
so a data set or checkpoint written under an earlier revision carries a prefix of the current
aggregates. `fitted` pads each group's states with the missing aggregates' `initial()`, the
identity of their merge: the merged state is what it would be had the writer known them and
seen no value, and the window's result for them is NULL anyway (written before the change,
the window starts before its first window). Anything else is left as it is, for the reader's
own check to refuse.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mars.aggregates import Aggregate, wire_name
from mars.engine.dataset import DataSet


def fitted(dataset: DataSet, aggregates: Sequence[Aggregate[Any]]) -> DataSet:
    """`dataset` with the states of `aggregates`, when its own are a strict prefix of them."""
    have = dataset.aggregate_names
    names = tuple(wire_name(agg) for agg in aggregates)
    if len(have) >= len(names) or names[: len(have)] != have:
        return dataset
    padding = [agg.initial() for agg in aggregates[len(have) :]]
    return DataSet(
        aggregates=tuple(aggregates),
        windows={
            start: {key: [*states, *padding] for key, states in groups.items()}
            for start, groups in dataset.windows.items()
        },
    )
