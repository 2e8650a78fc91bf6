"""Request and response bodies of the REST API (they define the OpenAPI document)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt

from mars.tasks.bucket_layout import MAX_BUCKETS

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
        "output_topic, buckets, idle_timeout, emit, emit_interval, preaggregation",
    )
    status: Literal["RUNNING", "PAUSED"] = Field(
        "RUNNING",
        description="PAUSED: registered, but no mapper writes it until it is resumed (start a "
        "backfill first)",
    )


class TaskExplain(BaseModel):
    """`POST /explain`: a query to explain without registering it."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(..., max_length=MAX_SQL_CHARS)
    options: dict[str, Any] | None = Field(None, description="as for `POST /tasks`")


class TaskReplace(BaseModel):
    """`PUT /tasks/{id}`: the task's new query; give the options it was registered with (or
    put them in the SQL's WITH): an event time or format that differs is incompatible."""

    model_config = ConfigDict(extra="forbid")

    sql: str = Field(..., max_length=MAX_SQL_CHARS)
    options: dict[str, Any] | None = Field(None, description="as for `POST /tasks`")


class TaskChange(BaseModel):
    """`PATCH /tasks/{id}`: what may change on a registered task."""

    model_config = ConfigDict(extra="forbid")

    preaggregation: Literal["mappers", "spark"] | None = Field(
        None,
        description="who pre-aggregates the live stream: mapper processes, or `mars spark "
        "stream` (hand it over while it runs: nothing is counted twice or lost)",
    )
    buckets: int | None = Field(
        None,
        ge=1,
        le=MAX_BUCKETS,
        description="the task's bucket count for every window after those written so far "
        "(the reducers' units spread over more buckets; results stay exact)",
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


class CounterSample(BaseModel):
    """The task's exact counters at one moment (late: the mappers' plus the reducers')."""

    t_ms: int
    records_in: int
    accepted: int
    late: int
    bad: int


class UnitLive(BaseModel):
    """One unit's figures as its owner last published them (about once a second)."""

    bucket: int
    owner: str | None
    watermark: int | None = Field(description="closed watermark, epoch ms")
    watermark_lag_ms: int | None = Field(description="wall clock minus watermark when published")
    merge_rate: float | None = Field(description="data sets merged per second")
    load: float | None = Field(
        description="partial groups merged per second, smoothed: what the leader balances"
    )
    commit_latency_ms: float | None = Field(description="last Kafka transaction commit")
    result_latency_ms: int | None = Field(
        description="last closing commit: wall clock minus window end + grace (worst window)"
    )
    windows_emitted: int
    results_emitted: int
    updated_ms: int | None


class TaskLive(BaseModel):
    """What the dashboard shows for a task, measured at `measured_ms`."""

    input_rate: float | None = Field(description="records in per second over the last 10 s")
    history: list[CounterSample] = Field(description="one sample a second, last two minutes")
    watermark: int | None = Field(description="min over the units (None: one is unknown)")
    watermark_lag_ms: int | None = Field(description="now minus watermark")
    backlog_datasets: int = Field(description="data sets in Redis no reducer merged yet")
    result_latency_ms: int | None = Field(description="worst unit's last result latency")
    units: list[UnitLive]
    measured_ms: int


class Task(BaseModel):
    id: str
    status: str
    reason: str | None
    created_ms: int
    updated_ms: int
    topics: TaskTopics
    spec: dict[str, Any]
    stats: TaskStats | None = None
    live: TaskLive | None = None


class TaskList(BaseModel):
    tasks: list[Task]


class TaskResults(BaseModel):
    task: str
    results: list[dict[str, Any]] = Field(description="latest emitted rows, newest first")


class TaskWindows(BaseModel):
    """`GET /tasks/{id}/windows`: current values of open windows and the final rows kept."""

    task: str
    rows: list[dict[str, Any]] = Field(
        description="open windows' current rows (`final`: false), then final rows still kept"
    )
    watermark: int | None = Field(description="min over the units' closed watermarks")
    as_of_ms: int | None = Field(
        description="the open windows' values hold every data set the reducers had merged at "
        "this time (None: a unit has no checkpoint yet)"
    )
    staleness_ms: int | None = Field(description="measured_ms minus as_of_ms")
    backlog_datasets: int = Field(description="data sets written that no reducer merged yet")
    measured_ms: int


class RoleAdvice(BaseModel):
    """How many processes of a role the load needs (`mars.elasticity`)."""

    current: int
    needed: int
    mean_cpu: float | None = Field(description="mean CPU share per process (1.0 = one core)")
    reason: str


class ClusterState(BaseModel):
    leader: str | None
    members: dict[str, Any] = Field(
        description="reducers: host, pid, started_ms, metrics, units (assigned), owned_units "
        "(running), merge_rate"
    )
    assignment: dict[str, Any] | None
    mappers: dict[str, Any] = Field(
        description="mappers: host, pid, metrics, updated_ms, partitions (topic, partition, "
        "position, end, lag, paused), backlog per task"
    )
    redis_used_memory_bytes: int | None = None
    advice: dict[str, RoleAdvice] = Field(
        description="`reducers` and `mappers`: the count the current CPU load needs"
    )
    measured_ms: int


class MetricsTarget(BaseModel):
    """One entry of Prometheus's HTTP service discovery."""

    targets: list[str]
    labels: dict[str, str]


class Health(BaseModel):
    status: str


class TaskRewindRequest(BaseModel):
    """`POST /tasks/{id}/rewind`: recompute the task's windows from `from` (ISO-8601), or from
    the earliest event time of the records at `offsets` (partition -> offset); one of the two."""

    model_config = ConfigDict(extra="forbid")

    from_: str | None = Field(None, alias="from", max_length=64, description="ISO-8601 time")
    offsets: dict[NonNegativeInt, NonNegativeInt] | None = Field(
        None, description="partition -> offset: the re-read starts there at the latest"
    )


class TaskRewindAccepted(BaseModel):
    """The rewind begun: its generation (the `revision` of the rows it re-emits), the first
    window it recomputes, and per partition the offsets the re-read covers."""

    task: str
    generation: int
    from_ms: int
    from_window_ms: int
    reread: dict[str, list[int]]  # partition -> [first offset, hand-over offset)
