"""`UnitOwner`: the merge loop of one owned unit (one bucket of a task, or all its buckets for a
top-k task).

One `step` (`_read`, `_watermark`, then `_commit` if anything is to be committed):
1. `snapshot_unit`: the task's backfill holds, then an atomic `snapshot` of every covered
   bucket (seq/rseq + the task's watermark inputs);
2. read and merge the data sets after the last merged one, in SEQ order;
3. if every bucket was read up to its snapshot's seq, watermark = min over the buckets of
   `watermark_of(snapshot)` (each snapshot guarantees its own bucket's data sets up to its seq
   hold every non-late record of the windows it closes, so the min is safe for all);
4. close windows with `end + grace <= watermark` (sessions: `last + gap + grace < watermark`);
5. every `checkpoint_interval_ms`, if open windows hold contributions merged since the last
   checkpoint (and at once when a session task's step has late partials): write the open
   windows to a new checkpoint in Redis (rseq := merged + 1): a full one, or for tumbling and
   hopping windows a delta of the groups changed since the last one (`DeltaBudget`);
6. if something closed, arrived late, was checkpointed, rseq can move, or (EMIT CHANGES) groups
   changed and the last updates are `emit_interval` old: ONE Kafka transaction with the result
   records, the update records (current values of changed groups, final values of closed
   windows, and with every commit the tombstones of sessions merged away), the late records
   and the progress record (which names the checkpoint); then release data sets below rseq in
   Redis (GC), drop older checkpoints, push the rows to the REST list and publish metrics (with
   the committed checkpoint, which pull queries read).

`recover` (on start and after any failure) opens an `OwnerSession`: init_transactions (fences
a zombie, aborts its open transaction), read the unit's committed progress, load the checkpoint
it names (a full one and the deltas on top of it), replay from its rseq. See docs/reducer.md.

The owner keeps the lifecycle and the step; a commit's records are built by `commit_records`
(pure), the Redis work after it is `CommitCleanup`'s, the figures are `UnitOwnerMetrics`'.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from mars.aggregates import state_aggregates, wire_name
from mars.config import ReducerSettings
from mars.engine.checkpoint_chain import chain_columnar, chain_dataset, encode_delta
from mars.engine.columnar_checkpoint import ColumnarCheckpoint
from mars.engine.dataset import OpenWindows, decode_dataset, encode_dataset
from mars.engine.dataset_revisions import fitted
from mars.engine.finalize import result_spec
from mars.store import MissingDataSetError, SeqStore, Snapshot, UnitSnapshot, watermark_of
from mars.store.reducer_stats import chain_figure
from mars.store.watermark import watermark_held_by_backfills
from mars.tasks.rewind import TaskRewind
from mars.tasks.spec import TaskSpec, WatermarkMode
from mars.windows import CumulativeWindows, SessionWindows, WindowAssigner
from reducer.columnar_choice import uses_columnar_state
from reducer.columnar_windows import ColumnarWindowState
from reducer.commit_cleanup import CommitCleanup
from reducer.commit_records import CommitTarget, UnitChanges, commit_records
from reducer.delta_budget import DeltaBudget
from reducer.gc_pause import gc_paused
from reducer.open_cumulative import OpenCumulativeState
from reducer.open_key_sessions import OpenKeySessionState
from reducer.open_key_windows import OpenKeyWindowState
from reducer.open_sessions import OpenSessionState
from reducer.open_windows import ClosedWindow, LateContribution, OpenWindowState, WindowGroups
from reducer.output import FencedError, OutputError, ToWrite
from reducer.progress_record import CheckpointRef, ProgressRecord, progress_key
from reducer.reducer_metrics import ReducerMetrics
from reducer.spilled_frames import SpillFolder
from reducer.unit_owner_metrics import UnitOwnerMetrics
from reducer.wakeups import WriteWakeups, idle_wait_s

log = logging.getLogger(__name__)

# Data sets an owner with a state budget reads and merges at a time, spilling between them: a
# step reads up to `max_datasets_per_read` (500) per bucket, which an owner behind would hold
# in memory at once, their bytes and their appended frames, whatever its budget.
SPILLING_READ_DATASETS = 8

Clock = Callable[[], int]  # wall clock in epoch ms
# windows, session windows, or cumulative windows
UnitState = OpenWindowState | OpenSessionState | OpenCumulativeState


class Output(Protocol):
    """What an owner needs from its transactional producer: its process's
    (`process_output.HeldUnitOutput`: `start` takes the unit, `close` releases it) or its own
    (`TransactionalOutput`: `start` is init_transactions)."""

    def start(self) -> None: ...
    def commit(self, records: Iterable[ToWrite]) -> None: ...
    def abort(self) -> None: ...
    def close(self) -> None: ...


class RedisDataLostError(RuntimeError):
    """Redis's seq is below what this unit already merged, or the committed checkpoint is gone:
    acknowledged writes were lost. The unit stops rather than guess (docs/protocol.md)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OwnerWiring:
    """The backends an owner talks to, built by the process (or a test)."""

    store: SeqStore
    make_output: Callable[[], Output]
    read_progress: Callable[[], ProgressRecord | None]
    metrics: ReducerMetrics | None
    progress_topic: str
    progress_partitions: int
    clock: Clock
    may_emit: Callable[[], bool] = field(default=lambda: True)
    wakeups: WriteWakeups | None = None  # wake on mapper writes instead of a short poll


