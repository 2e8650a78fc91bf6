"""`WITH (watermark = 'key' [, key_lag = '10 minutes'] [, key_groups = N])`: per-key (or per
key group) clocks (docs/semantics.md, "Key watermarks"); tumbling, hopping and session windows,
EMIT CHANGES, pull queries, the mappers and both Spark paths. Checked here, each error at the
`watermark` option: what the mode refuses, by decision rather than given a meaning nobody can
check (the docs say why).

- Cumulative windows: their reducer emits each step's window for all keys at once and a
  record's slice follows the stream time; per-key closing would be a state of its own.
- Top-k (`ORDER BY ... LIMIT k`): a window's ranking needs every key of the window closed, so
  key clocks would buy nothing there; refused so nobody expects early results.
"""

from __future__ import annotations

from collections.abc import Mapping

from mars.sql.clauses import OptionValue
from mars.sql.errors import TaskError
from mars.tasks.spec import TaskOptions, TopK, WatermarkMode, WindowSpec


def check_key_watermark_task(
    options: TaskOptions,
    window: WindowSpec,
    top_k: TopK | None,
    clause: Mapping[str, OptionValue],
) -> None:
    """Raise a positioned `TaskError` when a key-watermark task asks for what it lacks."""
    if options.watermark is not WatermarkMode.KEY:
        return
    given = clause.get("watermark")
    position = None if given is None or given.position < 0 else given.position
    refused: str | None = None
    if window.cumulate:
        refused = "cumulative windows (WINDOWING CUMULATE)"
    elif top_k is not None:
        refused = "ORDER BY ... LIMIT (top-k ranks a window's keys together)"
    if refused is not None:
        raise TaskError(
            f"option watermark: 'key' does not apply to {refused}; use watermark = 'partition'",
            position=position,
        )
