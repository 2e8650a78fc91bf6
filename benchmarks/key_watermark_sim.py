"""The key-watermark experiment's measurement: the real pre-aggregation and reducer window
state, driven in process over a device workload, once per watermark mode.

Workload (`devices`): each device sends about every second in its own order, with its clock
behind by up to `max_skew_s` (uniform per device), and every third device buffers 30 s and then
uploads the lot at once, as phones do. Arrival time is simulated in ticks of 0.5 s; the source
topic is keyed by device (`partitions` partitions, a device in one).

Per tick, each partition's arrivals are one mapper batch (`Preaggregator.run`, the mappers' own
code, carrying stream times and key clocks as they are stored); its data sets are decoded and
merged into its bucket's reducer state (one per unit, as the reducers own them:
`OpenWindowState`, or `OpenKeyWindowState` for `watermark = 'key'`), each then closed at the
task watermark (min over partitions of their stream time). Measured, per mode:

- late records (the mappers' decision);
- result latency of each (window, device) group: from the arrival of the device's last
  accepted record of the window to the tick its group closed, in simulated seconds (the groups
  only the end-of-stream flush closes are left out and counted);
- reducer state: open groups after each tick (mean, max), and the key clocks held (all units);
- key-clock state in bytes (max over the ticks): the mappers' stored clocks (Arrow IPC, all
  partitions) and the reducers' (as their checkpoints encode them, all units); none with the
  partition watermark; with `key_groups = N` at most N clocks a partition and N a unit;
- late contributions at the reducer (records): none while a key's (or key group's) records
  are in one partition; a `key_groups` configuration routes each device to its group's
  partition, as its topic would have to be keyed;
- cost: records per second of wall time through the pre-aggregation, and reducer seconds
  (merge + close) per million records, on this machine.

No Kafka, Redis or processes: what differs between the modes is the pre-aggregation and the
window state, which this runs for real; end-to-end costs are the same for both.
"""

from __future__ import annotations

import json
import math
import random
import time
import zlib
from collections import defaultdict
from dataclasses import dataclass, field, replace

from mars.aggregates import state_aggregates
from mars.engine.dataset import decode_dataset, encode_dataset
from mars.engine.key_groups import KEY_CLOCKS_START, key_group
from mars.engine.preaggregate import Preaggregator
from mars.engine.records import SourceRecord
from mars.sql import parse_task
from mars.tasks.spec import TaskSpec
from mars.windows import WindowAssigner
from reducer.open_key_windows import OpenKeyWindowState
from reducer.open_windows import OpenWindowState

TICK_MS = 500
BURST_MS = 30_000
BASE_MS = 1_700_000_000_000
SQL = (
    "SELECT device, count(*) AS n, sum(v) AS total FROM S GROUP BY device "
    "WINDOWING 10 s GRACE {grace} s "
    "WITH (event_time = 'ts', event_time_format = 'epoch_ms'{extra})"
)
COST_BATCH = 5_000  # records per batch of the cost measurement (the reference batch size)


@dataclass(frozen=True, slots=True, kw_only=True)
class Mode:
    """One configuration: the partition watermark with a GRACE, or key watermarks."""

    name: str
    grace_s: int
    key_lag_s: int | None = None
    key_groups: int | None = None

    def sql(self) -> str:
        extra = (
            "" if self.key_lag_s is None else f", watermark = 'key', key_lag = '{self.key_lag_s} s'"
        )
        if self.key_groups is not None:
            extra += f", key_groups = {self.key_groups}"
        return SQL.format(grace=self.grace_s, extra=extra)


@dataclass(frozen=True, slots=True, kw_only=True)
class Arrival:
    tick: int
    partition: int
    device: str
    ts: int
    value: bytes


