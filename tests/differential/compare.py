"""Mars's output for a case against the oracle's: every row, and the counters.

Rows are matched by `(window_start, *group values)`. Exact aggregates must be equal (floats
within their `Aggregate.relative` error, 1e-9 for a sum or an average, whose rounding depends
on the order of additions, 1e-7 for a variance or standard deviation); approximate ones
within their `Aggregate.approximate` relative error, or 1. A top-k task's rows of a window must
be k (or every group, if fewer) of the oracle's rows, with the oracle's values, whose ranking
values are the oracle's k largest: which of several tied groups is kept is Mars's choice.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.cases import Case, result_name
from tests.differential.oracle import Expected, ResultKey


def problems(
    case: Case, expected: Expected, rows: Sequence[Mapping[str, Any]], stats: Mapping[str, int]
) -> list[str]:
    """What differs (empty: the case passed)."""
    shape = case.shape
    found: list[str] = []
    keys = [_key(row, shape.keys) for row in rows]
    twice = [key for key, n in Counter(keys).items() if n > 1]
    if twice:
        found.append(f"emitted more than once: {twice[:5]}")
    got = dict(zip(keys, rows, strict=True))
    for key, row in got.items():
        found += _row_problems(case, key, row, expected.rows.get(key))
    if shape.top_k is None:
        missing = sorted(set(expected.rows) - set(got), key=repr)
        if missing:
            found.append(f"{len(missing)} rows missing, e.g. {missing[:5]}")
    else:
        found += _top_k_problems(case, expected.rows, got)
    counters = {
        "records_in": expected.records,
        "bad": expected.bad,
        "late": expected.late,
        "filtered": expected.filtered,
    }
    for name, want_count in counters.items():
        if stats.get(name, 0) != want_count:
            found.append(f"counter {name} = {stats.get(name, 0)}, oracle {want_count}")
    return found


def _row_problems(
    case: Case, key: ResultKey, row: Mapping[str, Any], want: Mapping[str, Any] | None
) -> list[str]:
    compared = [a.alias for a in case.shape.aggregates]
    if case.shape.window == "session":
        compared.append("window_end")
    if want is None:
        return [f"unexpected row {key}: {_show(row, compared)}"]
    found = [
        f"row {key}: {name} = {row.get(name)!r}, oracle {want[name]!r}"
        for name in compared
        if not _same(row.get(name), want[name], _tolerance(case, name))
    ]
    if case.shape.window_column and row.get("ts") != key[0]:
        found.append(f"row {key}: ts = {row.get('ts')!r}, the window start is {key[0]}")
    return found


def _top_k_problems(
    case: Case, oracle: Mapping[ResultKey, dict[str, Any]], got: Mapping[ResultKey, Any]
) -> list[str]:
    assert case.shape.top_k is not None
    alias, k = case.shape.top_k
    by_window: dict[int, list[Any]] = defaultdict(list)
    for key, values in oracle.items():
        by_window[key[0]].append(values[alias])
    emitted: dict[int, list[Any]] = defaultdict(list)
    for key, row in got.items():
        emitted[key[0]].append(row.get(alias))
    found = []
    for window in sorted(set(by_window) | set(emitted)):
        want = _descending(by_window[window])[:k]
        have = _descending(emitted[window])
        # Sums of floats differ in their last bits with the order of additions.
        if len(have) != len(want) or not all(
            _same(h, w, _tolerance(case, alias)) for h, w in zip(have, want, strict=False)
        ):
            found.append(f"window {window}: top {k} by {alias} {have}, oracle {want}")
    return found


def _descending(values: Sequence[Any]) -> list[Any]:
    """Largest first, NULLs last (numbers or strings)."""
    present = sorted((v for v in values if v is not None), reverse=True)
    return present + [None] * (len(values) - len(present))


def _key(row: Mapping[str, Any], keys: Sequence[str]) -> ResultKey:
    return (row["window_start"], *(row.get(result_name(k)) for k in keys))


def _tolerance(case: Case, name: str) -> tuple[float, float]:
    """(approximate, relative) of the aggregate `name` (exact, 1e-9 for other columns)."""
    for aggregate in case.shape.aggregates:
        if aggregate.alias == name:
            return aggregate.approximate, aggregate.relative
    return 0.0, 1e-9


def _same(got: Any, want: Any, tolerance: tuple[float, float]) -> bool:
    approximate, relative = tolerance
    if got is None or want is None:
        return got is None and want is None
    if isinstance(want, str) or isinstance(got, str):
        return bool(got == want)
    if approximate:
        return abs(float(got) - float(want)) <= max(1.0, approximate * float(want))
    if isinstance(want, float) or isinstance(got, float):
        return math.isclose(float(got), float(want), rel_tol=relative, abs_tol=1e-9)
    return bool(got == want)


def _show(row: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: row.get(name) for name in names}
