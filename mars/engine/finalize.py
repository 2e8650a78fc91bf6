"""Finalize a closed window: partial states -> result rows (HAVING, output expressions, top-k).

A result row holds `window_start` / `window_end` (epoch ms), `window_start_iso` /
`window_end_iso` (ISO-8601 UTC, millisecond precision, `Z` suffix) and every output column of
the task by name, in SELECT order. For session windows `window_start` / `window_end` are the
times of the session's first and last record (both included), as in ksqlDB. Output and HAVING
expressions are evaluated with Polars over a frame holding the group keys (by
`GroupKey.name`), the aggregate results (by alias) and the two window columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from mars.aggregates import Average, aggregates_for
from mars.engine.columnar_layout import key_columns
from mars.sql.expressions import to_polars
from mars.tasks.replacement import RETIRED_PREFIX, null_before
from mars.tasks.spec import OutputColumn, TaskSpec, TopK
from mars.windows import window_end

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_EXACT_FLOAT_INT = 1 << 53  # ints up to this convert to float exactly (AVG of int sums)


def _divided(total: pl.Series, count: pl.Series) -> pl.Series:
    """`total / count` as floats, correctly rounded as Python's `/` is (NaN where `count` is
    0). Not Polars' `/`: it divided a float column by an int column of a frame concatenated
    from spill partitions as a multiplication by the reciprocal (5 / 3 gave
    1.6666666666666665)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = np.divide(total.cast(pl.Float64).to_numpy(), count.cast(pl.Float64).to_numpy())
    return pl.Series(quotient, dtype=pl.Float64)


def iso_utc(epoch_ms: int) -> str:
    """`2024-05-01T12:00:00.000Z` for an epoch-ms instant (also before 1970)."""
    moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def finalize_window(
    spec: TaskSpec, window_start: int, groups: Mapping[tuple[Any, ...], Sequence[Any]]
) -> list[dict[str, Any]]:
    """The result rows of one window (or of the sessions starting at `window_start`): one per
    group that passes HAVING (top-k not applied)."""
    return finalize_windows(spec, [(window_start, groups)])


def finalize_windows(
    spec: TaskSpec, windows: Sequence[tuple[int, Mapping[tuple[Any, ...], Sequence[Any]]]]
) -> list[dict[str, Any]]:
    """`finalize_window` of each `(window_start, groups)` in order, evaluated as one Polars
    frame: a session task closes thousands of sessions with distinct first times in one step,
    and a frame (and its expressions) per window cost 0.4 ms each."""
    aggregates = aggregates_for(spec.aggregates)
    starts: list[int] = []
    ends: list[int] = []
    keys: list[tuple[Any, ...]] = []
    states: list[Sequence[Any]] = []
    for window_start, groups in windows:
        for key, group_states in groups.items():
            starts.append(window_start)
            ends.append(window_end(spec.window, window_start, group_states))
            keys.append(key)
            states.append(group_states)
    if not keys:
        return []
    columns: dict[str, list[Any]] = {"window_start": starts, "window_end": ends}
    for i, group_key in enumerate(spec.group_keys):
        columns[group_key.name] = [key[i] for key in keys]
    added_from = null_before(spec)
    for i, (call, agg) in enumerate(zip(spec.aggregates, aggregates, strict=True)):
        columns[call.alias] = [agg.result(group_states[i]) for group_states in states]
        if i in added_from:  # added by a replacement: NULL in windows before its first
            columns[call.alias] = [
                value if start >= added_from[i] else None
                for value, start in zip(columns[call.alias], starts, strict=True)
            ]
    frame = pl.DataFrame(
        [pl.Series(name, values, strict=False) for name, values in columns.items()]
    )
    if spec.having:
        frame = frame.filter(to_polars(spec.having).fill_null(False))
    outputs = frame.select(
        [to_polars(output.expression).alias(output.name) for output in spec.outputs]
    )
    kept_starts = frame.get_column("window_start").to_list()
    kept_ends = frame.get_column("window_end").to_list()
    # One ISO string per distinct instant (a tumbling window's rows share theirs): formatting a
    # datetime per row was a third of a closed window's cost on the latency path.
    isos = {t: iso_utc(t) for t in {*kept_starts, *kept_ends}}
    return [
        {
            "window_start": start,
            "window_end": end,
            "window_start_iso": isos[start],
            "window_end_iso": isos[end],
            **row,
        }
        for start, end, row in zip(kept_starts, kept_ends, outputs.to_dicts(), strict=True)
    ]