def devices(
    *, count: int, partitions: int, seconds: int, max_skew_s: int, seed: int
) -> list[Arrival]:
    """The workload (module docstring), in arrival order."""
    rng = random.Random(seed)
    skews = {f"d{d:04}": rng.randint(0, max_skew_s * 1000) for d in range(count)}
    buffered: dict[str, list[tuple[int, bytes]]] = {device: [] for device in skews}
    out: list[Arrival] = []
    for tick in range(seconds * 1000 // TICK_MS):
        now = tick * TICK_MS
        for number, (device, skew) in enumerate(skews.items()):
            if rng.random() < 0.5:
                ts = BASE_MS + max_skew_s * 1000 + now - skew
                body = {"ts": ts, "device": device, "v": rng.randint(0, 100)}
                buffered[device].append((ts, json.dumps(body).encode()))
            if number % 3 != 0 or now % BURST_MS == 0:
                partition = zlib.crc32(device.encode()) % partitions
                out += [
                    Arrival(tick=tick, partition=partition, device=device, ts=ts, value=value)
                    for ts, value in buffered[device]
                ]
                buffered[device].clear()
    return out


@dataclass(slots=True, kw_only=True)
class ModeFigures:
    """One mode's figures (module docstring)."""

    mode: str
    records: int = 0
    late: int = 0
    groups_emitted: int = 0
    groups_at_flush: int = 0
    latency_p50_s: float = math.nan
    latency_p99_s: float = math.nan
    open_groups_mean: float = math.nan
    open_groups_max: int = 0
    key_clocks_max: int = 0
    mapper_clock_bytes_max: int = 0
    reducer_clock_bytes_max: int = 0
    reducer_late: int = 0
    mapper_records_per_s: float = math.nan  # batches of COST_BATCH records
    reducer_s_per_million: float = math.nan
    latencies_s: list[float] = field(default_factory=list)


def run_mode(arrivals: list[Arrival], *, partitions: int, mode: Mode) -> ModeFigures:
    """The workload through one mode (module docstring)."""
    if mode.key_groups is not None:  # the topic keyed by key group
        arrivals = [
            replace(a, partition=key_group((a.device,), mode.key_groups) % partitions)
            for a in arrivals
        ]
    replay = _Replay(parse_task(mode.sql(), task_id="bench"), mode, partitions)
    replay.figures.records = len(arrivals)
    by_tick: dict[int, dict[int, list[Arrival]]] = defaultdict(lambda: defaultdict(list))
    for arrival in arrivals:
        by_tick[arrival.tick][arrival.partition].append(arrival)
    open_counts: list[int] = []
    for tick in sorted(by_tick):
        for partition, batch in sorted(by_tick[tick].items()):
            replay.batch(tick, partition, batch)
        open_counts.append(replay.close(tick))
    figures = replay.figures
    figures.groups_emitted = len(figures.latencies_s)
    figures.groups_at_flush = sum(
        len(groups) for state in replay.states.values() for groups in state.windows.values()
    )
    figures.latency_p50_s = _quantile(figures.latencies_s, 0.5)
    figures.latency_p99_s = _quantile(figures.latencies_s, 0.99)
    figures.open_groups_mean = sum(open_counts) / len(open_counts) if open_counts else math.nan
    figures.open_groups_max = max(open_counts, default=0)
    figures.mapper_records_per_s = _mapper_rate(replay.preaggregator, arrivals)
    figures.reducer_s_per_million = (
        replay.reducer_s / (len(arrivals) / 1e6) if arrivals else math.nan
    )
    return figures


class _Replay:
    """The mappers' and the reducers' state of one mode, fed tick by tick."""

    def __init__(self, spec: TaskSpec, mode: Mode, partitions: int) -> None:
        self.preaggregator = Preaggregator.for_spec(spec)
        self.assigner = WindowAssigner.from_spec(spec.window)
        self.states = {
            bucket: _reducer_state(spec, self.assigner, mode.key_lag_s, bucket)
            for bucket in range(spec.options.buckets)
        }
        self.aggregates = state_aggregates(spec)
        self.figures = ModeFigures(mode=mode.name)
        self.partitions = partitions
        self.stream: dict[int, int | None] = dict.fromkeys(range(partitions))
        self.clocks: dict[int, bytes | None] = dict.fromkeys(range(partitions))
        self.offsets = dict.fromkeys(range(partitions), 0)
        self.seqs = dict.fromkeys(range(spec.options.buckets), 0)
        self.last_arrival: dict[tuple[int, tuple[str, ...]], int] = {}
        self.reducer_s = 0.0

    def batch(self, tick: int, partition: int, batch: list[Arrival]) -> None:
        """One mapper batch, its data sets merged by the reducer."""
        first = self.offsets[partition]
        records = [
            SourceRecord(partition=partition, offset=first + i, value=arrival.value)
            for i, arrival in enumerate(batch)
        ]
        self.offsets[partition] += len(records)
        partials = self.preaggregator.run(
            records,
            {partition: self.stream[partition]},
            now_ms=0,
            key_clocks={partition: self.clocks[partition]},
        )
        self.stream[partition] = partials.stream_times.get(partition, self.stream[partition])
        self.clocks[partition] = partials.key_clocks.get(partition, self.clocks[partition])
        stored = sum(len(clocks) for clocks in self.clocks.values() if clocks)
        self.figures.mapper_clock_bytes_max = max(self.figures.mapper_clock_bytes_max, stored)
        self.figures.late += len(partials.late)
        late = {r.offset for r in partials.late}
        for record, arrival in zip(records, batch, strict=True):
            if record.offset not in late:
                start = self.assigner.last_start(arrival.ts)
                self.last_arrival[(start, (arrival.device,))] = tick
        started = time.perf_counter()
        for bucket, data in sorted(partials.datasets.items()):
            self.seqs[bucket] += 1
            state = self.states[bucket]
            at_reducer = state.merge(bucket, self.seqs[bucket], decode_dataset(data))
            self.figures.reducer_late += sum(late.records for late in at_reducer)
        self.reducer_s += time.perf_counter() - started

    def close(self, tick: int) -> int:
        """Close at the task watermark; the open groups left."""
        known = [t for t in self.stream.values() if t is not None]
        watermark = min(known) if len(known) == self.partitions else None
        started = time.perf_counter()
        closed = [w for state in self.states.values() for w in state.close(watermark)]
        self.reducer_s += time.perf_counter() - started
        for window in closed:
            for key in window.groups:
                waited = tick - self.last_arrival[(window.start, key)]
                self.figures.latencies_s.append(waited * TICK_MS / 1000)
        held, size = 0, 0
        for state in self.states.values():
            if isinstance(state, OpenKeyWindowState):
                held += len(state.key_clocks)
                clocks = state.checkpoint_windows().get(KEY_CLOCKS_START, {})
                if clocks:
                    size += len(encode_dataset(self.aggregates, {KEY_CLOCKS_START: clocks}))
        self.figures.key_clocks_max = max(self.figures.key_clocks_max, held)
        self.figures.reducer_clock_bytes_max = max(self.figures.reducer_clock_bytes_max, size)
        return sum(
            len(groups) for state in self.states.values() for groups in state.windows.values()
        )


def _mapper_rate(preaggregator: Preaggregator, arrivals: list[Arrival]) -> float:
    """Records per second through the pre-aggregation in batches of `COST_BATCH` records of
    one partition, stream times and key clocks carried."""
    by_partition: dict[int, list[SourceRecord]] = defaultdict(list)
    for arrival in arrivals:
        mine = by_partition[arrival.partition]
        mine.append(
            SourceRecord(partition=arrival.partition, offset=len(mine), value=arrival.value)
        )
    seconds = 0.0
    for partition, records in sorted(by_partition.items()):
        stream: int | None = None
        clocks: bytes | None = None
        for first in range(0, len(records), COST_BATCH):
            started = time.perf_counter()
            partials = preaggregator.run(
                records[first : first + COST_BATCH],
                {partition: stream},
                now_ms=0,
                key_clocks={partition: clocks},
            )
            seconds += time.perf_counter() - started
            stream = partials.stream_times.get(partition, stream)
            clocks = partials.key_clocks.get(partition, clocks)
    return len(arrivals) / seconds if seconds else math.nan


def _reducer_state(
    spec: TaskSpec, assigner: WindowAssigner, key_lag_s: int | None, bucket: int
) -> OpenWindowState:
    rseqs = {bucket: 1}
    aggregates = state_aggregates(spec)
    if key_lag_s is None:
        return OpenWindowState.starting(assigner=assigner, aggregates=aggregates, rseqs=rseqs)
    return OpenKeyWindowState.starting_by_key(
        assigner=assigner,
        aggregates=aggregates,
        rseqs=rseqs,
        lag_ms=key_lag_s * 1000,
        key_groups=spec.options.key_groups,
    )


def _quantile(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
