"""`/explain`: the plan of a query that is not registered (`mars.engine.explain`); a
registered task's is `GET /tasks/{id}/explain`. Read-only, so no token is needed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from api.schemas import MAX_SQL_CHARS, ErrorResponse, TaskExplain
from api.task_sql import parse_task_sql
from mars.engine.explain import explain
from mars.tasks.spec import TaskSpec

router = APIRouter(prefix="/explain", tags=["tasks"], responses={422: {"model": ErrorResponse}})


def plan_of(spec: TaskSpec) -> dict[str, Any]:
    return explain(spec).to_json_dict()


@router.post("", response_model=dict[str, Any])
def explain_query(body: TaskExplain) -> dict[str, Any]:
    """The plan of `sql` with `options`, as `POST /tasks` would register it; a query that does
    not parse is a 422 with its position."""
    return plan_of(parse_task_sql(body.sql, task_id=None, options=body.options))


@router.get("", response_model=dict[str, Any])
def explain_sql(
    sql: Annotated[str, Query(max_length=MAX_SQL_CHARS, description="the task's SQL")],
) -> dict[str, Any]:
    """`POST /explain` for a query given in the URL (options in its WITH clause)."""
    return plan_of(parse_task_sql(sql, task_id=None, options=None))
