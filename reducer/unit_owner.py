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
   windows to a new checkpoint in Redis (rseq := merged + 1);
6. if something closed, arrived late, was checkpointed, rseq can move, or (EMIT CHANGES) groups
   changed and the last updates are `emit_interval` old: ONE Kafka transaction with the result
   records, the update records (current values of changed groups, final values of closed
   windows, and with every commit the tombstones of sessions merged away), the late records
   and the progress record (which names the checkpoint); then release data sets below rseq in
   Redis (GC), drop older checkpoints, push the rows to the REST list and publish metrics (with
   the committed checkpoint, which pull queries read).

`recover` (on start and after any failure) opens an `OwnerSession`: init_transactions (fences
a zombie, aborts its open transaction), read the unit's committed progress, load the checkpoint
it names, replay from its rseq. See docs/reducer.md.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from mars.aggregates import state_aggregates, wire_name
from mars.config import ReducerSettings
from mars.engine.dataset import OpenWindows, decode_dataset, encode_dataset
from mars.engine.finalize import result_spec
from mars.store import MissingDataSetError, SeqStore, Snapshot, UnitSnapshot, watermark_of
from mars.store.watermark import watermark_held_by_backfills
from mars.tasks.spec import TaskSpec
from mars.windows import SessionWindows, WindowAssigner
from reducer.open_sessions import OpenSessionState
from reducer.open_windows import ClosedWindow, LateContribution, OpenWindowState, WindowGroups
from reducer.output import FencedError, OutputError, OutRecord
from reducer.progress_record import (
    COUNTER_NAMES,
    CheckpointRef,
    ProgressRecord,
    partition_for,
    progress_key,
)
from reducer.reducer_metrics import CommitFigures, ReducerMetrics, UnitGauges
from reducer.results import (
    late_record,
    result_records,
    rows_of,
    update_records,
    update_tombstone,
)
from reducer.wakeups import WriteWakeups

log = logging.getLogger(__name__)

Clock = Callable[[], int]  # wall clock in epoch ms
LOAD_SMOOTHING = 0.3  # weight of the last second in the published load (about 3 s memory)
UnitState = OpenWindowState | OpenSessionState  # windows, or session windows


