"""Live figures of tasks and the cluster, as `GET /tasks/{id}`, `GET /cluster`, the dashboard
and `mars top` show them.

Everything is read from where the processes publish it: the exact counters and the reducers'
figures from Redis, the mappers' status and the reducers' membership from ZooKeeper. Rates and
sparklines need history, so a `CounterSampler` thread reads every task's counters once a
second and keeps the last two minutes (per API process: two API processes sample on their own).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING

from kazoo.exceptions import KazooException

from api.schemas import ClusterState, CounterSample, RoleAdvice, TaskLive, UnitLive
from mars.clients import REDIS_ERRORS
from mars.elasticity import CpuBand, advise
from mars.registry import ZkPaths
from mars.registry.cluster_view import cluster_view
from mars.registry.mapper_status import list_mappers
from mars.store import SeqStore
from mars.store.reducer_stats import figure_float, figure_int

if TYPE_CHECKING:  # the services hold a `CounterSampler`: no import cycle at run time
    from api.services import ApiServices

log = logging.getLogger(__name__)

SAMPLE_INTERVAL_S = 1.0
SAMPLES_KEPT = 120
RATE_WINDOW_S = 10.0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class CounterSampler:
    """Every second, each task's records in / accepted / late / bad, kept for two minutes."""

    def __init__(self, store: SeqStore, task_ids: Callable[[], Iterable[str]]) -> None:
        self._store = store
        self._task_ids = task_ids
        self._samples: dict[str, deque[CounterSample]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="counter-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def sample_once(self) -> None:
        try:
            tasks = set(self._task_ids())
            readings = {task: self._store.counters.read(task) for task in tasks}
        except (*REDIS_ERRORS, KazooException) as exc:
            log.debug("no counter sample: %s", exc)
            return
        at = now_ms()
        with self._lock:
            for task in list(self._samples):
                if task not in tasks:
                    del self._samples[task]
            for task, counters in readings.items():
                self._samples.setdefault(task, deque(maxlen=SAMPLES_KEPT)).append(
                    CounterSample(
                        t_ms=at,
                        records_in=counters.get("records_in", 0),
                        accepted=counters.get("accepted", 0),
                        late=counters.get("late", 0) + counters.get("late_reducer", 0),
                        bad=counters.get("bad", 0),
                    )
                )

    def history(self, task: str) -> list[CounterSample]:
        with self._lock:
            return list(self._samples.get(task, ()))

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.sample_once()


def input_rate(history: list[CounterSample]) -> float | None:
    """Records in per second over the last `RATE_WINDOW_S` of samples (None: too few)."""
    if len(history) < 2:
        return None
    last = history[-1]
    first = next(s for s in history if last.t_ms - s.t_ms <= RATE_WINDOW_S * 1000)
    if first is last:
        first = history[-2]
    return round((last.records_in - first.records_in) * 1000 / (last.t_ms - first.t_ms), 1)


def task_live(store: SeqStore, sampler: CounterSampler, task: str, *, buckets: int) -> TaskLive:
    """The task's live figures: rates from the sampler, the rest read now."""
    now = now_ms()
    units = [
        UnitLive(
            bucket=bucket,
            owner=figures.get("owner") or None,
            watermark=figure_int(figures, "watermark"),
            watermark_lag_ms=figure_int(figures, "watermark_lag_ms"),
            merge_rate=figure_float(figures, "merge_rate"),
            load=figure_float(figures, "load"),
            commit_latency_ms=figure_float(figures, "commit_latency_ms"),
            result_latency_ms=figure_int(figures, "result_latency_ms"),
            windows_emitted=figure_int(figures, "windows_emitted") or 0,
            results_emitted=figure_int(figures, "results_emitted") or 0,
            updated_ms=figure_int(figures, "updated_ms"),
        )
        for bucket, figures in store.reducer_stats.units(task).items()
    ]
    marks = [unit.watermark for unit in units]
    watermark = None if not marks or None in marks else min(m for m in marks if m is not None)
    latencies = [unit.result_latency_ms for unit in units if unit.result_latency_ms is not None]
    history = sampler.history(task)
    return TaskLive(
        input_rate=input_rate(history),
        history=history,
        watermark=watermark,
        watermark_lag_ms=None if watermark is None else now - watermark,
        backlog_datasets=store.backlog(task, buckets=buckets).unmerged,
        result_latency_ms=max(latencies) if latencies else None,
        units=units,
        measured_ms=now,
    )


def cluster_state(services: ApiServices) -> ClusterState:
    """The reducers (ZooKeeper membership plus what each publishes in Redis), the mappers'
    status nodes, Redis memory and the elasticity advice for both roles."""
    root = services.settings.zookeeper.root
    view = cluster_view(services.zk, root=root)
    members = view["members"]
    memory: int | None = None
    try:
        for member_id, member in members.items():
            running = services.seq_store.reducer_stats.process(member_id)
            member["owned_units"] = running.get("owned_units", [])
            member["merge_rate"] = running.get("merge_rate")
            member["cpu"] = running.get("cpu")
        memory = services.seq_store.memory_used()
    except REDIS_ERRORS:
        pass  # ZooKeeper's view alone is still worth showing
    mappers = list_mappers(services.zk, ZkPaths(root=root))
    elasticity = services.settings.elasticity
    band = CpuBand(
        target=elasticity.cpu_target, upper=elasticity.cpu_upper, lower=elasticity.cpu_lower
    )
    return ClusterState(
        leader=view["leader"],
        members=members,
        assignment=view["assignment"],
        mappers=mappers,
        redis_used_memory_bytes=memory,
        advice={
            role: RoleAdvice(**asdict(advise([p.get("cpu") for p in processes.values()], band)))
            for role, processes in (("reducers", members), ("mappers", mappers))
        },
        measured_ms=now_ms(),
    )
