"""`/tasks`: register, list, show, pause, resume and delete tasks; their latest results and the
current values of their open windows (pull queries)."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response

from api.auth import require_token
from api.bucket_changes import change_buckets
from api.errors import ApiError
from api.live import now_ms, task_live
from api.pull_queries import PullQueryError, current_windows
from api.routes_explain import plan_of
from api.schemas import (
    ErrorResponse,
    LastWindow,
    Task,
    TaskChange,
    TaskCreate,
    TaskList,
    TaskReplace,
    TaskResults,
    TaskRewindAccepted,
    TaskRewindRequest,
    TaskStats,
    TaskTopics,
    TaskWindows,
)
from api.services import ApiServices, get_services
from api.task_ids import generate_task_id, is_task_id
from api.task_replace import replace_task
from api.task_rewind import rewind_task
from api.task_sql import parse_task_sql
from mars.registry import TaskExistsError, TaskNotFoundError, TaskRecord, TaskStatus
from mars.sql.schema_options import missing_schema_source
from mars.tasks.spec import Preaggregation, TaskSpec

_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorResponse} for code in (401, 403, 404, 409, 422, 503)
}
router = APIRouter(prefix="/tasks", tags=["tasks"], responses=_ERRORS)
Services = Annotated[ApiServices, Depends(get_services)]
Authorized = Depends(require_token)
MAX_RESULTS = 1000


def _task_body(record: TaskRecord, stats: TaskStats | None = None) -> Task:
    spec = record.spec
    return Task(
        id=spec.id,
        status=record.status.value,
        reason=record.reason,
        created_ms=record.created_ms,
        updated_ms=record.updated_ms,
        topics=TaskTopics(
            source=spec.source_topic,
            output=spec.output_topic,
            late=spec.late_topic,
            dead_letter=spec.dead_letter_topic,
        ),
        spec=spec.to_json_dict(),
        stats=stats,
    )


def _record(services: ApiServices, task_id: str) -> TaskRecord:
    if not is_task_id(task_id):
        raise ApiError(404, f"task {task_id!r} is not registered")
    try:
        return services.registry.get(task_id)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc


def _stats(services: ApiServices, task_id: str) -> TaskStats:
    counters = services.seq_store.counters.read(task_id)
    latest = services.seq_store.results.latest(task_id, 1)
    last = None
    if latest:
        row = latest[0]
        last = LastWindow(window_start=row.get("window_start"), window_end=row.get("window_end"))
    return TaskStats(
        records_in=counters.get("records_in", 0),
        accepted=counters.get("accepted", 0),
        bad=counters.get("bad", 0),
        late=counters.get("late", 0),
        counters=counters,
        last_emitted_window=last,
    )


def _parse(body: TaskCreate) -> TaskSpec:
    """The body's SQL and options as a spec; every problem with them is a 422."""
    spec = parse_task_sql(body.sql, task_id=body.id, options=body.options)
    if body.id is None:
        spec = replace(spec, id=generate_task_id(spec.source_topic))
    return spec


@router.post("", status_code=201, response_model=Task, dependencies=[Authorized])
def create_task(body: TaskCreate, services: Services) -> Task:
    """Register a task: parse, check the source topic, create the output (compacted), late and
    dead-letter topics (and the updates topic for EMIT CHANGES), then write the spec to
    ZooKeeper as RUNNING, or PAUSED if asked (resume it after a backfill)."""
    spec = _parse(body)
    if not services.topics.exists(spec.source_topic):
        raise ApiError(422, f"source topic '{spec.source_topic}' does not exist in Kafka")
    if spec.output_topic == spec.source_topic:
        raise ApiError(422, f"output topic '{spec.output_topic}' is the source topic")
    options = spec.options
    registry_url = services.settings.schema_registry.url
    if problem := missing_schema_source(options.input_format, options.schema_file, registry_url):
        raise ApiError(422, problem)
    registered = services.registry.list()
    if any(record.task_id == spec.id for record in registered):
        raise ApiError(409, f"task '{spec.id}' is already registered")
    for record in registered:
        if record.spec.output_topic == spec.output_topic:
            raise ApiError(
                409, f"output topic '{spec.output_topic}' is used by task '{record.task_id}'"
            )
    # Topics first: once the spec is in ZooKeeper, mappers and reducers start using them.
    services.topics.create_for(spec)
    try:
        record = services.registry.create(spec, status=TaskStatus(body.status))
    except TaskExistsError as exc:
        raise ApiError(409, f"task '{spec.id}' is already registered") from exc
    return _task_body(record)


@router.get("", response_model=TaskList)
def list_tasks(services: Services) -> TaskList:
    return TaskList(tasks=[_task_body(record) for record in services.registry.list()])


@router.get("/{task_id}", response_model=Task)
def show_task(task_id: str, services: Services) -> Task:
    """The task's spec, status, counters (records in, bad, late, last emitted window) and live
    figures (input rate with two minutes of history, watermark and its lag, backlog, result
    latency, each unit's owner and figures)."""
    record = _record(services, task_id)
    body = _task_body(record, _stats(services, task_id))
    body.live = task_live(
        services.seq_store, services.sampler, task_id, buckets=record.spec.options.layout.unit_count
    )
    return body


def _set_status(services: ApiServices, task_id: str, status: TaskStatus) -> Task:
    _record(services, task_id)
    try:
        record = services.registry.set_status(task_id, status)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    return _task_body(record)


