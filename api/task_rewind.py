"""`POST /tasks/{id}/rewind`: recompute a running task's windows from a time, or from the
event times of the records at given offsets (docs/rewind.md).

Checks, then Redis, then ZooKeeper: the task must run, be of a kind the rewind supports and
Kafka must still hold every record the re-read needs; `RewindStore.begin` then fixes the
hand-over offsets, the per-bucket markers and the watermark hold in one script, and the
registry lists the rewind in the task's spec (a record only: mappers and reducers follow
Redis, so an API dying between the two loses nothing but the listing, which the next rewind
request completes).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

import polars as pl

from api.errors import ApiError
from api.services import ApiServices
from mars.clients.offset_records import records_from_offsets
from mars.clients.time_offsets import PartitionFrom, offsets_from_time
from mars.engine import Preaggregator
from mars.engine.decode import ROW
from mars.engine.event_time import event_time_ms
from mars.formats.schema_registry import SchemaRegistryClient
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


# Records read from each offset of a rewind by offsets to find one with an event time.
OFFSET_SCAN_RECORDS = 1_000


def rewind_task(
    services: ApiServices,
    record: TaskRecord,
    *,
    from_text: str | None = None,
    offsets: Mapping[int, int] | None = None,
) -> TaskRewind:
    """Begin the task's next rewind from `from_text`, or from the earliest event time of the
    records at `offsets` (partition -> offset; the re-read then starts at those offsets at the
    latest); 409 when it cannot."""
    if (from_text is None) == (offsets is None):
        raise ApiError(422, "give either from (an ISO-8601 time) or offsets, not both")
    spec = record.spec
    if record.status is not TaskStatus.RUNNING:
        raise ApiError(409, f"task {spec.id} is {record.status.value}, not running")
    why = unsupported(spec)
    if why is not None:
        raise ApiError(409, why)
    settings = services.settings
    at_least: Mapping[int, int] = {}
    if offsets is not None:
        from_ms, at_least = _time_at_offsets(services, spec, offsets), offsets
    else:
        from_ms = parse_from(from_text or "")
    from_window = first_rewound_window(WindowAssigner.from_spec(spec.window), from_ms)
    read_from = from_window - spec.window.grace_ms - settings.rewind.read_margin_ms
    partitions = offsets_from_time(settings.kafka, spec.source_topic, read_from)
    _check_held(partitions, read_from)
    starts = [min(p.offset, at_least.get(p.partition, p.offset)) for p in partitions]
    records = sum(p.high - start for p, start in zip(partitions, starts, strict=True))
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
        starts=starts,
        buckets=spec.options.layout.unit_count,
        now_ms=int(datetime.now(UTC).timestamp() * 1000),
    )
    services.registry.record_rewinds(spec.id, RewindStore(services.redis).rewinds(spec.id))
    return rewind


def _time_at_offsets(services: ApiServices, spec: TaskSpec, offsets: Mapping[int, int]) -> int:
    """The earliest event time among the first record with one at or after each offset; 422
    for a partition the topic lacks, 409 for an offset Kafka does not hold or a partition with
    no readable event time in its first `OFFSET_SCAN_RECORDS` records from there."""
    if not offsets:
        raise ApiError(422, "offsets: name at least one partition")
    settings = services.settings
    found = records_from_offsets(
        settings.kafka, spec.source_topic, offsets, limit=OFFSET_SCAN_RECORDS
    )
    unknown = sorted(set(offsets) - set(found))
    if unknown:
        raise ApiError(422, f"offsets: topic {spec.source_topic} has no partition {unknown}")
    registry = settings.schema_registry.url
    schemas = SchemaRegistryClient(registry) if registry else None
    decoder = Preaggregator.for_spec(spec, schemas=schemas).decoder
    times: list[int] = []
    for partition, records in sorted(found.items()):
        offset = offsets[partition]
        if not records.holds(offset):
            raise ApiError(
                409,
                f"partition {partition} holds offsets {records.low} to {records.high - 1}, "
                f"not {offset}",
            )
        first = _first_event_time(spec, decoder.decode(records.values).frame)
        if first is None:
            raise ApiError(
                409,
                f"partition {partition}: none of the {len(records.values)} records from offset "
                f"{offset} has a valid event time ({spec.event_time.field})",
            )
        times.append(first)
    return min(times)


def _first_event_time(spec: TaskSpec, frame: pl.DataFrame) -> int | None:
    """The event time of the first record of `frame` (in record order) that has a valid one."""
    field = spec.event_time.field
    if not frame.height or field is None:
        return None
    times = event_time_ms(frame.get_column(field), time_format=spec.event_time.format, now_ms=0)
    valid = frame.select(ROW).with_columns(times.alias("time")).drop_nulls("time").sort(ROW)
    return int(valid.item(0, "time")) if valid.height else None


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