def finalize_frame(spec: TaskSpec, window_start: int, frame: pl.DataFrame) -> pl.DataFrame | None:
    """`window_rows` of a tumbling or hopping window whose groups are a frame in
    `mars.engine.columnar_layout` (the columnar state's), in columns: the output columns of the
    rows that pass HAVING (then top-k, `top_k_frame`), whose `window_start` / `window_end` are
    the window's. No Python object per group: a window of millions of groups closes in a few
    frames. None: the frame cannot give Python's results exactly (an AVG over ints whose sum
    exceeds 2**53, where Python's int / int rounds once and a float column twice); take its
    Python groups then."""
    assert not (spec.window.session or spec.window.cumulate), "one end per window only"
    aggregates = aggregates_for(spec.aggregates)
    added_from = null_before(spec)
    columns: list[pl.Expr] = [
        pl.lit(window_start, pl.Int64).alias("window_start"),
        pl.lit(window_start + spec.window.size_ms, pl.Int64).alias("window_end"),
    ]
    columns += [
        pl.col(name).alias(group_key.name)
        for name, group_key in zip(key_columns(len(spec.group_keys)), spec.group_keys, strict=True)
    ]
    for i, (call, agg) in enumerate(zip(spec.aggregates, aggregates, strict=True)):
        if i in added_from and window_start < added_from[i]:
            columns.append(pl.lit(None).alias(call.alias))
        elif isinstance(agg, Average):
            total = frame.get_column(f"a{i}s")
            if total.dtype.is_integer() and _largest(total) > _EXACT_FLOAT_INT:
                return None
            mean = _divided(total, frame.get_column(f"a{i}n"))
            columns.append(pl.when(pl.col(f"a{i}n") > 0).then(pl.lit(mean)).alias(call.alias))
        else:
            columns.append(pl.col(f"a{i}").alias(call.alias))
    finalized = frame.select(columns)
    if spec.having:
        finalized = finalized.filter(to_polars(spec.having).fill_null(False))
    outputs = finalized.select(
        [to_polars(output.expression).alias(output.name) for output in spec.outputs]
    )
    return outputs if spec.top_k is None else top_k_frame(spec.top_k, outputs)


def _largest(column: pl.Series) -> int:
    largest = column.abs().max()
    return 0 if largest is None else int(largest)  # type: ignore[arg-type]


def select_top_k(top_k: TopK | None, rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The first `top_k.limit` rows by `top_k.order_by` (NULLs last); all rows without top-k.
    The reducer calls this on the union of all buckets' rows of a window held as Python groups
    (`top_k_frame` on one finalized in columns)."""
    if top_k is None or not rows:
        return [dict(row) for row in rows]
    return top_k_frame(top_k, pl.DataFrame([dict(row) for row in rows], strict=False)).to_dicts()


def top_k_frame(top_k: TopK, frame: pl.DataFrame) -> pl.DataFrame:
    """The first `top_k.limit` rows of one window's `frame` by `top_k.order_by` (NULLs last).

    Ties are broken by the frame's other flat columns, ascending, so the choice is the same in
    every process and on every replay, and the same from a window's rows (`select_top_k`) as
    from its columns (`finalize_frame`'s outputs): the window columns the rows have besides
    are the same in every row of a window.
    """
    order = "__order"
    frame = frame.with_columns(to_polars(top_k.order_by).alias(order))
    tie_breakers = [
        name
        for name, dtype in frame.schema.items()
        if name != order and not isinstance(dtype, pl.List | pl.Struct | pl.Object)
    ]
    ranked = frame.sort(
        [order, *tie_breakers],
        descending=[top_k.descending] + [False] * len(tie_breakers),
        nulls_last=True,
    )
    return ranked.head(top_k.limit).drop(order)


def result_spec(spec: TaskSpec) -> TaskSpec:
    """`spec` whose outputs also carry each group column and aggregate (by name / alias): the
    columns of a result record."""
    names = {output.name for output in spec.outputs}
    extra = [
        OutputColumn(name=name, expression=name)
        for name in [g.name for g in spec.group_keys] + [a.alias for a in spec.aggregates]
        if name not in names and not name.startswith(RETIRED_PREFIX)  # a replacement removed it
    ]
    return replace(spec, outputs=spec.outputs + tuple(extra)) if extra else spec


def window_rows(
    spec: TaskSpec, window_start: int, groups: Mapping[tuple[Any, ...], Sequence[Any]]
) -> list[dict[str, Any]]:
    """The rows of one window as results carry them: HAVING, outputs, then top-k (`spec` from
    `result_spec`); each row starts with the task id."""
    return windows_rows(spec, [(window_start, groups)])


def windows_rows(
    spec: TaskSpec, windows: Sequence[tuple[int, Mapping[tuple[Any, ...], Sequence[Any]]]]
) -> list[dict[str, Any]]:
    """`window_rows` of each `(window_start, groups)`, in order, finalized together."""
    rows = finalize_windows(spec, windows)
    if spec.top_k is not None:  # per window: the cumulative windows of a step share a start
        by_window: dict[tuple[int, int], list[dict[str, Any]]] = {}
        for row in rows:
            by_window.setdefault((row["window_start"], row["window_end"]), []).append(row)
        rows = [row for kept in by_window.values() for row in select_top_k(spec.top_k, kept)]
    return [{"task": spec.id, **row} for row in rows]
