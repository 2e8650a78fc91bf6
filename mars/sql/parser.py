"""`parse_task`: the task language's SQL (plus options) to a validated `TaskSpec`.

    SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp WINDOWING 60 s

Steps: split off the Mars clauses (WINDOWING [SESSION|CUMULATE]/SLIDE/STEP/GRACE/EMIT/WITH),
resolve the
options, let sqlglot parse the SELECT, plan the grouping, and check that every expression
compiles to Polars. Every error is a `TaskError` whose position points into the original text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from mars.sql.aggregation_plan import AggregationPlan, plan_aggregation
from mars.sql.clauses import Duration, split_mars_clauses
from mars.sql.cumulate import check_cumulate_task, cumulate_window
from mars.sql.errors import TaskError
from mars.sql.key_watermark import check_key_watermark_task
from mars.sql.options import resolve_options
from mars.sql.positions import node_position
from mars.sql.statement import SelectStatement, read_statement
from mars.tasks.field_paths import display_path, field_path
from mars.tasks.spec import EventTime, TaskOptions, TaskSpec, WindowSpec

_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def parse_task(sql: str, *, task_id: str, options: Mapping[str, Any] | None = None) -> TaskSpec:
    """Parse and validate one task. `options` override those of the SQL's WITH (...) clause.

    Raises `TaskError` (a ValueError) with the message and, where it is about one place in
    `sql`, its 0-based `position` and 1-based `line`/`column`.
    """
    try:
        return _parse(sql, task_id=task_id, options=options)
    except TaskError as err:
        if err.sql is None and err.position is not None:
            raise err.locate(sql) from None
        raise


def _parse(sql: str, *, task_id: str, options: Mapping[str, Any] | None) -> TaskSpec:
    if not _TASK_ID.match(task_id):
        raise TaskError(
            f"task id {task_id!r} must be 1-200 letters, digits, '.', '_' or '-' "
            "(it names Kafka topics and ZooKeeper nodes)"
        )
    clauses = split_mars_clauses(sql)
    statement = read_statement(clauses.sql)
    window = _window(clauses.durations, sql)
    resolved = resolve_options(clauses.options, options)
    if window.session:
        _check_session_task(statement)
    if window.cumulate:
        check_cumulate_task(resolved.task_options, clauses.options)
    plan = plan_aggregation(statement, event_time_field=resolved.event_time.field)
    _check_csv_columns(plan, resolved.event_time, resolved.task_options)
    check_key_watermark_task(resolved.task_options, window, plan.top_k, clauses.options)
    return TaskSpec(
        id=task_id,
        sql=sql,
        source_topic=statement.source_topic,
        event_time=resolved.event_time,
        window=window,
        group_keys=plan.group_keys,
        aggregates=plan.aggregates,
        outputs=plan.outputs,
        where=plan.where,
        having=plan.having,
        top_k=plan.top_k,
        options=resolved.task_options,
    )


def _window(durations: Mapping[str, Duration], sql: str) -> WindowSpec:
    size = durations.get("WINDOWING")
    if size is None:
        raise TaskError(
            "missing WINDOWING <n> <unit> (the window size, e.g. WINDOWING 60 s)",
            position=len(sql.rstrip().rstrip(";").rstrip()),
        )
    if size.ms <= 0:
        what = "the session gap" if size.session else "the window size"
        raise TaskError(f"{what} must be positive", position=size.position)
    step = durations.get("STEP")
    if size.cumulate or step is not None:
        return cumulate_window(size, step, durations.get("SLIDE"), durations.get("GRACE"))
    slide = durations.get("SLIDE")
    if size.session and slide is not None:
        raise TaskError(
            "SLIDE does not apply to session windows (a session ends after its inactivity gap)",
            position=slide.position,
        )
    slide_ms = size.ms if slide is None else slide.ms
    if slide is not None and slide.ms <= 0:
        raise TaskError("SLIDE must be positive", position=slide.position)
    if slide is not None and slide.ms > size.ms:
        raise TaskError(
            "SLIDE must not be larger than the window size (records would fall between windows)",
            position=slide.position,
        )
    grace = durations.get("GRACE")
    if grace is not None and grace.ms < 0:
        raise TaskError("GRACE must not be negative", position=grace.position)
    return WindowSpec(
        size_ms=size.ms,
        slide_ms=slide_ms,
        grace_ms=grace.ms if grace else 0,
        session=size.session,
    )


def _check_session_task(statement: SelectStatement) -> None:
    """What session windows do not support, said where the query asks for it."""
    if statement.order_by:
        raise TaskError(
            "ORDER BY ... LIMIT does not apply to session windows: each group's sessions start "
            "and end at their own times, so there is no window to rank groups in",
            position=node_position(statement.order_by[0]),
        )


def _check_csv_columns(plan: AggregationPlan, event_time: EventTime, options: TaskOptions) -> None:
    """With CSV input, every field the task reads must be one of the declared columns."""
    if options.csv is None:
        return
    columns = set(options.csv.columns)
    listed = ", ".join(options.csv.columns)
    if event_time.field is not None:
        path = field_path(event_time.field)
        if len(path) > 1:
            raise TaskError(
                f"the event-time field '{display_path(path)}' is a nested field: "
                "nested fields need JSON input"
            )
        if path[0] not in columns:
            raise TaskError(
                f"the event-time field '{path[0]}' is not one of csv_columns ({listed})"
            )
    for column in plan.input_columns:
        path = field_path(column.name)
        if len(path) > 1:
            raise TaskError(
                f"'{display_path(path)}' is a nested field: nested fields need JSON input",
                position=node_position(column),
            )
        if path[0] not in columns:
            raise TaskError(
                f"column '{path[0]}' is not one of csv_columns ({listed})",
                position=node_position(column),
            )