class Output(Protocol):
    """What an owner needs from its transactional producer (`TransactionalOutput`)."""

    def start(self) -> None: ...
    def commit(self, records: list[OutRecord]) -> None: ...
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
    last_updates_ms: int = 0
    checkpoint_written_ms: int | None = None  # by this session (None: of unknown age)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """One step's read: the unit's snapshots and whether every bucket was read up to its
    snapshot's seq (only then may the snapshots' watermark close windows)."""

    unit: UnitSnapshot
    complete: bool


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
        self._member_id = member_id
        self._key = progress_key(spec.id, unit_bucket)
        self._result_spec = result_spec(spec)
        self._aggregates = state_aggregates(spec)
        self._session: OwnerSession | None = None
        self._merged_total = 0
        self._groups_total = 0
        self._rate_mark = (time.monotonic(), 0, 0)
        self._merge_rate = 0.0
        self._load: float | None = None
        self._backlog: int | None = None
        self._woken = threading.Event()  # a mapper wrote the task, or the owner must stop
        self._commit_latency_ms: float | None = None
        self._result_latency_ms: int | None = None
        self._last_publish = 0.0

    @property
    def committed(self) -> ProgressRecord | None:
        return None if self._session is None else self._session.committed

    @property
    def merge_rate(self) -> float:
        return self._merge_rate

    # -- lifecycle ------------------------------------------------------------------------

    def recover(self) -> OwnerSession:
        """(Re)start from the committed progress: fence older producers, then replay."""
        self.close()
        output = self._wiring.make_output()
        output.start()
        try:
            stored = self._wiring.read_progress()
            progress = (stored or ProgressRecord.initial(self.buckets)).covering(self.buckets)
            state = self._starting_state(progress)
        except BaseException:
            output.close()
            raise
        now = self._wiring.clock()
        self._session = OwnerSession(
            output=output,
            state=state,
            committed=progress,
            last_checkpoint_ms=now,
            # A first owner's (empty) state holds everything merged so far; a later owner's
            # checkpoint is of unknown age until it writes its own.
            checkpoint_written_ms=now if stored is None else None,
        )
        log.info(
            "unit %s: recovered (closed watermark %s, rseq %s, checkpoint %s)",
            self._key,
            progress.closed_watermark,
            dict(progress.rseqs),
            None if progress.checkpoint is None else progress.checkpoint.field,
        )
        return self._session

    def _starting_state(self, progress: ProgressRecord) -> UnitState:
        """The unit's state as the committed `progress` left it, about to replay."""
        checkpoint = self._load_checkpoint(progress.checkpoint)
        window = self.spec.window
        if window.session:
            return OpenSessionState.starting(
                sessions=SessionWindows.from_spec(window),
                aggregates=self._aggregates,
                rseqs=progress.rseqs,
                replayed_through=progress.merged,
                closed_watermark=progress.closed_watermark,
                checkpoint=checkpoint,
                track_changes=self.spec.updates_topic is not None,
            )
        return OpenWindowState.starting(
            assigner=WindowAssigner.from_spec(window),
            aggregates=self._aggregates,
            rseqs=progress.rseqs,
            replayed_through=progress.merged,
            closed_watermark=progress.closed_watermark,
            checkpoint=checkpoint,
            track_changes=self.spec.updates_topic is not None,
        )

    def _load_checkpoint(self, ref: CheckpointRef | None) -> OpenWindows:
        if ref is None:
            return {}
        data = self._wiring.store.read_checkpoint(self.spec.id, self.unit_bucket, ref.field)
        if data is None:
            raise RedisDataLostError(f"the committed checkpoint {ref.field} is not in Redis")
        dataset = decode_dataset(data)
        if dataset.aggregate_names != tuple(wire_name(agg) for agg in self._aggregates):
            raise RedisDataLostError(
                f"checkpoint {ref.field} has aggregates {dataset.aggregate_names}"
            )
        return dataset.windows

    def close(self) -> None:
        """Abort any open transaction and drop the producer (the unit stops emitting)."""
        session, self._session = self._session, None
        if session is not None:
            session.output.close()
        if self._wiring.metrics is not None:
            self._wiring.metrics.unit_stopped(self.spec.id, self.unit_bucket)

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
            return self._settings.idle_poll_interval_ms / 1000
        return self._settings.poll_interval_ms / 1000

    # -- one poll -------------------------------------------------------------------------

    def step(self, *, stop: threading.Event | None = None) -> StepOutcome:
        session = self._session or self.recover()
        now = self._wiring.clock()
        outcome = StepOutcome()
        read = self._read(session.state, outcome)
        if read.complete:
            outcome.watermark = self._watermark(read.unit, now)
        outcome.closed = session.state.close(outcome.watermark)
        self._note_merges(outcome.merged, outcome.groups)
        self._backlog = outcome.backlog
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
        self._publish(now, force=outcome.committed)
        return outcome

    def _read(self, state: UnitState, outcome: StepOutcome) -> ReadResult:
        """Snapshot every bucket, then merge its data sets after the last merged one, in SEQ
        order (at most `max_datasets_per_read` per bucket and step)."""
        store, task = self._wiring.store, self.spec.id
        unit = store.snapshot_unit(task, {bucket: state.merged[bucket] for bucket in self.buckets})
        complete = True
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
                continue
            for seq, data in store.read_datasets(task, bucket, first, last):
                dataset = decode_dataset(data)
                outcome.late.extend(state.merge(bucket, seq, dataset))
                outcome.merged += 1
                outcome.groups += sum(len(groups) for groups in dataset.windows.values())
        return ReadResult(unit=unit, complete=complete)

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

    def _write_checkpoint(self, state: UnitState, previous: CheckpointRef | None) -> CheckpointRef:
        """Save the open windows under a new, not yet committed checkpoint (rseq := merged + 1)."""
        ref = CheckpointRef(
            number=1 if previous is None else previous.number + 1, token=uuid.uuid4().hex[:12]
        )
        started = time.monotonic()
        data = encode_dataset(self._aggregates, state.windows, canonical=False)
        self._wiring.store.write_checkpoint(self.spec.id, self.unit_bucket, ref.field, data)
        state.checkpointed()
        if self._wiring.metrics is not None:
            self._wiring.metrics.checkpointed(
                self.spec.id, self.unit_bucket, size=len(data), seconds=time.monotonic() - started
            )
        return ref

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
        (naming the checkpoint); then release data sets below rseq, drop older checkpoints,
        push the REST rows."""
        state, committed = session.state, session.committed
        checkpoint_ref = committed.checkpoint
        if checkpoint:
            checkpoint_ref = self._write_checkpoint(state, committed.checkpoint)
            session.last_checkpoint_ms = now
        rows = rows_of(self._result_spec, outcome.closed)
        counters = {name: committed.counter(name) for name in COUNTER_NAMES}
        counters["windows_emitted"] += len(outcome.closed)
        counters["results_emitted"] += len(rows)
        counters["late_records"] += sum(late.records for late in outcome.late)
        counters["late_contributions"] += len(outcome.late)
        progress = ProgressRecord(
            closed_watermark=state.closed_watermark,
            rseqs=state.rseqs(),
            merged=dict(state.merged),
            counters=counters,
            checkpoint=checkpoint_ref,
            owner=self._member_id,
            committed_ms=now,
        )
        results = result_records(self._result_spec, rows)
        updated = self._update_records(state, rows, changes=updates)
        progress_record = OutRecord(
            topic=self._wiring.progress_topic,
            key=self._key.encode(),
            value=progress.to_bytes(),
            partition=partition_for(self._key, self._wiring.progress_partitions),
        )
        late = [late_record(self.spec, late) for late in outcome.late]
        started = time.monotonic()
        session.output.commit([*results, *updated, *late, progress_record])
        seconds = time.monotonic() - started
        self._commit_latency_ms = seconds * 1000
        session.committed = progress
        if updates:
            session.last_updates_ms = now
        if checkpoint:
            session.checkpoint_written_ms = now
        self._note_commit(state, outcome, rows=len(rows), seconds=seconds)
        store = self._wiring.store
        for bucket, rseq in progress.rseqs.items():
            if rseq > snapshots[bucket].rseq:
                store.release(self.spec.id, bucket, rseq)
        if checkpoint_ref is not None and checkpoint_ref != committed.checkpoint:
            store.drop_checkpoints_before(self.spec.id, self.unit_bucket, checkpoint_ref.number)
        if results and self._settings.results_kept > 0:
            values = [record.value for record in results if record.value is not None]
            store.results.push_encoded(self.spec.id, values, keep=self._settings.results_kept)

    def _update_records(
        self, state: UnitState, final_rows: list[dict[str, Any]], *, changes: bool
    ) -> list[OutRecord]:
        """EMIT CHANGES: the current rows of the changed groups (a top-k task's whole changed
        windows: its top k is taken over all groups) and the final rows, for the updates
        topic. Windows closed in this step carry only their final rows.

        Tombstones of merged-away sessions go with every commit, not on the interval: a
        checkpoint in this commit forgets those sessions, so an owner recovering from it could
        never delete their keys."""
        if self.spec.updates_topic is None:
            return []
        changed = state.take_changes() if changes else []
        gone = state.take_gone()
        if self.spec.top_k is not None:
            changed = [WindowGroups(start=w.start, groups=state.windows[w.start]) for w in changed]
        spec = self._result_spec
        deleted = [update_tombstone(spec, start, key) for start, key in gone]
        current = update_records(spec, rows_of(spec, changed), final=False)
        return deleted + current + update_records(spec, final_rows, final=True)

    # -- metrics --------------------------------------------------------------------------

    def _note_merges(self, merged: int, groups: int) -> None:
        """Count merges; about once a second, the merge rate and the load (partial groups
        merged per second, smoothed over a few seconds: what the leader balances)."""
        if self._wiring.metrics is not None:
            self._wiring.metrics.merged(self.spec.id, self.unit_bucket, merged)
        self._merged_total += merged
        self._groups_total += groups
        mark_time, mark_merged, mark_groups = self._rate_mark
        elapsed = time.monotonic() - mark_time
        if elapsed >= 1.0:
            self._merge_rate = (self._merged_total - mark_merged) / elapsed
            rate = (self._groups_total - mark_groups) / elapsed
            self._load = (
                rate
                if self._load is None
                else LOAD_SMOOTHING * rate + (1 - LOAD_SMOOTHING) * self._load
            )
            self._rate_mark = (time.monotonic(), self._merged_total, self._groups_total)

    def _note_commit(
        self, state: UnitState, outcome: StepOutcome, *, rows: int, seconds: float
    ) -> None:
        """After a successful commit: what it carried, and how long each closed window waited
        for it (wall clock now minus end + grace)."""
        now = self._wiring.clock()
        latencies = [now - state.closes_at(window) for window in outcome.closed]
        if latencies:
            self._result_latency_ms = max(latencies)
        if self._wiring.metrics is None:
            return
        self._wiring.metrics.committed(
            self.spec.id,
            self.unit_bucket,
            CommitFigures(
                windows=len(outcome.closed),
                rows=rows,
                late_contributions=len(outcome.late),
                late_records=sum(late.records for late in outcome.late),
                seconds=seconds,
                result_latencies_s=[latency / 1000 for latency in latencies],
            ),
        )

    def _publish(self, now: int, *, force: bool) -> None:
        metrics, session = self._wiring.metrics, self._session
        if metrics is None or session is None:
            return
        committed, state = session.committed, session.state
        if not force and time.monotonic() - self._last_publish < 1.0:
            return
        self._last_publish = time.monotonic()
        watermark = state.closed_watermark
        checkpoint = committed.checkpoint
        metrics.publish_unit(
            self.spec.id,
            self.unit_bucket,
            counters={name: committed.counter(name) for name in COUNTER_NAMES},
            gauges=UnitGauges(
                watermark=watermark,
                watermark_lag_ms=None if watermark is None else now - watermark,
                merge_rate=self._merge_rate,
                load=self._load,
                backlog=self._backlog,
                commit_latency_ms=self._commit_latency_ms,
                result_latency_ms=self._result_latency_ms,
                checkpoint=None if checkpoint is None else checkpoint.field,
                # The committed checkpoint holds the open windows as merged at this time:
                # now if nothing was merged since it was written.
                view_ms=session.checkpoint_written_ms if state.needs_checkpoint else now,
                owner=self._member_id,
                updated_ms=now,
            ),
        )
