"""The API's own Prometheus metrics: the cluster as a whole, read at scrape time.

Mappers and reducers serve their process's metrics themselves (`mars.metrics_server`); the API
adds what belongs to no single process: each task's exact counters (moved by the same Redis
scripts as the data, so they are the figures to alert on), its backlog and watermark lag, Redis
memory, the assignment generation, the leader and the elasticity advice per role. `GET
/metrics/targets` lists every process for Prometheus's HTTP service discovery
(`configs/prometheus.yml`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from kazoo.exceptions import KazooException
from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from api.live import cluster_state, task_live
from api.services import ApiServices
from mars.clients import REDIS_ERRORS

log = logging.getLogger(__name__)

# exact counter in Redis -> the name's middle part (mars_task_records_<part>_total)
TASK_RECORD_COUNTERS = {
    "records_in": "in",
    "accepted": "accepted",
    "late": "late",
    "late_reducer": "late_at_reducer",
    "bad": "bad",
}


class ClusterCollector(Collector):
    """Reads ZooKeeper and Redis on each scrape (a failed read leaves its metrics out)."""

    def __init__(self, services: ApiServices) -> None:
        self._services = services

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._cluster()
            yield from self._tasks()
        except (*REDIS_ERRORS, KazooException) as exc:
            log.warning("metrics incomplete: %s", exc)

    def _cluster(self) -> Iterator[Metric]:
        state = cluster_state(self._services)
        leader = GaugeMetricFamily("mars_leader_info", "The reducer leader.", labels=["member"])
        if state.leader is not None:
            leader.add_metric([state.leader], 1)
        yield leader
        yield GaugeMetricFamily(
            "mars_assignment_generation",
            "Generation of the reducers' assignment (moves when units move).",
            value=state.assignment["generation"] if state.assignment else 0,
        )
        yield GaugeMetricFamily(
            "mars_reducers", "Live reducer processes.", value=len(state.members)
        )
        yield GaugeMetricFamily("mars_mappers", "Live mapper processes.", value=len(state.mappers))
        if state.redis_used_memory_bytes is not None:
            yield GaugeMetricFamily(
                "mars_redis_used_memory_bytes",
                "Redis used_memory.",
                value=state.redis_used_memory_bytes,
            )
        needed = GaugeMetricFamily(
            "mars_advice_processes_needed",
            "Processes of the role the current CPU load needs (elasticity advice).",
            labels=["role"],
        )
        mean_cpu = GaugeMetricFamily(
            "mars_cpu_share_mean", "Mean CPU share per process of the role.", labels=["role"]
        )
        for role, advice in state.advice.items():
            needed.add_metric([role], advice.needed)
            if advice.mean_cpu is not None:
                mean_cpu.add_metric([role], advice.mean_cpu)
        yield needed
        yield mean_cpu

    def _tasks(self) -> Iterator[Metric]:
        store = self._services.seq_store
        info = GaugeMetricFamily("mars_task_info", "Registered tasks.", labels=["task", "status"])
        counters = {
            name: CounterMetricFamily(
                f"mars_task_records_{part}",
                f"Exact count of the task's records ({name} in Redis).",
                labels=["task"],
            )
            for name, part in TASK_RECORD_COUNTERS.items()
        }
        backlog = GaugeMetricFamily(
            "mars_task_backlog_datasets", "Data sets no reducer merged yet.", labels=["task"]
        )
        lag = GaugeMetricFamily(
            "mars_task_watermark_lag_seconds",
            "Wall clock minus the task's watermark (min over its units).",
            labels=["task"],
        )
        for record in self._services.registry.list():
            task = record.task_id
            info.add_metric([task, record.status.value], 1)
            values = store.counters.read(task)
            for name, family in counters.items():
                family.add_metric([task], values.get(name, 0))
            live = task_live(
                store, self._services.sampler, task, buckets=record.spec.options.layout.unit_count
            )
            backlog.add_metric([task], live.backlog_datasets)
            if live.watermark_lag_ms is not None:
                lag.add_metric([task], live.watermark_lag_ms / 1000)
        yield info
        yield from counters.values()
        yield backlog
        yield lag


def cluster_registry(services: ApiServices) -> CollectorRegistry:
    """A registry holding the `ClusterCollector` of these services."""
    registry = CollectorRegistry()
    registry.register(ClusterCollector(services))
    return registry
