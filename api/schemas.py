"""Request and response bodies of the REST API (they define the OpenAPI document)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

MAX_SQL_CHARS = 100_000


class ErrorDetail(BaseModel):
    message: str
    position: int | None = Field(None, description="0-based character offset in the SQL")
    line: int | None = Field(None, description="1-based line in the SQL")
    column: int | None = Field(None, description="1-based column in the SQL")


class ErrorResponse(BaseModel):
    error: ErrorDetail


class TaskCreate(BaseModel):
    """`POST /tasks`: the task's SQL, an optional id and options overriding the SQL's WITH."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(
        ...,
        max_length=MAX_SQL_CHARS,
        examples=["SELECT sip, count(*) FROM S GROUP BY sip WINDOWING 60 s"],
    )
    id: str | None = Field(
        None, max_length=200, description="task id; generated from the source topic if absent"
    )
    options: dict[str, Any] | None = Field(
        None,
        description="event_time, event_time_format, format, csv_columns, csv_delimiter, "
        "output_topic, buckets, idle_timeout",
    )


class TaskTopics(BaseModel):
    source: str
    output: str
    late: str
    dead_letter: str


class LastWindow(BaseModel):
    window_start: int | None
    window_end: int | None


class TaskStats(BaseModel):
    """Counters kept in Redis by mappers and reducers (0 when nothing happened yet)."""

    records_in: int = 0
    accepted: int = 0
    bad: int = 0
    late: int = 0
    counters: dict[str, int] = Field(default_factory=dict, description="every raw counter")
    last_emitted_window: LastWindow | None = None


class Task(BaseModel):
    id: str
    status: str
    reason: str | None
    created_ms: int
    updated_ms: int
    topics: TaskTopics
    spec: dict[str, Any]
    stats: TaskStats | None = None


class TaskList(BaseModel):
    tasks: list[Task]


class TaskResults(BaseModel):
    task: str
    results: list[dict[str, Any]] = Field(description="latest emitted rows, newest first")


class ClusterState(BaseModel):
    leader: str | None
    members: dict[str, Any]
    assignment: dict[str, Any] | None
    mappers: dict[str, Any]


class Health(BaseModel):
    status: str
