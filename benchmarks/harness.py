"""A fresh local cluster for one `mars bench` invocation, and Mars processes per run.

Each run gets its own ZooKeeper root (so mappers and reducers see only that run's task), its
own consumer group and its own task id (fresh Redis keys), which lets every run re-read the
same preloaded topic from the beginning.
"""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import redis
from kazoo.client import KazooClient

from benchmarks.procstat import cpu_seconds, peak_rss_mb, rss_mb
from benchmarks.results_reader import ResultReader
from benchmarks.stats import MemorySample, ProgressSample
from benchmarks.workload import KEEP_RECORDS
from devtools.local import LocalCluster
from devtools.local.process_handle import ProcessHandle, free_port
from devtools.local.roles import start_role
from mars.clients import RedisClient, admin_client, connect_redis
from mars.config import MAPPER_BATCH_SIZE, Settings, load_settings
from mars.registry import TaskRegistry
from mars.registry.paths import ZkPaths
from mars.sql import parse_task
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from mars.tasks.topics import Replication, TopicPlan, ensure_topics

UNBOUNDED_BACKLOG = 1_000_000_000
R = TypeVar("R", bound=ResultReader)


def fresh_id(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessFigures:
    """CPU seconds and peak RSS of one Mars process, read just before it stopped."""

    name: str
    cpu_s: float | None
    peak_rss_mb: float | None


@dataclass(slots=True, kw_only=True)
class Run:
    """The Mars processes and the task of one benchmark run."""

    bench: BenchCluster
    root: str
    group: str
    env: dict[str, str]
    mappers: list[ProcessHandle] = field(default_factory=list)
    reducers: list[ProcessHandle] = field(default_factory=list)
    apis: list[ProcessHandle] = field(default_factory=list)
    spec: TaskSpec | None = None
    tasks: list[TaskSpec] = field(default_factory=list)  # registered by `register_many`
    cpu_at_register: dict[int, float] = field(default_factory=dict)

    def start_mappers(self, count: int) -> list[ProcessHandle]:
        new = [start_role(self.bench.cluster, "mapper", extra_env=self.env) for _ in range(count)]
        self.mappers += new
        self.bench.wait_members(ZkPaths(root=self.root).mappers, _running(self.mappers))
        return new

    def start_reducers(self, count: int) -> list[ProcessHandle]:
        new = [start_role(self.bench.cluster, "reducer", extra_env=self.env) for _ in range(count)]
        self.reducers += new
        self.bench.wait_members(ZkPaths(root=self.root).reducers, _running(self.reducers))
        return new

    def start_api(self) -> tuple[ProcessHandle, str]:
        """`mars api` under this run's root on a free port; the handle and its base URL."""
        port = free_port()
        handle = start_role(self.bench.cluster, "api", extra_env=self.env, api_port=port)
        self.apis.append(handle)
        return handle, f"http://127.0.0.1:{port}"

    def metrics_urls(self, handles: Sequence[ProcessHandle]) -> list[str]:
        """Where the processes `handles` serve Prometheus `/metrics` (the local cluster's
        record of each process's address)."""
        state = self.bench.cluster.state
        assert state is not None, "the cluster is not up"
        addresses = {record.pid: record.address for record in state.processes}
        return [f"http://{addresses[handle.pid]}/metrics" for handle in handles]

    def register(self, sql: str, *, task_id: str | None = None) -> TaskSpec:
        """Register the task (RUNNING) under this run's root; the mappers start at once."""
        spec = parse_task(sql, task_id=task_id or fresh_id("bench-"))
        self.bench.create_topic(spec.output_topic, self.bench.settings.kafka.result_partitions)
        self.cpu_at_register = {
            h.pid: cpu_seconds(h.pid) or 0.0 for h in self.mappers + self.reducers
        }
        TaskRegistry(self.bench.zk, root=self.root).create(spec)
        self.spec = spec
        return spec

    def register_many(self, specs: Sequence[TaskSpec]) -> None:
        """Register every task (RUNNING) under this run's root, one after the other at once;
        their topics must exist. CPU seconds (`figures`) count from the first."""
        self.cpu_at_register = {
            h.pid: cpu_seconds(h.pid) or 0.0 for h in self.mappers + self.reducers
        }
        registry = TaskRegistry(self.bench.zk, root=self.root)
        for spec in specs:
            registry.create(spec)
            self.tasks.append(spec)

    def stats(self) -> dict[str, int]:
        assert self.spec is not None
        return self.bench.store.counters.read(self.spec.id)

    def wait_records_in(
        self,
        target: int,
        *,
        timeout_s: float,
        cap_s: float | None = None,
        interval_s: float = 0.1,
        while_running: Callable[[], bool] | None = None,
    ) -> list[ProgressSample]:
        """Sample the task's exact `records_in` counter (Redis) until it reaches `target`,
        `cap_s` seconds after the first progress, `timeout_s`, or `while_running` says the
        process doing the work stopped."""
        samples: list[ProgressSample] = []
        deadline = time.monotonic() + timeout_s
        first_progress: float | None = None
        while time.monotonic() < deadline:
            now = time.monotonic()
            done = self.stats().get("records_in", 0)
            samples.append(ProgressSample(t=now, done=done))
            if done >= target:
                break
            if done > 0 and first_progress is None:
                first_progress = now
            if cap_s is not None and first_progress is not None and now - first_progress >= cap_s:
                break
            if while_running is not None and not while_running():
                break
            time.sleep(interval_s)
        return samples

    def figures(self) -> dict[str, list[ProcessFigures]]:
        return {
            role: [
                ProcessFigures(
                    name=h.name,
                    cpu_s=_minus(cpu_seconds(h.pid), self.cpu_at_register.get(h.pid, 0.0)),
                    peak_rss_mb=peak_rss_mb(h.pid),
                )
                for h in handles
            ]
            for role, handles in (("mappers", self.mappers), ("reducers", self.reducers))
        }

    def stop(self) -> None:
        for handle in self.apis + self.mappers + self.reducers:
            handle.stop(timeout_s=10)
        for spec in [self.spec, *self.tasks]:
            if spec is not None:
                self.bench.store.delete_task(spec.id)


def _running(handles: list[ProcessHandle]) -> int:
    return sum(1 for handle in handles if handle.is_running())


def _minus(value: float | None, start: float) -> float | None:
    return None if value is None else value - start


class RedisMemorySampler:
    """Redis `used_memory` over one run, sampled every `interval_s` (INFO's
    `used_memory_peak` is the server's lifetime peak and CONFIG RESETSTAT does not reset it),
    with the resident set (VmRSS) of the processes `pids`, summed, at the same instants."""

    def __init__(
        self, client: RedisClient, *, pids: Sequence[int] = (), interval_s: float = 0.1
    ) -> None:
        self._redis = client
        self._pids = tuple(pids)
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._started = time.monotonic()
        self.peak_bytes = 0
        self.samples: list[MemorySample] = []
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def __enter__(self) -> RedisMemorySampler:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _sample(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(redis.RedisError):
                used = int(self._redis.info("memory")["used_memory"])
                self.peak_bytes = max(self.peak_bytes, used)
                self.samples.append(
                    MemorySample(
                        t_s=time.monotonic() - self._started,
                        redis_mb=used / 1024**2,
                        rss_mb=sum(rss_mb(pid) or 0.0 for pid in self._pids),
                    )
                )
            self._stop.wait(self._interval_s)


class BenchCluster:
    """Kafka, ZooKeeper and Redis started for the benchmarks in their own run folder."""

    def __init__(self, *, run_dir: Path) -> None:
        self.cluster = LocalCluster(settings=load_settings(), run_dir=run_dir)
        state = self.cluster.up()
        self.settings: Settings = load_settings(**state.settings_overrides())
        self.bootstrap = state.kafka_bootstrap  # for the benchmark subprocesses' --bootstrap
        self.kafka = self.settings.kafka
        self.redis = connect_redis(self.settings.redis)
        self.store = SeqStore(self.redis)
        self.zk = KazooClient(hosts=state.zk_hosts, timeout=15)
        self.zk.start(timeout=30)
        self.admin = admin_client(self.kafka)

    def close(self) -> None:
        try:
            self.zk.stop()
            self.zk.close()
            self.redis.close()
        finally:
            self.cluster.down()

    @contextmanager
    def run(
        self, *, batch_size: int = MAPPER_BATCH_SIZE, extra_env: dict[str, str] | None = None
    ) -> Iterator[Run]:
        """A run with its own ZooKeeper root and consumer group; its processes stop at exit."""
        root = "/" + fresh_id("bench-")
        group = fresh_id("bench-mappers-")
        env = {
            "MARS_ZOOKEEPER__ROOT": root,
            "MARS_MAPPER__GROUP_ID": group,
            "MARS_MAPPER__BATCH_SIZE": str(batch_size),
            "MARS_MAPPER__BACKLOG_HIGH_DATASETS": str(UNBOUNDED_BACKLOG),
            "MARS_MAPPER__REDIS_MEMORY_HIGH_BYTES": str(8 * 1024**3),
            **(extra_env or {}),
        }
        run = Run(bench=self, root=root, group=group, env=env)
        try:
            yield run
        finally:
            run.stop()

    def wait_members(self, path: str, count: int, *, timeout_s: float = 90.0) -> None:
        """Until `count` processes registered under `path` (their imports and clients are up)."""
        self.wait(
            lambda: self.zk.exists(path) is not None and len(self.zk.get_children(path)) >= count,
            timeout_s=timeout_s,
            what=f"{count} members under {path}",
        )

    def create_topic(self, topic: str, partitions: int) -> None:
        plan = TopicPlan(name=topic, partitions=partitions, config=KEEP_RECORDS)
        ensure_topics(self.admin, [plan], Replication.of(self.settings.kafka))

    def read_results(
        self, kind: type[R], topic: str, *, count_field: str = "count_star", **options: Any
    ) -> R:
        """A `kind` reader of the result topic `topic` (created first), started."""
        self.create_topic(topic, self.settings.kafka.result_partitions)
        reader = kind(kafka=self.kafka, topic=topic, count_field=count_field, **options)
        reader.start()
        return reader

    def pids(self, *roles: str) -> list[int]:
        """The cluster's processes of these roles (`redis`, `spark-worker`, ...)."""
        state = self.cluster.state
        assert state is not None, "the cluster is not up"
        return [record.pid for record in state.processes if record.role in roles]

    def redis_memory(self) -> dict[str, float]:
        info = self.redis.info("memory")
        return {
            "used_memory_mb": int(info["used_memory"]) / 1024**2,
            "used_memory_peak_mb": int(info["used_memory_peak"]) / 1024**2,
        }

    def redis_sampler(self, *, pids: Sequence[int] = ()) -> RedisMemorySampler:
        return RedisMemorySampler(self.redis, pids=pids)

    @staticmethod
    def wait(check: Callable[[], bool], *, timeout_s: float, what: str) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if check():
                return
            time.sleep(0.1)
        raise TimeoutError(f"timed out after {timeout_s:.0f}s waiting for {what}")
