"""`PUT /tasks/{id}`: replace a running task's query, keeping its open windows when the change
is compatible (mars.tasks.replacement), or from scratch when the caller asks to restart.

Redis first, then ZooKeeper, as for a bucket-count change (api.bucket_changes): the fence
(`SeqStore.change_layout` with the count unchanged) picks the first window of the new query
and refuses writers still on the old spec for it and after; the registry then stores the
replaced spec, which mappers (rebuilding the task, re-reading refused batches) and reducers
(owners restart from their checkpoints) follow. If the API dies between the two, writers are
refused until the next change request records the epoch first.
"""

from __future__ import annotations

from api.errors import ApiError
from api.services import ApiServices
from api.task_sql import parse_task_sql
from mars.registry import TaskRecord
from mars.tasks.bucket_layout import BucketChange
from mars.tasks.replacement import incompatibilities, replaced
from mars.tasks.spec import Preaggregation, TaskSpec

_ATTEMPTS = 3


def replace_task(
    services: ApiServices,
    record: TaskRecord,
    *,
    sql: str,
    options: dict[str, object] | None,
    restart: bool,
) -> TaskRecord:
    """The task with `sql` as its query; 409 naming what differs when the change cannot keep
    the open windows and `restart` is false."""
    new = parse_task_sql(sql, task_id=record.task_id, options=options)
    differences = incompatibilities(record.spec, new)
    if restart:
        return _restart(services, record, new)
    if differences:
        raise ApiError(
            409,
            "the new query cannot keep the open windows: "
            + "; ".join(differences)
            + " (PUT with ?restart=true deletes the task's state and registers it again)",
        )
    if record.spec.options.preaggregation is Preaggregation.SPARK:
        raise ApiError(
            409,
            "hand the task back to the mappers first (`preaggregation: mappers`); a running "
            "`mars spark stream` keeps the query it started with",
        )
    for _attempt in range(_ATTEMPTS):
        layout = record.spec.options.layout
        epoch = services.seq_store.change_layout(
            record.task_id, generation=layout.generation, buckets=layout.current
        )
        if not epoch.changed:
            if (
                epoch.generation != layout.generation + 1
                or epoch.from_window_ms is None
                or epoch.buckets is None
            ):
                raise ApiError(
                    409,
                    f"Redis holds bucket layout generation {epoch.generation}, the registry "
                    f"{layout.generation}; the mappers restore it with their next batch: "
                    "try again",
                )
            # An earlier change made this epoch in Redis only, then died: record it first.
            record = services.registry.add_bucket_change(
                record.task_id,
                BucketChange(from_window_ms=epoch.from_window_ms, buckets=epoch.buckets),
                generation=epoch.generation,
            )
            continue
        assert epoch.from_window_ms is not None
        spec = replaced(record.spec, new, from_window_ms=epoch.from_window_ms)
        try:
            return services.registry.replace_spec(record.task_id, spec, generation=epoch.generation)
        except ValueError as exc:
            raise ApiError(409, f"{exc}; try again") from exc
    raise ApiError(409, "the task's bucket layout kept changing under this request; try again")


def _restart(services: ApiServices, record: TaskRecord, new: TaskSpec) -> TaskRecord:
    """Delete and register again: the open windows and all Redis state go; the new query
    starts from the consumers' committed offsets like a new task."""
    if not services.topics.exists(new.source_topic):
        raise ApiError(422, f"source topic '{new.source_topic}' does not exist in Kafka")
    services.registry.delete(record.task_id)
    services.seq_store.delete_task(record.task_id)
    services.checkpoints.forget(record.task_id)
    services.topics.create_for(new)
    return services.registry.create(new, status=record.status)
