"""`SeqStore`: the client side of the Redis SEQ protocol (docs/protocol.md).

Mappers (and the Spark backfill) call `apply_batch`, which checks and advances the applied
offsets, numbers the batch's data sets and bumps the counters in one Lua script. Reducers call
`snapshot`, `read_datasets` and `release`. Everything of task `T` lives under `mars:{T}:`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import redis
from redis.cluster import RedisCluster

from mars.clients.redis_connection import RedisClient
from mars.store.errors import (
    BucketLayoutChangedError,
    MissingDataSetError,
    ProtocolViolationError,
)
from mars.store.keys import WRITTEN_CHANNEL, TaskKeys
from mars.store.reducer_stats import ReducerStats
from mars.store.results_cache import ResultsCache
from mars.store.rewinds import RewindStore, rewinds_of
from mars.store.scripts import StoreScripts
from mars.store.state import (
    NO_OFFSET,
    ApplyResult,
    ApplyStatus,
    Backlog,
    Heartbeat,
    LayoutEpoch,
    LiveState,
    Snapshot,
    SourceId,
    SourceKey,
    SourceState,
    UnitSnapshot,
    pack_live,
    parse_source_field,
    source_field,
    text_of,
    unpack_live,
    unpack_source,
)
from mars.store.task_counters import TaskCounters
from mars.tasks.bucket_layout import FROM_ANY_WINDOW, BucketLayout

PARTITION_COUNT_FIELD = "partitions"
STORE_COUNTERS = frozenset({"batches", "datasets"})  # counted by apply_batch itself
_LAYOUT_CHANGED = 2  # apply_batch.lua's answer to a writer on a stale bucket layout


def _bytes_client(client: RedisClient) -> RedisClient:
    """The same server, but replies as bytes: data sets are binary."""
    if isinstance(client, RedisCluster):
        if client.nodes_manager.connection_kwargs.get("decode_responses"):
            raise ValueError("SeqStore needs a Redis Cluster client with byte replies")
        return client
    pool = client.connection_pool
    if not pool.connection_kwargs.get("decode_responses"):
        return client
    kwargs = {**pool.connection_kwargs, "decode_responses": False}
    same_kind = type(pool)(
        connection_class=pool.connection_class, max_connections=pool.max_connections, **kwargs
    )
    return redis.Redis(connection_pool=same_kind)


def _binary(value: bytes | str) -> bytes:
    if not isinstance(value, bytes):  # `_bytes_client` rules it out
        raise TypeError(f"expected bytes from Redis, got {type(value).__name__}")
    return value


def _counter_keys(keys: TaskKeys, buckets: Iterable[int]) -> list[str]:
    """The (seq, rseq, merged) counters of each of `buckets`, in that order (the order the
    snapshot script and `_backlog` read them in)."""
    return [k for b in buckets for k in (keys.seq(b), keys.rseq(b), keys.merged(b))]


def _backlog(values: Sequence[Any]) -> Backlog:
    """A task's `Backlog` from the (seq, rseq, merged) counters of each of its buckets."""
    unmerged = unreleased = 0
    for i in range(0, len(values), 3):
        seq = int(values[i] or 0)
        released = int(values[i + 1] or 1) - 1
        merged = max(released, int(values[i + 2] or 0))
        unmerged += max(0, seq - merged)
        unreleased += max(0, seq - released)
    return Backlog(unmerged=unmerged, unreleased=unreleased)


def _pairs(flat: Sequence[Any]) -> Iterable[tuple[str, bytes | str]]:
    return ((text_of(flat[i]), flat[i + 1]) for i in range(0, len(flat), 2))


