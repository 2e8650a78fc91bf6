"""One chunk of one task's records into Redis, the same way for the mapper and the Spark backfill.

In this order: pre-aggregate the chunk; publish its late and bad records (flushed before the
apply: a crash in between re-sends them, at-least-once, while the counters stay exact); apply
its partials, the new source states and the counters in one `SeqStore.apply_batch`. What to do
when Redis rejects the chunk differs (the mapper trims and retries, a backfill stops on a
conflict), so the caller reads the `AppliedChunk`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mars.engine.preaggregate import Preaggregator
from mars.engine.records import BatchPartials, SourceBatch, SourceRecord
from mars.engine.shared_decode import BatchDecoding
from mars.side_topics import SideRecordSink
from mars.store import SeqStore, SourceState
from mars.store.state import ApplyResult, SourceId
from mars.tasks.spec import TaskSpec


def chunk_counters(
    partials: BatchPartials, extra: Mapping[str, int] | None = None
) -> dict[str, int]:
    """The task counters a chunk adds (`extra`, e.g. paused time, rides along)."""
    counters = {
        "records_in": partials.records_in,
        "accepted": partials.accepted,
        "filtered": partials.filtered,
        "bad": len(partials.bad),
        "late": len(partials.late),
    }
    for name, delta in (extra or {}).items():
        counters[name] = counters.get(name, 0) + delta
    return counters


@dataclass(frozen=True, slots=True, kw_only=True)
class AppliedChunk:
    """The chunk's partials, the source states it asked for (by partition) and Redis's answer."""

    partials: BatchPartials
    states: dict[int, SourceState]
    result: ApplyResult


def apply_chunk(
    store: SeqStore,
    side: SideRecordSink,
    *,
    spec: TaskSpec,
    preaggregator: Preaggregator,
    records: Sequence[SourceRecord] | SourceBatch,
    views: Mapping[int, SourceState],
    side_source: str,
    now_ms: int,
    source_id: Callable[[int], SourceId] | None = None,
    extra_counters: Mapping[str, int] | None = None,
    decoding: BatchDecoding | None = None,
) -> AppliedChunk:
    """Pre-aggregate `records` (partitions of `views`) on top of `views` (partition -> the
    state the writer believes applied), publish the side records, apply. `source_id` names
    each partition's source in Redis (default: the partition itself, as for live mappers).
    `decoding`: `records` decoded once for every task over the topic (the mapper's).
    Raises `BucketLayoutChangedError` when the task's bucket count changed, for a window of
    the chunk, since `spec` was read: the side records may be out, nothing else is."""
    name: Callable[[int], SourceId] = source_id or _partition_itself
    stream_times = {p: view.stream_time_ms for p, view in views.items()}
    clocks = {p: view.key_clocks for p, view in views.items()}
    partials = preaggregator.run(
        records, stream_times, now_ms=now_ms, decoding=decoding, key_clocks=clocks
    )
    side.publish(spec, source=side_source, bad=partials.bad, late=partials.late)
    states = {
        p: SourceState(
            applied_offset=partials.last_offsets[p],
            stream_time_ms=partials.stream_times.get(p),
            key_clocks=partials.key_clocks.get(p),
        )
        for p in views
    }
    # One kind of source id per call (all partitions, or all one job's): typed loosely here.
    expected: dict[Any, int] = {name(p): view.applied_offset for p, view in views.items()}
    sources: dict[Any, SourceState] = {name(p): state for p, state in states.items()}
    result = store.apply_batch(
        spec.id,
        expected=expected,
        sources=sources,
        datasets=partials.datasets,
        counters=chunk_counters(partials, extra_counters),
        now_ms=now_ms,
        layout=spec.options.layout,
        last_window_start_ms=partials.last_window_start_ms,
    )
    return AppliedChunk(partials=partials, states=states, result=result)


def _partition_itself(partition: int) -> SourceId:
    return partition
