"""Evaluate expressions over a batch so that one failing record cannot fail the others."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from mars.engine.decode import ROW

_EVALUATION_ERRORS = (pl.exceptions.PolarsError, ArithmeticError, TypeError, ValueError)


def with_columns_isolating_failures(
    frame: pl.DataFrame, exprs: Sequence[pl.Expr], *, what: str
) -> tuple[pl.DataFrame, dict[int, str]]:
    """`frame.with_columns(exprs)`, dropping (and reporting by `ROW`) the rows it fails on.

    The whole batch is tried first; only on failure is it bisected, so the cost stays one
    vectorised call in the normal case and O(failures * log n) calls otherwise.
    """
    if not exprs:
        return frame, {}
    try:
        return frame.with_columns(exprs), {}
    except _EVALUATION_ERRORS as exc:
        if frame.height <= 1:
            rows = frame.get_column(ROW).to_list()
            return frame.clear(), {row: f"cannot evaluate {what}: {exc}"[:300] for row in rows}
    middle = frame.height // 2
    left, left_bad = with_columns_isolating_failures(frame[:middle], exprs, what=what)
    right, right_bad = with_columns_isolating_failures(frame[middle:], exprs, what=what)
    parts = [part for part in (left, right) if part.height > 0]
    joined = pl.concat(parts, how="vertical_relaxed") if parts else frame.clear()
    return joined, left_bad | right_bad
