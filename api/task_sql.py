"""A request's task SQL and options as a `TaskSpec`, every problem with them a 422 that points
into the SQL: one path for registering, replacing and explaining a task."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from api.errors import ApiError
from mars.sql import TaskError, parse_task
from mars.tasks.spec import TaskSpec

log = logging.getLogger(__name__)

PROVISIONAL_ID = "task"  # parses a query whose id is not known yet


def parse_task_sql(sql: str, *, task_id: str | None, options: Mapping[str, Any] | None) -> TaskSpec:
    """The spec of `sql` with `options` (overriding its WITH); `task_id` None: a provisional id
    the caller replaces."""
    try:
        return parse_task(
            sql, task_id=PROVISIONAL_ID if task_id is None else task_id, options=options
        )
    except TaskError as exc:
        raise ApiError.from_task_error(exc) from exc
    except RecursionError as exc:  # sqlglot's recursive descent on e.g. 5,000 nested '('
        raise ApiError(422, "the SQL is nested too deeply") from exc
    except (ValueError, TypeError) as exc:  # a parser gap must still not become a 500
        log.warning("parse_task raised %r for %r", exc, sql)
        raise ApiError(422, f"invalid task: {exc}") from exc
