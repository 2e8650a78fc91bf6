"""`ReducerProcess`: one `mars reducer` process.

Registers in ZooKeeper and runs the `ReducerCoordinator`; the coordinator's assignment callback
only records the wanted units, and a reconcile loop on the main thread starts an owner thread
(`UnitOwner.run`) per wanted unit and stops the others. A top-k task is owned as one unit, by
the owner of its bucket 0, which covers all its buckets (the top k is taken across buckets);
the assignment's other units of such a task run nothing.

Session safety: on SUSPENDED/LOST the wanted set is emptied and every owner is told to stop at
once; an owner checks `coordinator.owns(unit)` right before each commit and aborts instead.
After reconnection the coordinator re-delivers the assignment and owners restart from their
committed progress. The units' holder nodes and the fence of a holder's Kafka producer cover
the rest (`reducer/process_output.py`; docs/reducer.md, "One producer per process").
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException

from mars.clients import REDIS_ERRORS, admin_client, connect_redis
from mars.config import Settings
from mars.cpu_meter import CpuMeter
from mars.metrics_server import serve_metrics
from mars.registry import TaskRecord, TaskRegistry, TaskStatus
from mars.registry.paths import ZkPaths
from mars.registry.unit_holders import UnitHolders
from mars.registry.units import Unit
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import (
    PROGRESS_TOPIC,
    PROGRESS_TOPIC_PLAN,
    Replication,
    ensure_task_topics,
    ensure_topics,
    partition_count,
)
from reducer.coordination import ReducerCoordinator
from reducer.coordination.balance import balance_unit_counts
from reducer.coordination.load_balance import LoadBalancer, published_figures
from reducer.output import OutputError, TransactionalOutput, transactional_id
from reducer.process_output import ProcessOutput
from reducer.progress_reader import close_readers, read_progress
from reducer.progress_record import progress_key
from reducer.reducer_metrics import ReducerMetrics
from reducer.unit_owner import Output, OwnerWiring, StopReason, UnitOwner
from reducer.wakeups import WriteWakeups

log = logging.getLogger(__name__)

FENCED_RETRY_S = 2.0  # a fenced owner restarts only if the unit is still ours after this
DATA_LOST_RETRY_S = 30.0


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


def default_member_id() -> str:
    host = socket.gethostname().replace("/", "-") or "host"
    return f"reducer-{host}-{os.getpid()}"


@dataclass(slots=True)
class _Running:
    owner: UnitOwner
    thread: threading.Thread
    stop: threading.Event
    outcome: StopReason | None = None

    def halt(self) -> None:
        """Ask the owner to stop, waking it if it is idle."""
        self.stop.set()
        self.owner.wake()


class ReducerProcess:
    """All owners of one reducer process. `run(stop)` blocks until `stop` is set."""

    def __init__(self, *, settings: Settings, member_id: str | None = None) -> None:
        self.settings = settings
        self.member_id = member_id or default_member_id()
        self._lock = threading.Lock()
        self._wanted: frozenset[Unit] = frozenset()
        self._specs: dict[str, TaskSpec] = {}
        self._running: dict[Unit, _Running] = {}
        self._retry_after: dict[Unit, float] = {}
        self._topics_ready: set[str] = set()
        self._coordinator: ReducerCoordinator | None = None
        self._progress_partitions = PROGRESS_TOPIC_PLAN.partitions
        self._cpu = CpuMeter()
        self._wakeups: WriteWakeups | None = None
        self._holders: UnitHolders | None = None
        self._output_lock = threading.Lock()
        self._shared_output: ProcessOutput | None = None
        self._released_at = 0.0  # the last pass of `_release_idle_units`

    # -- coordinator callbacks (quick: flags only) --------------------------------------------

    def _on_assignment(self, units: frozenset[Unit]) -> None:
        with self._lock:
            self._wanted = units
        log.info("member %s: assigned %d units", self.member_id, len(units))

    def _on_suspended(self) -> None:
        with self._lock:
            self._wanted = frozenset()
            for running in self._running.values():
                running.halt()
        log.warning("member %s: ZooKeeper connection suspended; owners stop", self.member_id)

    def _on_tasks(self, tasks: Mapping[str, TaskRecord]) -> None:
        specs = {tid: r.spec for tid, r in tasks.items() if r.status is TaskStatus.RUNNING}
        with self._lock:
            self._specs = specs

    # -- main loop --------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        cfg = self.settings
        zk = KazooClient(hosts=cfg.zookeeper.hosts, timeout=cfg.zookeeper.session_timeout_s)
        zk.start(timeout=30)
        redis_client = connect_redis(cfg.redis)
        store = SeqStore(redis_client)
        self._wakeups = WriteWakeups(redis_client).start()
        metrics = ReducerMetrics(store.reducer_stats)
        metrics_server = serve_metrics(
            metrics.registry, cfg.metrics, role="reducer", member_id=self.member_id
        )
        admin = admin_client(cfg.kafka)
        ensure_topics(admin, [PROGRESS_TOPIC_PLAN], Replication.of(cfg.kafka))
        self._progress_partitions = partition_count(admin, PROGRESS_TOPIC)
        task_watch = TaskRegistry(zk, root=cfg.zookeeper.root).watch(self._on_tasks)
        self._holders = UnitHolders(zk, ZkPaths(root=cfg.zookeeper.root))
        coordinator = ReducerCoordinator(
            zk,
            member_id=self.member_id,
            on_assignment=self._on_assignment,
            on_suspended=self._on_suspended,
            root=cfg.zookeeper.root,
            refine=balance_unit_counts,
            balancer=LoadBalancer(published_figures(store.reducer_stats), cfg.balance),
            metrics_address=metrics_server.address,
        )
        self._coordinator = coordinator
        coordinator.start()
        if cfg.reducer.output_producer == "process":
            try:  # its init_transactions before the first unit needs it
                self._process_output()
            except (OutputError, KazooException) as exc:  # the first owner tries again
                log.warning("member %s: no producer yet: %s", self.member_id, exc)
        log.info("reducer %s started (metrics on %s)", self.member_id, metrics_server.address)
        last_publish = 0.0
        try:
            while not stop.is_set():
                self._reconcile(store=store, metrics=metrics, admin=admin)
                self._release_idle_units()
                if time.monotonic() - last_publish >= 1.0:
                    last_publish = time.monotonic()
                    self._publish(metrics)
                stop.wait(0.1)
        finally:
            self._stop_all()
            if self._shared_output is not None:
                self._shared_output.close()
            close_readers()
            self._wakeups.stop()
            task_watch.stop()
            coordinator.stop()
            zk.stop()
            zk.close()
            redis_client.close()
            metrics_server.close()
            log.info("reducer %s stopped", self.member_id)

    def _owned_specs(self) -> dict[Unit, tuple[TaskSpec, list[int]]]:
        """Unit -> (spec, covered buckets) for the units this process should run now."""
        with self._lock:
            wanted, specs = self._wanted, self._specs
        owned: dict[Unit, tuple[TaskSpec, list[int]]] = {}
        for unit in wanted:
            spec = specs.get(unit.task_id)
            if spec is None or unit.bucket >= spec.options.layout.unit_count:
                continue
            if spec.top_k is not None:
                if unit.bucket == 0:
                    owned[unit] = (spec, list(range(spec.options.layout.unit_count)))
            else:
                owned[unit] = (spec, [unit.bucket])
        return owned

    def _reconcile(self, *, store: SeqStore, metrics: ReducerMetrics, admin: AdminClient) -> None:
        owned = self._owned_specs()
        now = time.monotonic()
        with self._lock:
            running = dict(self._running)
        for unit, entry in running.items():
            target = owned.get(unit)
            if not entry.thread.is_alive():
                with self._lock:
                    del self._running[unit]
                if entry.outcome is StopReason.FENCED:
                    self._retry_after[unit] = now + FENCED_RETRY_S
                elif entry.outcome is StopReason.DATA_LOST:
                    self._retry_after[unit] = now + DATA_LOST_RETRY_S
            elif target is None or target[0] != entry.owner.spec:
                entry.halt()  # the thread ends soon; restarted on a later pass if wanted
        for unit, (spec, buckets) in owned.items():
            with self._lock:
                if unit in self._running:
                    continue
            if self._retry_after.get(unit, 0.0) > now:
                continue
            self._start_owner(unit, spec, buckets, store=store, metrics=metrics, admin=admin)

    def _unit_output(self, task_id: str, unit: Unit) -> Output:
        """The owner's producer: its own, or its process's (`reducer.output_producer`)."""
        cfg = self.settings
        if cfg.reducer.output_producer == "unit":
            return TransactionalOutput(
                kafka=cfg.kafka,
                transactional_id=transactional_id(task_id, unit.bucket),
                transaction_timeout_ms=cfg.reducer.transaction_timeout_ms,
                compression=cfg.reducer.output_compression,
            )
        coordinator = self._coordinator
        assert coordinator is not None
        return self._process_output().unit_output(unit, may_take=lambda: coordinator.owns(unit))

    def _process_output(self) -> ProcessOutput:
        """The incarnation owners commit through; a new one once it is fenced or its
        ZooKeeper session (and with it its node) is gone."""
        assert self._holders is not None
        with self._output_lock:
            current = self._shared_output
            if current is not None and current.usable():
                return current
            if current is not None:
                current.close()
            cfg = self.settings
            self._shared_output = ProcessOutput(
                kafka=cfg.kafka,
                holders=self._holders,
                member_id=self.member_id,
                transaction_timeout_ms=cfg.reducer.transaction_timeout_ms,
                compression=cfg.reducer.output_compression,
            )
            return self._shared_output

    def _release_idle_units(self) -> None:
        """Release the units the incarnation holds with no owner running (their owners
        stopped while ZooKeeper was out of reach, so their release did not land); once a
        second at most. Skipped while an owner makes a new incarnation (which holds the lock
        for as long as its init_transactions takes): the main loop must not wait on it."""
        if not self._output_lock.acquire(blocking=False):
            return
        shared = self._shared_output
        self._output_lock.release()
        if shared is None or time.monotonic() - self._released_at < 1.0:
            return
        self._released_at = time.monotonic()
        with self._lock:
            running = set(self._running)
        for unit in shared.held_units() - running:
            shared.release(unit)

    def _start_owner(
        self,
        unit: Unit,
        spec: TaskSpec,
        buckets: list[int],
        *,
        store: SeqStore,
        metrics: ReducerMetrics,
        admin: AdminClient,
    ) -> None:
        cfg = self.settings
        if spec.id not in self._topics_ready:
            ensure_task_topics(admin, spec, cfg.kafka)
            self._topics_ready.add(spec.id)
        key = progress_key(spec.id, unit.bucket)
        coordinator = self._coordinator
        assert coordinator is not None
        wiring = OwnerWiring(
            store=store,
            make_output=lambda: self._unit_output(spec.id, unit),
            read_progress=lambda: read_progress(
                kafka=cfg.kafka,
                topic=PROGRESS_TOPIC,
                key=key,
                partitions=self._progress_partitions,
                timeout_s=cfg.reducer.transaction_timeout_ms / 1000 + 30,
            ),
            metrics=metrics,
            progress_topic=PROGRESS_TOPIC,
            progress_partitions=self._progress_partitions,
            clock=wall_clock_ms,
            may_emit=lambda: coordinator.owns(unit),
            wakeups=self._wakeups,
        )
        owner = UnitOwner(
            spec=spec,
            unit_bucket=unit.bucket,
            buckets=buckets,
            wiring=wiring,
            settings=cfg.reducer,
            member_id=self.member_id,
        )
        stop = threading.Event()
        entry = _Running(owner=owner, thread=threading.Thread(), stop=stop)

        def run() -> None:
            entry.outcome = owner.run(stop)

        entry.thread = threading.Thread(target=run, name=f"owner-{unit.key}", daemon=True)
        with self._lock:
            self._running[unit] = entry
        entry.thread.start()
        log.info("member %s: owner of %s started (buckets %s)", self.member_id, unit.key, buckets)

    def _stop_all(self) -> None:
        with self._lock:
            entries = list(self._running.values())
            self._running.clear()
        for entry in entries:
            entry.halt()
        for entry in entries:
            entry.thread.join(timeout=30)

    def _publish(self, metrics: ReducerMetrics) -> None:
        with self._lock:
            entries = dict(self._running)
        try:
            metrics.publish_process(
                self.member_id,
                owned_units=[unit.key for unit in entries],
                merge_rate=sum(e.owner.merge_rate for e in entries.values()),
                cpu=self._cpu.share(),
                now_ms=wall_clock_ms(),
            )
        except REDIS_ERRORS as exc:
            log.warning("metrics not published: %s", exc)