class StopReason(Enum):
    """Why `UnitOwner.run` returned."""

    STOPPED = "stopped"  # asked to (the unit moved or the process ends)
    FENCED = "fenced"  # a newer owner's producer took over the transactional id
    DATA_LOST = "data lost"  # Redis lost acknowledged writes: see RedisDataLostError


@dataclass(slots=True, kw_only=True)
class OwnerSession:
    """What an owner holds between `recover` and `close`: its producer, its open windows and
    the progress it last committed."""

    output: Output
    state: UnitState
    committed: ProgressRecord
    last_checkpoint_ms: int
    deltas: DeltaBudget  # whether the next checkpoint may be a delta
    last_updates_ms: int = 0
    checkpoint_written_ms: int | None = None  # by this session (None: of unknown age)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """One step's read: the unit's snapshots and whether every bucket was read up to its
    snapshot's seq (only then may the snapshots' watermark close windows)."""

    unit: UnitSnapshot
    complete: bool
    rewound: bool = False  # a rewind was applied: its hold may not be in `unit` yet


@dataclass(slots=True)
class StepOutcome:
    merged: int = 0
    groups: int = 0  # partial groups in the data sets merged (the unit's work)
    backlog: int = 0  # data sets written but not merged after this step's read (its queue)
    closed: list[ClosedWindow] = field(default_factory=list)
    late: list[LateContribution] = field(default_factory=list)
    watermark: int | None = None
    committed: bool = False


class UnitOwner:
    """Owns one unit of one task; `run` until stopped, `step` for tests."""

    def __init__(
        self,
        *,
        spec: TaskSpec,
        unit_bucket: int,
        buckets: list[int],
        wiring: OwnerWiring,
        settings: ReducerSettings,
        member_id: str,
    ) -> None:
        self.spec = spec
        self.unit_bucket = unit_bucket
        self.buckets = list(buckets)
        self._wiring = wiring
        self._settings = settings
        self._key = progress_key(spec.id, unit_bucket)
        self._aggregates = state_aggregates(spec)
        self._session: OwnerSession | None = None
        self._woken = threading.Event()  # a mapper wrote the task, or the owner must stop
        self._target = CommitTarget(
            spec=spec,
            result_spec=result_spec(spec),
            key=self._key,
            progress_topic=wiring.progress_topic,
            progress_partitions=wiring.progress_partitions,
            owner=member_id,
            results_kept=settings.results_kept,
        )
        self._cleanup = CommitCleanup(
            wiring.store,
            task_id=spec.id,
            unit_bucket=unit_bucket,
            results_kept=settings.results_kept,
        )
        self._metrics = UnitOwnerMetrics(
            wiring.metrics, task_id=spec.id, bucket=unit_bucket, member_id=member_id
        )

    @property
    def committed(self) -> ProgressRecord | None:
        return None if self._session is None else self._session.committed

    @property
    def merge_rate(self) -> float:
        return self._metrics.merge_rate

    # -- lifecycle ------------------------------------------------------------------------

    def recover(self) -> OwnerSession:
        """(Re)start from the committed progress: take the unit (fencing older producers as
        needed), then replay."""
        self.close()
        began = time.monotonic()
        output = self._wiring.make_output()
        output.start()
        fenced = time.monotonic()
        try:
            stored = self._wiring.read_progress()
            read = time.monotonic()
            progress = (stored or ProgressRecord.initial(self.buckets)).covering(self.buckets)
            state = self._starting_state(progress)
        except BaseException:
            output.close()
            raise
        loaded = time.monotonic()
        now = self._wiring.clock()
        self._session = OwnerSession(
            output=output,
            state=state,
            committed=progress,
            last_checkpoint_ms=now,
            deltas=DeltaBudget(max_deltas=self._settings.checkpoint_deltas),
            # A first owner's (empty) state holds everything merged so far; a later owner's
            # checkpoint is of unknown age until it writes its own.
            checkpoint_written_ms=now if stored is None else None,
        )
        log.info(
            "unit %s: recovered (closed watermark %s, rseq %s, checkpoint %s) in %.2f s: "
            "taking the unit %.2f s, progress read %.2f s, checkpoint load %.2f s",
            self._key,
            progress.closed_watermark,
            dict(progress.rseqs),
            chain_figure(ref.field for ref in progress.checkpoint_chain),
            loaded - began,
            fenced - began,
            read - fenced,
            loaded - read,
        )
        return self._session

    def _starting_state(self, progress: ProgressRecord) -> UnitState:
        """The unit's state as the committed `progress` left it, about to replay."""
        window, options = self.spec.window, self.spec.options
        incremental = self._settings.checkpoint_deltas > 0
        resumed: dict[str, Any] = {  # what every kind of state resumes from
            "aggregates": self._aggregates,
            "rseqs": progress.rseqs,
            "replayed_through": progress.merged,
            "closed_watermark": progress.closed_watermark,
        }
        if uses_columnar_state(self.spec, self._aggregates, enabled=self._settings.columnar_state):
            budget = self._settings.state_budget_bytes
            return ColumnarWindowState.starting_columnar(
                assigner=WindowAssigner.from_spec(window),
                checkpoint=self._load_columnar_checkpoint(progress.checkpoint_chain),
                rewinds=progress.rewinds,
                incremental=incremental,
                budget_bytes=budget,
                spill_folder=None if budget is None else SpillFolder.open(self._settings.spill_dir),
                min_part_rows=self._settings.spill_partition_min_rows,
                **resumed,
            )
        resumed["checkpoint"] = self._load_checkpoint(progress.checkpoint_chain)
        track_changes = self.spec.updates_topic is not None
        by_key = options.watermark is WatermarkMode.KEY
        if window.session and by_key:
            return OpenKeySessionState.starting_by_key(
                sessions=SessionWindows.from_spec(window),
                lag_ms=options.key_lag_ms,
                key_groups=options.key_groups,
                track_changes=track_changes,
                **resumed,
            )
        if window.session:
            return OpenSessionState.starting(
                sessions=SessionWindows.from_spec(window), track_changes=track_changes, **resumed
            )
        if window.cumulate:
            return OpenCumulativeState.starting(
                cumulate=CumulativeWindows.from_spec(window), **resumed
            )
        if by_key:
            return OpenKeyWindowState.starting_by_key(
                assigner=WindowAssigner.from_spec(window),
                lag_ms=options.key_lag_ms,
                key_groups=options.key_groups,
                track_changes=track_changes,
                **resumed,
            )
        return OpenWindowState.starting(
            assigner=WindowAssigner.from_spec(window),
            track_changes=track_changes,
            rewinds=progress.rewinds,
            incremental=incremental,
            **resumed,
        )

    def _load_columnar_checkpoint(
        self, chain: tuple[CheckpointRef, ...]
    ) -> ColumnarCheckpoint | OpenWindows:
        """The committed checkpoint as written by a columnar state of the same aggregates,
        else as Python groups (an older checkpoint, or a revised task's)."""
        parts = self._read_checkpoint(chain)
        found = chain_columnar(parts, self._aggregates) if parts else None
        if found is not None:
            return found
        return self._load_checkpoint(chain, parts=parts)

    def _read_checkpoint(self, chain: tuple[CheckpointRef, ...]) -> list[bytes]:
        """The parts of the committed checkpoint, the full one first (none: no checkpoint)."""
        fields = [ref.field for ref in chain]
        parts = self._wiring.store.read_checkpoints(self.spec.id, self.unit_bucket, fields)
        missing = [name for name, data in zip(fields, parts, strict=True) if data is None]
        if missing:
            raise RedisDataLostError(f"the committed checkpoint {missing[0]} is not in Redis")
        return [data for data in parts if data is not None]

    def _load_checkpoint(
        self, chain: tuple[CheckpointRef, ...], *, parts: list[bytes] | None = None
    ) -> OpenWindows:
        if not chain:
            return {}
        # a revision may add aggregates; a columnar checkpoint reads as Python groups
        dataset = chain_dataset(parts or self._read_checkpoint(chain), self._aggregates)
        if dataset.aggregate_names != tuple(wire_name(agg) for agg in self._aggregates):
            raise RedisDataLostError(
                f"checkpoint {chain[-1].field} has aggregates {dataset.aggregate_names}"
            )
        return dataset.windows

    def close(self) -> None:
        """Abort any open transaction and drop the producer (the unit stops emitting)."""
        session, self._session = self._session, None
        if session is not None:
            session.output.close()
            if isinstance(session.state, ColumnarWindowState):
                session.state.release()
        self._metrics.stopped()

    def run(self, stop: threading.Event) -> StopReason:
        """Step until `stop` (then call `wake()` too, so an idle owner notices at once);
        returns why it ended."""
        wakeups = self._wiring.wakeups
        if wakeups is not None:
            wakeups.watch(self.spec.id, self._woken)
        backoff_s = 0.5
        try:
            while not stop.is_set():
                try:
                    self._woken.clear()  # before the step: a write during it wakes the next
                    outcome = self.step(stop=stop)
                    backoff_s = 0.5
                    if outcome.merged == 0 and not outcome.committed:
                        self._woken.wait(self._idle_wait_s())
                except FencedError as exc:
                    log.warning("unit %s: fenced by a newer owner (%s)", self._key, exc)
                    return StopReason.FENCED
                except RedisDataLostError as exc:
                    log.error("unit %s: %s; stopping the unit", self._key, exc)
                    return StopReason.DATA_LOST
                except Exception as exc:  # any failure: rebuild from Kafka
                    log.warning("unit %s: %s: %s; recovering", self._key, type(exc).__name__, exc)
                    self.close()
                    stop.wait(backoff_s)
                    backoff_s = min(backoff_s * 2, 10.0)
            return StopReason.STOPPED
        finally:
            if wakeups is not None:
                wakeups.unwatch(self.spec.id, self._woken)
            self.close()

    def wake(self) -> None:
        """End an idle wait now (a stop request, or a test)."""
        self._woken.set()

    def _idle_wait_s(self) -> float:
        wakeups = self._wiring.wakeups
        if wakeups is not None and wakeups.subscribed:
            interval_s = self._settings.idle_poll_interval_ms / 1000
            return idle_wait_s(interval_s, owners=wakeups.watchers)
        return self._settings.poll_interval_ms / 1000

    # -- one poll -------------------------------------------------------------------------

    def step(self, *, stop: threading.Event | None = None) -> StepOutcome:
        session = self._session or self.recover()
        now = self._wiring.clock()
        outcome = StepOutcome()
        read = self._read(session.state, outcome)
        if read.complete and not read.rewound:
            outcome.watermark = self._watermark(read.unit, now)
        outcome.closed = session.state.close(outcome.watermark)
        if isinstance(session.state, ColumnarWindowState):
            self._metrics.spilled(session.state.keep_within_budget())
        self._metrics.read(merged=outcome.merged, groups=outcome.groups, backlog=outcome.backlog)
        checkpoint = self._checkpoint_due(session, now)
        updates = self._updates_due(session, now)
        if (
            outcome.closed
            or outcome.late
            or checkpoint
            or updates
            or session.state.rseqs() != dict(session.committed.rseqs)
        ):
            if (stop is not None and stop.is_set()) or not self._wiring.may_emit():
                raise OutputError("not the owner any more; not emitting")
            self._commit(
                session, outcome, read.unit.snapshots, now, checkpoint=checkpoint, updates=updates
            )
            outcome.committed = True
        self._publish(session, now, force=outcome.committed)
        return outcome

    def _read(self, state: UnitState, outcome: StepOutcome) -> ReadResult:
        """Snapshot every bucket, then merge its data sets after the last merged one, in SEQ
        order (at most `max_datasets_per_read` per bucket and step)."""
        store, task = self._wiring.store, self.spec.id
        unit = store.snapshot_unit(task, {bucket: state.merged[bucket] for bucket in self.buckets})
        complete = True
        pending = _pending_rewinds(state, unit, self.buckets)
        rewound = False
        spilling = (
            state
            if isinstance(state, ColumnarWindowState) and state.budget_bytes is not None
            else None
        )
        for bucket, snapshot in unit.snapshots.items():
            first = state.merged[bucket] + 1
            if snapshot.seq < state.merged[bucket]:
                raise RedisDataLostError(
                    f"bucket {bucket}: Redis seq {snapshot.seq} < merged {state.merged[bucket]}"
                )
            if snapshot.rseq > first:
                raise MissingDataSetError(task=task, bucket=bucket, seq=first)
            last = min(snapshot.seq, first + self._settings.max_datasets_per_read - 1)
            complete = complete and last == snapshot.seq
            outcome.backlog += snapshot.seq - last
            if last < first:
                rewound = _apply_rewinds(state, pending, bucket) or rewound
                continue
            span = last - first + 1 if spilling is None else SPILLING_READ_DATASETS
            for start in range(first, last + 1, span):
                datasets = store.read_datasets(task, bucket, start, min(start + span - 1, last))
                with _collector_paused(state):
                    for seq, data in datasets:
                        rewound = _apply_rewinds(state, pending, bucket) or rewound
                        late, groups = self._merge(state, bucket, seq, data)
                        outcome.late.extend(late)
                        outcome.merged += 1
                        outcome.groups += groups
                if spilling is not None:
                    self._metrics.spilled(spilling.keep_within_budget())
            rewound = _apply_rewinds(state, pending, bucket) or rewound
        return ReadResult(unit=unit, complete=complete, rewound=rewound)

    def _merge(
        self, state: UnitState, bucket: int, seq: int, data: bytes
    ) -> tuple[list[LateContribution], int]:
        """Merge encoded data set `seq` of `bucket`: its late contributions and groups. The
        columnar state takes the data set's columns decoded natively when it can."""
        if isinstance(state, ColumnarWindowState):
            merged = state.merge_encoded(bucket, seq, data)
            if merged is not None:
                return merged
        dataset = fitted(decode_dataset(data), self._aggregates)
        late = state.merge(bucket, seq, dataset)
        return late, sum(len(groups) for groups in dataset.windows.values())

    def _watermark(self, unit: UnitSnapshot, now: int) -> int | None:
        """The min over the buckets' snapshot watermarks (each snapshot vouches for its own
        bucket's data sets up to its seq), held back by running backfills; None: unknown."""
        marks = [
            watermark_of(
                snapshot,
                idle_timeout_ms=self.spec.options.idle_timeout_ms,
                heartbeat_timeout_ms=self._settings.idle_heartbeat_timeout_ms,
                now_ms=now,
            )
            for snapshot in unit.snapshots.values()
        ]
        known = [mark for mark in marks if mark is not None]
        if len(known) < len(marks):
            return None
        return watermark_held_by_backfills(min(known), backfill_holds=unit.backfill_holds)

    def _updates_due(self, session: OwnerSession, now: int) -> bool:
        """EMIT CHANGES: some group changed, and the last updates are an interval old."""
        interval = self.spec.options.emit_interval_ms
        return (
            interval is not None
            and session.state.has_changes
            and now - session.last_updates_ms >= interval
        )

    def _checkpoint_due(self, session: OwnerSession, now: int) -> bool:
        if session.state.checkpoint_now:
            return True
        if not session.state.needs_checkpoint:
            return False
        return now - session.last_checkpoint_ms >= self._settings.checkpoint_interval_ms

    def _write_checkpoint(
        self, session: OwnerSession, previous: ProgressRecord
    ) -> tuple[CheckpointRef, ...]:
        """Save the open windows under a new, not yet committed checkpoint (rseq := merged + 1):
        a delta on top of the committed chain when the state knows its changed groups and the
        budget allows, else a full one. Returns the chain the progress is to name."""
        state, chain = session.state, previous.checkpoint_chain
        ref = CheckpointRef(
            number=chain[-1].number + 1 if chain else 1, token=uuid.uuid4().hex[:12]
        )
        started = time.monotonic()
        delta = state.delta_data() if isinstance(state, OpenWindowState) else None
        if chain and delta is not None and session.deltas.allows(delta[1]):
            data = encode_delta(delta[0])
            session.deltas.wrote_delta(delta[1])
            written = (*chain, ref)
        else:
            data, groups = self._full_checkpoint(state)
            session.deltas.wrote_full(groups)
            written = (ref,)
        self._wiring.store.write_checkpoint(self.spec.id, self.unit_bucket, ref.field, data)
        state.checkpointed()
        self._metrics.checkpointed(
            size=len(data), seconds=time.monotonic() - started, delta=len(written) > 1
        )
        return written

    def _full_checkpoint(self, state: UnitState) -> tuple[bytes, int]:
        """Every open window of `state`, encoded; and how many groups that is."""
        if isinstance(state, ColumnarWindowState):
            return state.checkpoint_data(), state.columnar_groups()
        windows = (
            state.checkpoint_windows()
            if isinstance(state, OpenKeyWindowState | OpenKeySessionState)
            else state.windows
        )
        data = encode_dataset(self._aggregates, windows, canonical=False)
        return data, sum(len(groups) for groups in windows.values())

    def _commit(
        self,
        session: OwnerSession,
        outcome: StepOutcome,
        snapshots: Mapping[int, Snapshot],
        now: int,
        *,
        checkpoint: bool,
        updates: bool,
    ) -> None:
        """ONE transaction: results, updates (EMIT CHANGES), late records and the progress
        naming the checkpoint, so all count or none. Only once it committed do the session's
        progress and Redis move (release below rseq, older checkpoints, REST rows)."""
        state, previous = session.state, session.committed
        chain = previous.checkpoint_chain
        session.deltas.closed(sum(window.size for window in outcome.closed))
        if checkpoint:
            chain = self._write_checkpoint(session, previous)
            session.last_checkpoint_ms = now
        commit = commit_records(
            self._target,
            previous=previous,
            closed=outcome.closed,
            late=outcome.late,
            changes=self._take_changes(state, updates=updates),
            closed_watermark=state.closed_watermark,
            rseqs=state.rseqs(),
            merged=state.merged,
            checkpoints=chain,
            now=now,
            rewinds=state.rewinds if isinstance(state, OpenWindowState) else previous.rewinds,
            revision=state.revision if isinstance(state, OpenWindowState) else None,
        )
        started = time.monotonic()
        with _collector_paused(state):  # a closed window's records, by the hundred thousand
            session.output.commit(commit.to_write())
        seconds = time.monotonic() - started
        session.committed = commit.progress
        if updates:
            session.last_updates_ms = now
        if checkpoint:
            session.checkpoint_written_ms = now
        self._metrics.committed(
            closes_at=[state.closes_at(window) for window in outcome.closed],
            rows=commit.rows,
            late=outcome.late,
            seconds=seconds,
            now=self._wiring.clock(),
        )
        self._cleanup.after(commit, snapshots=snapshots, previous=previous)

    def _take_changes(self, state: UnitState, *, updates: bool) -> UnitChanges | None:
        """EMIT CHANGES: the changed groups if the updates are due (a top-k task's whole
        changed windows: its top k is taken over all groups; windows closed in this step carry
        only their final rows) and the sessions merged away. None: no updates topic.

        The merged-away sessions go with every commit, not on the interval: a checkpoint in
        this commit forgets those sessions, so an owner recovering from it could never delete
        their keys."""
        if self.spec.updates_topic is None:
            return None
        changed = state.take_changes() if updates else []
        gone = state.take_gone()
        if self.spec.top_k is not None:
            changed = [WindowGroups(start=w.start, groups=state.windows[w.start]) for w in changed]
        return UnitChanges(changed=changed, gone=gone)

    def _publish(self, session: OwnerSession, now: int, *, force: bool) -> None:
        state = session.state
        self._metrics.publish(
            now,
            committed=session.committed,
            watermark=state.closed_watermark,
            # The committed checkpoint holds the open windows as merged at this time: now if
            # nothing was merged since it was written.
            view_ms=session.checkpoint_written_ms if state.needs_checkpoint else now,
            force=force,
        )