class SeqStore:
    """Per-task SEQ counters, data sets, source offsets and liveness in Redis.

    `client` is a `redis.Redis` or a `RedisCluster` (`mars.clients.connect_redis`); a
    single-server client configured with `decode_responses=True` is
    re-created over the same connection settings with byte replies. Three small neighbours share
    the connection: `counters` (`TaskCounters`, the task's stats), `results` (`ResultsCache`,
    the latest rows for the REST API) and `reducer_stats` (`ReducerStats`, the reducers'
    published figures).
    """

    def __init__(
        self, client: RedisClient, *, read_chunk: int = 256, delete_batch: int = 500
    ) -> None:
        if read_chunk < 1 or delete_batch < 1:
            raise ValueError("read_chunk and delete_batch must be positive")
        self._redis = _bytes_client(client)
        self._scripts = StoreScripts.register(self._redis)
        self.rewinds = RewindStore(self._redis)
        self.counters = TaskCounters(self._redis)
        self.results = ResultsCache(self._redis)
        self.reducer_stats = ReducerStats(self._redis)
        self._read_chunk = read_chunk
        self._delete_batch = delete_batch

    # -- writers (mapper, backfill) -------------------------------------------------------

    def read_sources(self, task: str) -> dict[int, SourceState]:
        """Applied offset and stream time of every Kafka partition written so far."""
        keys = TaskKeys(task)
        raw = self._redis.hgetall(keys.sources)
        clocks = self._redis.hgetall(keys.key_clocks)
        states = {
            parse_source_field(text_of(k)): _with_clocks(unpack_source(v), clocks.get(k))
            for k, v in raw.items()
        }
        return {s: state for s, state in states.items() if isinstance(s, int)}

    def read_source_states(
        self, task: str, sources: Iterable[SourceId]
    ) -> dict[SourceId, SourceState]:
        """States of the given source ids (also backfill ids); absent ones as `SourceState()`."""
        ids = list(sources)
        if not ids:
            return {}
        keys = TaskKeys(task)
        fields = [source_field(s) for s in ids]
        raw = self._redis.hmget(keys.sources, fields)
        clocks = self._redis.hmget(keys.key_clocks, fields)
        return {
            s: _with_clocks(unpack_source(v), c) if v else SourceState()
            for s, v, c in zip(ids, raw, clocks, strict=True)
        }

    def apply_batch(
        self,
        task: str,
        *,
        expected: Mapping[SourceKey, int],
        sources: Mapping[SourceKey, SourceState],
        datasets: Mapping[int, bytes],
        counters: Mapping[str, int],
        now_ms: int,
        layout: BucketLayout | None = None,
        last_window_start_ms: int | None = None,
    ) -> ApplyResult:
        """Apply one batch atomically, or reject it if any `expected` offset is stale.

        `expected[s]` is the applied offset the writer believes source `s` has (-1: none);
        `sources` the states after this batch (a subset of `expected`); `datasets` maps
        bucket -> encoded partials, routed by `layout` (the task's bucket layout the writer
        used), `last_window_start_ms` the latest window in them. One script, one round trip;
        see docs/protocol.md. Raises `BucketLayoutChangedError` when the layout changed for a
        window of the batch since the writer read it (nothing is written).
        """
        _validate_batch(expected=expected, sources=sources, counters=counters)
        keys: TaskKeys = TaskKeys(task)
        buckets: list[int] = sorted(datasets)
        generation = 0 if layout is None else layout.generation
        args: list[str | bytes] = [
            str(now_ms),
            str(generation),
            str(FROM_ANY_WINDOW if layout is None else layout.current_from_ms),
            "" if last_window_start_ms is None or not datasets else str(last_window_start_ms),
            str(len(expected)),
        ]
        for source, offset in expected.items():
            args += [source_field(source), str(offset)]
        args.append(str(len(sources)))
        for source, state in sources.items():
            stream_time = "" if state.stream_time_ms is None else str(state.stream_time_ms)
            args += [source_field(source), str(state.applied_offset), stream_time]
        args += [datasets[bucket] for bucket in buckets]
        nonzero = {name: delta for name, delta in counters.items() if delta}
        args.append(str(len(nonzero)))
        for name, delta in nonzero.items():
            args += [name, str(delta)]
        args += [WRITTEN_CHANNEL, task]
        clocks = {s: c for s, state in sources.items() if (c := state.key_clocks) is not None}
        args.append(str(len(clocks)))
        for source, blob in clocks.items():
            args += [source_field(source), blob]
        script_keys = [keys.sources, keys.stats, keys.layout, keys.key_clocks]
        for bucket in buckets:
            script_keys += [keys.seq(bucket), keys.datasets(bucket)]
        reply = self._scripts.apply_batch(keys=script_keys, args=args)
        if int(reply[0]) == _LAYOUT_CHANGED:
            raise BucketLayoutChangedError(task=task, writer=generation, current=int(reply[1]))
        if int(reply[0]) == 1:
            seqs = {b: int(s) for b, s in zip(buckets, reply[1:], strict=True)}
            return ApplyResult(status=ApplyStatus.APPLIED, seqs=seqs)
        pairs = list(_pairs(reply[1:]))
        stored_clocks: list[Any] = [None] * len(pairs)
        if any(state.key_clocks is not None for state in sources.values()):
            # Read after the reply: clocks newer than an offset shown only make the retry
            # rejected again (its expected offset is then stale), never applied with them.
            stored_clocks = self._redis.hmget(keys.key_clocks, [field for field, _ in pairs])
        current = {
            parse_source_field(field): _with_clocks(unpack_source(value), clock)
            if value
            else SourceState()
            for (field, value), clock in zip(pairs, stored_clocks, strict=True)
        }
        return ApplyResult(status=ApplyStatus.REJECTED, sources=current)

    def change_layout(self, task: str, *, generation: int, buckets: int) -> LayoutEpoch:
        """Start epoch `generation + 1` of the task's bucket layout with `buckets` buckets,
        after every window written so far (change_layout.lua). When the stored generation is
        not `generation`, nothing changes and the stored epoch comes back (`changed` False)."""
        changed, stored, from_ms, count = self._scripts.change_layout(
            keys=[TaskKeys(task).layout], args=[str(generation), str(buckets)]
        )
        return LayoutEpoch(
            changed=bool(int(changed)),
            generation=int(stored),
            from_window_ms=int(from_ms) if from_ms else None,
            buckets=int(count) if count else None,
        )

    def heartbeat(
        self,
        task: str,
        *,
        partition_count: int,
        partitions: Mapping[int, bool],
        now_ms: int,
        caught_up_since: Mapping[int, int] | None = None,
    ) -> None:
        """`heartbeats` of one task."""
        beat = Heartbeat(
            partition_count=partition_count,
            partitions=partitions,
            caught_up_since=caught_up_since or {},
        )
        self.heartbeats({task: beat}, now_ms=now_ms)

    def heartbeats(self, beats: Mapping[str, Heartbeat], *, now_ms: int) -> None:
        """Record each task's `Heartbeat` (task -> what this mapper tells of its partitions), in
        one round trip for every task (a pipeline; one per node on a cluster). A mapper sends
        them twice a second; these and `backlogs` for 100 tasks took 4 ms a round against
        14-19 ms with a round trip per task (a local Redis)."""
        with self._redis.pipeline(transaction=False) as pipe:
            for task, beat in beats.items():
                mapping = {PARTITION_COUNT_FIELD: str(beat.partition_count)}
                for partition, caught_up in beat.partitions.items():
                    since = beat.caught_up_since.get(partition) if caught_up else None
                    live = LiveState(
                        caught_up=caught_up, heartbeat_wall_ms=now_ms, caught_up_since_ms=since
                    )
                    mapping[str(partition)] = pack_live(live)
                pipe.hset(TaskKeys(task).live, mapping=mapping)  # type: ignore[arg-type]
            pipe.execute()

    # -- reducer ------------------------------------------------------------------------------

    def snapshot_unit(self, task: str, merged: Mapping[int, int | None]) -> UnitSnapshot:
        """The `Snapshot` of each bucket in `merged` (bucket -> last merged data set, noted
        (monotone) for `backlog`; None: not noted) with the task's backfill holds and rewinds,
        read in one atomic step (so before and after one another, as `UnitSnapshot` needs):
        one round trip a step for a unit of any number of buckets (three or more, one each,
        were about a ninth of the owners' CPU with ten tasks)."""
        keys, buckets = TaskKeys(task), list(merged)
        raw_holds, raw_rewinds, raw_sources, raw_live, counters = self._scripts.snapshot(
            keys=[
                keys.backfill_holds,
                keys.rewinds,
                keys.sources,
                keys.live,
                *_counter_keys(keys, buckets),
            ],
            args=["" if merged[b] is None else str(merged[b]) for b in buckets],
        )
        sources: dict[int, SourceState] = {}
        for field, value in _pairs(raw_sources):
            source = parse_source_field(field)
            if isinstance(source, int):  # backfill sources do not hold the watermark
                sources[source] = unpack_source(value)
        live: dict[int, LiveState] = {}
        partition_count: int | None = None
        for field, value in _pairs(raw_live):
            if field == PARTITION_COUNT_FIELD:
                partition_count = int(value)
            else:
                live[int(field)] = unpack_live(value)
        return UnitSnapshot(
            backfill_holds=frozenset(field for field, _ in _pairs(raw_holds)),
            snapshots={
                bucket: Snapshot(
                    bucket=bucket,
                    seq=int(counters[2 * i]),
                    rseq=int(counters[2 * i + 1]),
                    sources=sources,
                    live=live,
                    partition_count=partition_count,
                )
                for i, bucket in enumerate(buckets)
            },
            rewinds=tuple(rewinds_of(_pairs(raw_rewinds))),
        )

    def snapshot(self, task: str, bucket: int, *, merged: int | None = None) -> Snapshot:
        """The bucket's seq/rseq and the task's watermark inputs, read in one atomic step
        (`snapshot_unit` of the one bucket)."""
        return self.snapshot_unit(task, {bucket: merged}).snapshots[bucket]

    def read_datasets(
        self, task: str, bucket: int, first: int, last: int
    ) -> list[tuple[int, bytes]]:
        """Data sets `first..last` (inclusive) in seq order, fetched with HMGET in chunks.

        Raises `MissingDataSetError` if one is gone (released by another owner).
        """
        keys = TaskKeys(task)
        out: list[tuple[int, bytes]] = []
        for start in range(first, last + 1, self._read_chunk):
            seqs = range(start, min(start + self._read_chunk, last + 1))
            values = self._redis.hmget(keys.datasets(bucket), [str(s) for s in seqs])
            for seq, value in zip(seqs, values, strict=True):
                if value is None:
                    raise MissingDataSetError(task=task, bucket=bucket, seq=seq)
                out.append((seq, _binary(value)))
        return out

    def release(self, task: str, bucket: int, rseq: int) -> int:
        """Move the bucket's rseq to `rseq` (never back) and delete the data sets below it.

        Returns the effective rseq. Releasing beyond `seq + 1` is a `ProtocolViolationError`.
        """
        keys = TaskKeys(task)
        try:
            result = self._scripts.release(
                keys=[keys.seq(bucket), keys.rseq(bucket), keys.datasets(bucket)],
                args=[str(rseq)],
            )
        except redis.ResponseError as exc:
            if "mars:" in str(exc):
                raise ProtocolViolationError(str(exc)) from exc
            raise
        return int(result)

    # -- reducer checkpoints (open-window state; docs/reducer.md) -------------------------------

    def write_checkpoint(self, task: str, unit: int, field: str, data: bytes) -> None:
        """Store a unit's checkpoint under `field` (`<number>:<token>`); the committed progress
        record names the one that counts."""
        self._redis.hset(TaskKeys(task).checkpoints(unit), field, data)

    def read_checkpoints(self, task: str, unit: int, fields: list[str]) -> list[bytes | None]:
        """The unit's checkpoints under `fields` (a chain: full, then deltas), in one read."""
        if not fields:
            return []
        values = self._redis.hmget(TaskKeys(task).checkpoints(unit), fields)
        return [None if value is None else _binary(value) for value in values]

    def drop_checkpoints_before(self, task: str, unit: int, number: int) -> int:
        """Delete the unit's checkpoints numbered below `number`; returns how many."""
        keys = [TaskKeys(task).checkpoints(unit)]
        return int(self._scripts.drop_checkpoints(keys=keys, args=[str(number)]))

    # -- backpressure -------------------------------------------------------------------------

    def backlog(self, task: str, *, buckets: int) -> Backlog:
        """Data sets not yet merged and not yet released, summed over the task's buckets."""
        return self.backlogs({task: buckets})[task]

    def backlogs(self, buckets: Mapping[str, int]) -> dict[str, Backlog]:
        """`backlog` of each task (task -> its bucket count), in one MGET for every task (on a
        cluster one per slot, sent together: `mget_nonatomic`)."""
        names = [
            key
            for task, count in buckets.items()
            for key in _counter_keys(TaskKeys(task), range(count))
        ]
        if not names:
            return dict.fromkeys(buckets, Backlog(unmerged=0, unreleased=0))
        if isinstance(self._redis, RedisCluster):
            values = self._redis.mget_nonatomic(names)
        else:
            values = self._redis.mget(names)
        found, at = {}, 0
        for task, count in buckets.items():
            found[task] = _backlog(values[at : at + 3 * count])
            at += 3 * count
        return found

    def memory_used(self) -> int:
        """Redis `used_memory` in bytes (a cluster's: summed over its primaries)."""
        if isinstance(self._redis, RedisCluster):
            per_node = self._redis.info("memory", target_nodes=RedisCluster.PRIMARIES)
            return sum(int(info["used_memory"]) for info in per_node.values())
        return int(self._redis.info("memory")["used_memory"])

    # -- cleanup --------------------------------------------------------------------------------

    def delete_task(self, task: str) -> int:
        """Remove every key of the task (SCAN on its hash-tag pattern, UNLINK in batches)."""
        deleted = 0
        batch: list[bytes] = []
        for key in self._redis.scan_iter(match=TaskKeys(task).scan_pattern, count=1000):
            batch.append(key)
            if len(batch) >= self._delete_batch:
                deleted += int(self._redis.unlink(*batch))
                batch = []
        if batch:
            deleted += int(self._redis.unlink(*batch))
        return deleted


def _validate_batch(
    *,
    expected: Mapping[SourceKey, int],
    sources: Mapping[SourceKey, SourceState],
    counters: Mapping[str, int],
) -> None:
    for source, state in sources.items():
        if source not in expected:
            raise ValueError(f"source {source!r} is written but has no expected offset")
        if state.applied_offset < expected[source]:
            raise ValueError(f"source {source!r} would move back below {expected[source]}")
    for source, offset in expected.items():
        if offset < NO_OFFSET:
            raise ValueError(f"expected offset of {source!r} must be >= -1, got {offset}")
    reserved = STORE_COUNTERS.intersection(counters)
    if reserved:
        raise ValueError(f"counters {sorted(reserved)} are maintained by apply_batch itself")


def _with_clocks(state: SourceState, clocks: bytes | str | None) -> SourceState:
    """`state` with its stored key clocks (`watermark = 'key'`), if any."""
    if clocks is None:
        return state
    blob = clocks.encode() if isinstance(clocks, str) else clocks
    return replace(state, key_clocks=blob)
