"""`PATCH /tasks/{id}` with `buckets`: change a running task's bucket count.

Redis first, then ZooKeeper. `SeqStore.change_layout` starts the new epoch after every window
written so far and fences writers still on the old count (mars.tasks.bucket_layout); the
registry then records the epoch in the task's spec, which mappers (re-reading refused
batches), reducers (owners restart from their checkpoints) and the leader (units for new
buckets) follow. If the API dies between the two, writers are refused until the next change
request finishes the recorded epoch first: nothing is written under a wrong layout meanwhile.
"""

from __future__ import annotations

from api.errors import ApiError
from mars.registry import TaskRecord, TaskRegistry
from mars.store import SeqStore
from mars.tasks.bucket_layout import BucketChange
from mars.tasks.spec import Preaggregation

_ATTEMPTS = 3


def change_buckets(
    registry: TaskRegistry, store: SeqStore, record: TaskRecord, buckets: int
) -> TaskRecord:
    """The task with `buckets` buckets for every window after those written so far."""
    spec = record.spec
    if spec.window.session:
        raise ApiError(
            409,
            "buckets: a session-window task cannot change its bucket count (a session's "
            "partials must stay in one bucket across the change); register it again",
        )
    if spec.window.cumulate:
        raise ApiError(
            409,
            "buckets: a cumulative-window task cannot change its bucket count (a max window's "
            "slices must stay in one bucket across the change); register it again",
        )
    if spec.options.preaggregation is Preaggregation.SPARK:
        raise ApiError(
            409,
            "buckets: hand the task back to the mappers first (`preaggregation: mappers`); "
            "a running `mars spark stream` keeps the count it started with",
        )
    for _attempt in range(_ATTEMPTS):
        layout = record.spec.options.layout
        if layout.current == buckets:
            return record
        epoch = store.change_layout(record.task_id, generation=layout.generation, buckets=buckets)
        recorded = epoch.generation == layout.generation + 1 and epoch.buckets is not None
        if not epoch.changed and not recorded:
            raise ApiError(
                409,
                f"buckets: Redis holds bucket layout generation {epoch.generation}, the "
                f"registry {layout.generation} (Redis lost its latest writes); the mappers "
                "restore it with their next batch: try again",
            )
        assert epoch.from_window_ms is not None and epoch.buckets is not None
        # Either the epoch just made, or one an earlier request made in Redis only: record it.
        record = registry.add_bucket_change(
            record.task_id,
            BucketChange(from_window_ms=epoch.from_window_ms, buckets=epoch.buckets),
            generation=epoch.generation,
        )
        if epoch.changed:
            return record
    raise ApiError(409, "buckets: the bucket layout kept changing under this request; try again")