def _pending_rewinds(state: UnitState, unit: UnitSnapshot, buckets: list[int]) -> list[TaskRewind]:
    """The task's rewinds this unit has not applied yet, oldest first: for a one-bucket unit
    of tumbling or hopping windows, in Python or columnar state, only (the API refuses the
    others, key watermarks among them: docs/rewind.md)."""
    if (
        not isinstance(state, OpenWindowState)
        or isinstance(state, OpenKeyWindowState)
        or len(buckets) != 1
    ):
        return []
    return [r for r in unit.rewinds if r.generation > state.rewind_generation]


def _apply_rewinds(state: UnitState, pending: list[TaskRewind], bucket: int) -> bool:
    """Apply (and take from `pending`) every rewind whose marker in `bucket` is merged: a data
    set after the marker holds contributions of records from the hand-over offsets on only."""
    applied = False
    while (
        pending
        and isinstance(state, OpenWindowState)
        and (pending[0].seq_of(bucket) <= state.merged[bucket])
    ):
        rewind = pending.pop(0)
        state.rewind(rewind.generation, rewind.from_window_ms)
        log.info(
            "bucket %s: rewind %s applied after data set %s (windows from %s)",
            bucket,
            rewind.generation,
            state.merged[bucket],
            rewind.from_window_ms,
        )
        applied = True
    return applied


def _collector_paused(state: object) -> AbstractContextManager[None]:
    """`gc_paused` while a columnar state merges or its records are written: what they make
    by the hundred thousand forms no cycles (`reducer/gc_pause.py`)."""
    return gc_paused() if isinstance(state, ColumnarWindowState) else nullcontext()
