"""`POST /tasks/{id}/rewind`: recompute a running task's windows from a time (docs/rewind.md).

Checks, then Redis, then ZooKeeper: the task must run, be of a kind the rewind supports and
Kafka must still hold every record the re-read needs; `RewindStore.begin` then fixes the
hand-over offsets, the per-bucket markers and the watermark hold in one script, and the
registry lists the rewind in the task's spec (a record only: mappers and reducers follow
Redis, so an API dying between the two loses nothing but the listing, which the next rewind
request completes).
"""

from __future__ import annotations

from datetime import UTC, datetime

from api.errors import ApiError
from api.services import ApiServices
from mars.clients.time_offsets import PartitionFrom, offsets_from_time
from mars.registry import TaskRecord, TaskStatus
from mars.store.rewinds import RewindStore
from mars.tasks.rewind import TaskRewind, first_rewound_window
from mars.tasks.spec import Preaggregation, TaskSpec, TimeFormat, WatermarkMode
from mars.windows import WindowAssigner


def parse_from(text: str) -> int:
    """An ISO-8601 time as epoch ms (no zone: UTC); 422 naming it when it does not parse."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ApiError(
            422, f"from: cannot read {text!r} as an ISO-8601 time (e.g. 2026-11-26T08:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def unsupported(spec: TaskSpec) -> str | None:
    """Why the task cannot be rewound (None: it can)."""
    window = spec.window
    if window.session or window.cumulate:
        return "only tumbling and hopping windows can be rewound"
    if spec.options.watermark is WatermarkMode.KEY:
        return "a task with watermark = 'key' cannot be rewound"
    if spec.top_k is not None:
        return "a top-k task (its unit covers every bucket) cannot be rewound"
    if spec.event_time.format is TimeFormat.PROCESSING or not spec.event_time.field:
        return "a processing-time task cannot be rewound (its records have no event time)"
    if spec.options.preaggregation is Preaggregation.SPARK:
        return "hand the task back to the mappers first (`preaggregation: mappers`)"
    return None


def rewind_task(services: ApiServices, record: TaskRecord, *, from_text: str) -> TaskRewind:
    """Begin the task's next rewind from `from_text`; 409 when it cannot."""
    from_ms = parse_from(from_text)
    spec = record.spec
    if record.status is not TaskStatus.RUNNING:
        raise ApiError(409, f"task {spec.id} is {record.status.value}, not running")
    why = unsupported(spec)
    if why is not None:
        raise ApiError(409, why)
    settings = services.settings
    from_window = first_rewound_window(WindowAssigner.from_spec(spec.window), from_ms)
    read_from = from_window - spec.window.grace_ms - settings.rewind.read_margin_ms
    partitions = offsets_from_time(settings.kafka, spec.source_topic, read_from)
    _check_held(partitions, read_from)
    records = sum(p.high - p.offset for p in partitions)
    if records > settings.rewind.max_mapper_records:
        raise ApiError(
            409,
            f"the rewind would re-read up to {records} records, more than "
            f"rewind.max_mapper_records ({settings.rewind.max_mapper_records}); the Spark "
            "path for far rewinds is not built (docs/rewind.md)",
        )
    rewind = RewindStore(services.redis).begin(
        spec.id,
        from_window_ms=from_window,
        from_ms=from_ms,
        starts=[p.offset for p in partitions],
        buckets=spec.options.layout.unit_count,
        now_ms=int(datetime.now(UTC).timestamp() * 1000),
    )
    services.registry.record_rewinds(spec.id, RewindStore(services.redis).rewinds(spec.id))
    return rewind


def _check_held(partitions: list[PartitionFrom], read_from: int) -> None:
    gone = [p for p in partitions if p.truncated]
    if gone:
        where = ", ".join(f"partition {p.partition} from offset {p.low}" for p in gone)
        raise ApiError(
            409,
            f"Kafka no longer holds every record from {_iso(read_from)} (the re-read's start): "
            f"it holds {where}",
        )


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
