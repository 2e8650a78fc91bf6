"""Mars's output for a case against the oracle's: every row, and the counters.

Rows are matched by `(window_start, *group values)` (cumulative windows, which share their
start: `(window_start, window_end, *group values)`). Exact aggregates must be equal (floats
within their `Aggregate.relative` error, 1e-9 for a sum or an average, whose rounding depends
on the order of additions, 1e-7 for a variance or standard deviation); approximate ones
within their `Aggregate.approximate` relative error, or 1. A top-k task's rows of a window must
be k (or every group, if fewer) of the oracle's rows, with the oracle's values, whose ranking
values are the oracle's k largest: which of several tied groups is kept is Mars's choice.
TOPK must equal the exact top k of the group's histogram; a percentile must equal DuckDB's
quantile_disc for a group of at most 200 values, and have a rank within 1.33 % beyond.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from tests.differential.cases import Aggregate, Case, result_name
from tests.differential.oracle import Expected, ResultKey

# DataSketches' KLL at k = 200 (docs/semantics.md): a group of at most 200 values is kept
# whole; beyond, a value's rank is within the single-sided normalized rank error (99 %).
KLL_EXACT = 200
KLL_RANK_ERROR = 0.0133


def problems(
    case: Case, expected: Expected, rows: Sequence[Mapping[str, Any]], stats: Mapping[str, int]
) -> list[str]:
    """What differs (empty: the case passed)."""
    shape = case.shape
    found: list[str] = []
    keys = [
        _key(row, shape.window_of((row["window_start"], row.get("window_end"))), shape.keys)
        for row in rows
    ]
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
    sketches = {a.alias: a for a in case.shape.aggregates if a.fractions or a.top}
    found = [
        f"row {key}: {name} = {row.get(name)!r}, oracle {want[name]!r}"
        for name in compared
        if not (
            _sketch_agrees(sketches[name], row.get(name), want)
            if name in sketches
            else _same(row.get(name), want[name], _tolerance(case, name))
        )
    ]
    if case.shape.window_column and row.get("ts") != key[0]:
        found.append(f"row {key}: ts = {row.get('ts')!r}, the window start is {key[0]}")
    return found


def _top_k_problems(
    case: Case, oracle: Mapping[ResultKey, dict[str, Any]], got: Mapping[ResultKey, Any]
) -> list[str]:
    assert case.shape.top_k is not None
    alias, k = case.shape.top_k
    window_of = case.shape.window_of
    by_window: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for key, values in oracle.items():
        by_window[window_of(key)].append(values[alias])
    emitted: dict[tuple[Any, ...], list[Any]] = defaultdict(list)
    for key, row in got.items():
        emitted[window_of(key)].append(row.get(alias))
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


def _key(row: Mapping[str, Any], window: tuple[Any, ...], keys: Sequence[str]) -> ResultKey:
    return (*window, *(row.get(result_name(k)) for k in keys))


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


def _sketch_agrees(aggregate: Aggregate, got: Any, want: Mapping[str, Any]) -> bool:
    """TOPK: the exact top k of the oracle's histogram, most frequent first, ties by value.
    A percentile: the exact value of a group of at most `KLL_EXACT` values, else one whose
    rank in the group's sorted values is within `KLL_RANK_ERROR` of the fraction."""
    exact = want[aggregate.alias]
    if got is None or exact is None:
        return got is None and exact is None
    if aggregate.top:
        ranked = sorted(exact.items(), key=lambda item: (-item[1], item[0]))
        return bool(got == [value for value, _ in ranked[: aggregate.top]])
    listed = isinstance(exact, list)
    gots, exacts = (got, exact) if listed else ([got], [exact])
    if not isinstance(gots, list) or len(gots) != len(aggregate.fractions):
        return False
    values: list[Any] = want[f"{aggregate.alias}__values"]
    if len(values) <= KLL_EXACT:
        return all(float(g) == float(e) for g, e in zip(gots, exacts, strict=True))
    n = len(values)
    for value, fraction in zip(gots, aggregate.fractions, strict=True):
        below = bisect.bisect_left(values, value) / n
        at_or_below = bisect.bisect_right(values, value) / n
        if not (below <= fraction + KLL_RANK_ERROR and at_or_below >= fraction - KLL_RANK_ERROR):
            return False
    return True


def _show(row: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    return {name: row.get(name) for name in names}
