"""The one error type of the task language: a message and where in the SQL it happened."""

from __future__ import annotations


class TaskError(ValueError):
    """A task's SQL or options are invalid.

    `position` is a 0-based character offset into the SQL text the error is about (the task's
    original SQL for `parse_task`, the expression text for `to_polars`), or None when the error
    is not about one place (e.g. an option given through the options mapping). `line` and
    `column` (1-based) are derived from `position` once the SQL text is known.
    """

    def __init__(self, message: str, *, position: int | None = None, sql: str | None = None):
        super().__init__(message)
        self.message = message
        self.position = position
        self.sql = sql
        self.line: int | None = None
        self.column: int | None = None
        if position is not None and sql is not None:
            self.line, self.column = line_and_column(sql, position)

    def locate(self, sql: str) -> TaskError:
        """This error with `line`/`column` computed against `sql` (a new object)."""
        return TaskError(self.message, position=self.position, sql=sql)

    def __str__(self) -> str:
        if self.line is not None and self.column is not None:
            return f"line {self.line}, column {self.column}: {self.message}"
        if self.position is not None:
            return f"position {self.position}: {self.message}"
        return self.message

    def __repr__(self) -> str:
        return f"TaskError({self.message!r}, position={self.position!r})"


def line_and_column(sql: str, position: int) -> tuple[int, int]:
    """1-based line and column of a 0-based offset (clamped to the text)."""
    position = max(0, min(position, len(sql)))
    line = sql.count("\n", 0, position) + 1
    column = position - (sql.rfind("\n", 0, position) + 1) + 1
    return line, column


def offset_of(sql: str, *, line: int, column: int) -> int:
    """0-based offset of a 1-based line/column (inverse of `line_and_column`)."""
    start = 0
    for _ in range(line - 1):
        newline = sql.find("\n", start)
        if newline < 0:
            break
        start = newline + 1
    return min(start + column - 1, len(sql))