@router.patch("/{task_id}", response_model=Task, dependencies=[Authorized])
def change_task(task_id: str, change: TaskChange, services: Services) -> Task:
    """While the task runs: hand its live pre-aggregation to mappers or to a Spark stream
    (`{"preaggregation": "spark"}`), or change its bucket count (`{"buckets": 32}`)."""
    record = _record(services, task_id)
    if change.preaggregation is None and change.buckets is None:
        raise ApiError(422, "nothing to change: give `preaggregation` or `buckets`")
    try:
        if change.preaggregation is not None:
            record = services.registry.set_preaggregation(
                task_id, Preaggregation(change.preaggregation)
            )
        if change.buckets is not None:
            record = change_buckets(services.registry, services.seq_store, record, change.buckets)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    return _task_body(record)


@router.put("/{task_id}", response_model=Task, dependencies=[Authorized])
def replace_task_query(
    task_id: str,
    body: TaskReplace,
    services: Services,
    restart: Annotated[
        bool, Query(description="delete the task's state and register the new query afresh")
    ] = False,
) -> Task:
    """Replace the task's query. A compatible change (new or removed aggregates, WHERE,
    outputs, HAVING, ORDER BY ... LIMIT) keeps the open windows and applies from the first
    window after those written so far (`spec.revisions[-1].from_window_ms`); any other is a
    409 naming what differs, unless `restart=true`."""
    record = _record(services, task_id)
    try:
        record = replace_task(services, record, sql=body.sql, options=body.options, restart=restart)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    return _task_body(record)


@router.post(
    "/{task_id}/rewind",
    status_code=202,
    response_model=TaskRewindAccepted,
    dependencies=[Authorized],
)
def rewind_task_from(task_id: str, body: TaskRewindRequest, services: Services) -> Any:
    """Recompute the task's windows from `from` (or from the event times at `offsets`) on and
    emit each again, once per window and group, at `revision` = the rewind's generation
    (docs/rewind.md). 409 when the task is not running or not of a kind that can be rewound,
    or Kafka no longer holds the records."""
    record = _record(services, task_id)
    try:
        rewind = rewind_task(services, record, from_text=body.from_, offsets=body.offsets)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    return TaskRewindAccepted(
        task=task_id,
        generation=rewind.generation,
        from_ms=rewind.from_ms,
        from_window_ms=rewind.from_window_ms,
        reread={
            str(p): [start, end]
            for p, (start, end) in enumerate(zip(rewind.starts, rewind.handovers, strict=True))
        },
    )


@router.post("/{task_id}/pause", response_model=Task, dependencies=[Authorized])
def pause_task(task_id: str, services: Services) -> Task:
    return _set_status(services, task_id, TaskStatus.PAUSED)


@router.post("/{task_id}/resume", response_model=Task, dependencies=[Authorized])
def resume_task(task_id: str, services: Services) -> Task:
    return _set_status(services, task_id, TaskStatus.RUNNING)


@router.delete("/{task_id}", status_code=204, dependencies=[Authorized])
def delete_task(
    task_id: str,
    services: Services,
    delete_topics: Annotated[
        bool, Query(description="also delete the output, late and dead-letter topics")
    ] = False,
) -> Response:
    """Remove the task from the registry (mappers and reducers stop it), then its Redis state;
    its topics are kept unless `delete_topics=true`."""
    record = _record(services, task_id)
    try:
        services.registry.delete(task_id)
    except TaskNotFoundError as exc:
        raise ApiError(404, str(exc)) from exc
    services.seq_store.delete_task(task_id)
    services.checkpoints.forget(task_id)
    if delete_topics:
        services.topics.delete_for(record.spec)
    return Response(status_code=204)


@router.get("/{task_id}/windows", response_model=TaskWindows)
def task_windows(
    task_id: str,
    request: Request,
    services: Services,
    window_start: Annotated[int | None, Query(description="only this window (epoch ms)")] = None,
) -> TaskWindows:
    """Pull query: the current aggregates of the task's open windows, from the checkpoints the
    reducers keep, then the final rows still kept. Filter groups with `group.<column>=<value>`
    (e.g. `?group.type=dns`); the answer says how old the values may be (`as_of_ms`)."""
    record = _record(services, task_id)
    groups = {
        name.removeprefix("group."): value
        for name, value in request.query_params.items()
        if name.startswith("group.")
    }
    try:
        current = current_windows(
            services.seq_store,
            services.checkpoints,
            record.spec,
            groups=groups,
            window_start=window_start,
        )
    except PullQueryError as exc:
        raise ApiError(422, str(exc)) from exc
    measured = now_ms()
    return TaskWindows(
        task=task_id,
        rows=current.rows,
        watermark=current.watermark,
        as_of_ms=current.as_of_ms,
        staleness_ms=None if current.as_of_ms is None else measured - current.as_of_ms,
        backlog_datasets=services.seq_store.backlog(
            task_id, buckets=record.spec.options.layout.unit_count
        ).unmerged,
        measured_ms=measured,
    )


@router.get("/{task_id}/results", response_model=TaskResults)
def task_results(
    task_id: str,
    services: Services,
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 50,
) -> TaskResults:
    """The latest emitted result rows (newest first), as kept in Redis by the reducers."""
    _record(services, task_id)
    return TaskResults(task=task_id, results=services.seq_store.results.latest(task_id, limit))


@router.get("/{task_id}/explain", response_model=dict[str, Any])
def explain_task(task_id: str, services: Services) -> dict[str, Any]:
    """What the task does: fields read and their types, windows, buckets, the mappers'
    pre-aggregation, the reducers' merge and close rule, output topics, error bounds."""
    return plan_of(_record(services, task_id).spec)
