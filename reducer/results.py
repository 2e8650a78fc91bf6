"""Result and late records of closed windows, in the form written to Kafka.

Result record value (JSON): `task`, `window_start` / `window_end` (epoch ms),
`window_start_iso` / `window_end_iso` (ISO-8601 UTC), every output column of the task by name,
plus every group column and aggregate alias the SELECT list does not already carry.
Key (JSON): `[task, window_start, [group values...]]`, unique per window and group, so a
compacted topic keeps one record per window and group. JSON is written by msgspec (a window's
rows are encoded on the critical path of its latency): NaN and infinities become `null`, and
values JSON has no type for are written as their `str`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import msgspec

from mars.engine.finalize import finalize_window, iso_utc, select_top_k
from mars.tasks.spec import OutputColumn, TaskSpec
from mars.windows import WindowAssigner
from reducer.open_windows import ClosedWindow, LateContribution
from reducer.output import OutRecord

LATE_REASON = "window already closed by the reducer (its partition was idle)"


_dumps = msgspec.json.Encoder(enc_hook=str).encode


def result_spec(spec: TaskSpec) -> TaskSpec:
    """`spec` whose outputs also carry each group column and aggregate (by name / alias)."""
    names = {output.name for output in spec.outputs}
    extra = [
        OutputColumn(name=name, expression=name)
        for name in [g.name for g in spec.group_keys] + [a.alias for a in spec.aggregates]
        if name not in names
    ]
    return replace(spec, outputs=spec.outputs + tuple(extra)) if extra else spec


def window_rows(spec: TaskSpec, window: ClosedWindow) -> list[dict[str, Any]]:
    """The final rows of one closed window: HAVING, outputs, then top-k (`spec` from
    `result_spec`); each row starts with the task id."""
    rows = select_top_k(spec.top_k, finalize_window(spec, window.start, window.groups))
    return [{"task": spec.id, **row} for row in rows]


def result_record(spec: TaskSpec, row: dict[str, Any]) -> OutRecord:
    key = [spec.id, row["window_start"], [row.get(g.name) for g in spec.group_keys]]
    return OutRecord(topic=spec.output_topic, key=_dumps(key), value=_dumps(row))


def late_record(spec: TaskSpec, late: LateContribution) -> OutRecord:
    """A late contribution for the late topic. The reducer no longer has the records' bytes,
    only the group's partial states, so it writes the group and how many records it held."""
    assigner = WindowAssigner.from_spec(spec.window)
    end = assigner.end(late.window_start)
    value = {
        "task": spec.id,
        "source": "reducer",
        "reason": LATE_REASON,
        "window_start": late.window_start,
        "window_end": end,
        "window_start_iso": iso_utc(late.window_start),
        "window_end_iso": iso_utc(end),
        "group": {g.name: v for g, v in zip(spec.group_keys, late.key, strict=True)},
        "records": late.records,
        "bucket": late.bucket,
        "seq": late.seq,
    }
    key = [spec.id, late.window_start, list(late.key)]
    return OutRecord(topic=spec.late_topic, key=_dumps(key), value=_dumps(value))


def rows_of(spec: TaskSpec, windows: Sequence[ClosedWindow]) -> list[dict[str, Any]]:
    return [row for window in windows for row in window_rows(spec, window)]
