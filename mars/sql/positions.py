"""Where in the SQL text a sqlglot error or expression node is (0-based offsets)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from mars.sql.errors import offset_of

_MISSING_DELIMITER = re.compile(r"from \d+:(\d+)")


def node_position(node: exp.Expr) -> int | None:
    """Offset of the first character of `node` (the smallest start among it and its children).

    sqlglot records positions on identifiers, literals and function names, not on operators,
    so the leftmost token of the expression is the best we have (and what users expect).
    """
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return min(starts) if starts else None


def parse_error_position(sql: str, error: ParseError) -> int | None:
    """Offset of the token sqlglot complained about.

    sqlglot reports the 1-based line and the column where the offending token *ends*; the
    token's text is `highlight`, so the start is `column - len(highlight)`.
    """
    if not error.errors:
        return None
    first = error.errors[0]
    line, column = first.get("line"), first.get("col")
    if not isinstance(line, int) or not isinstance(column, int):
        return None
    highlight = first.get("highlight") or ""
    end = offset_of(sql, line=line, column=column)
    return max(0, end - len(highlight) + 1) if highlight else end


def token_error_position(error: TokenError, sql: str) -> int | None:
    """Offset of a tokenizer failure in `sql`: where the unterminated string or quote begins
    (at most the end of `sql`)."""
    cause = error.__cause__
    match = _MISSING_DELIMITER.search(str(cause)) if cause is not None else None
    if match is not None:
        return min(int(match.group(1)), len(sql))
    if error.start is not None and error.start > 0:
        # sqlglot quotes 50 characters either side of the failure
        return min(error.start + 50, len(sql))
    return None
