"""Helpers of the mapper integration tests: real mapper subprocesses, topics, tasks, results.

Each test isolates itself by a ZooKeeper root and a consumer group of its own (passed to the
mapper processes as `MARS_ZOOKEEPER__ROOT` / `MARS_MAPPER__GROUP_ID`), so tests can share the
one produced topic without seeing each other's tasks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from devtools.local import ClusterState
from mars.config import PROJECT_ROOT
from mars.engine.dataset import OpenWindows, decode_dataset, merge_into
from mars.registry import TaskRegistry
from mars.sql import parse_task
from mars.store import SeqStore
from mars.tasks.spec import TaskSpec
from tests.oracle import SIP_TYPE_COUNT_SUM

PAPER_SQL = (
    "SELECT sip, type, count(*) AS cnt, sum(bytes) AS total FROM {topic} "
    "GROUP BY sip, type WINDOWING 60 s"
)
PAPER_ORACLE = SIP_TYPE_COUNT_SUM


def create_topic(admin: AdminClient, name: str, *, partitions: int) -> None:
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])
    for future in futures.values():
        future.result(timeout=30)


@dataclass
class MapperGroup:
    """Mapper subprocesses sharing one ZooKeeper root and consumer group."""

    cluster: ClusterState
    name: str
    log_dir: Path
    settings_env: Mapping[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def zk_root(self) -> str:
        return f"/{self.name}"

    @property
    def group_id(self) -> str:
        return f"mappers-{self.name}"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            **self.cluster.env(),
            "MARS_ZOOKEEPER__ROOT": self.zk_root,
            "MARS_MAPPER__GROUP_ID": self.group_id,
            **self.settings_env,
        }

    def start(self, *extra_args: str) -> subprocess.Popen[bytes]:
        index = len(self.processes)
        log = (self.log_dir / f"{self.name}-mapper-{index}.log").open("wb")
        profile_dir = os.environ.get("MARS_TEST_MAPPER_PROFILE_DIR")  # pyinstrument reports
        if profile_dir:
            extra_args = (*extra_args, "--profile", f"{profile_dir}/{self.name}-{index}.txt")
        process = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "mapper", *extra_args],
            cwd=PROJECT_ROOT,
            env=self.env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        return process

    def registry(self, zk: KazooClient) -> TaskRegistry:
        return TaskRegistry(zk, root=self.zk_root)

    def stop_all(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {path.name}\n{path.read_text(errors='replace')[-4000:]}"
            for path in sorted(self.log_dir.glob(f"{self.name}-mapper-*.log"))
        )


def register_task(
    registry: TaskRegistry, *, task_id: str, topic: str, sql: str = PAPER_SQL, **options: Any
) -> TaskSpec:
    spec = parse_task(sql.format(topic=topic), task_id=task_id, options=options or None)
    registry.create(spec)
    return spec


def wait_until(
    condition: Callable[[], bool], *, timeout_s: float, what: str, logs: Callable[[], str]
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}\n{logs()}")


def all_applied(store: SeqStore, task_id: str, end_offsets: Mapping[int, int]) -> bool:
    """Every partition's applied offset in Redis is its last offset (`end - 1`)."""
    sources = store.read_sources(task_id)
    return all(
        end == 0 or (p in sources and sources[p].applied_offset >= end - 1)
        for p, end in end_offsets.items()
    )


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "mars-test-probe"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group_id: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets (-1001 when none), read without joining the group."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group_id})
    try:
        committed = consumer.committed(
            [TopicPartition(topic, p) for p in range(partitions)], timeout=10
        )
        return {tp.partition: tp.offset for tp in committed}
    except KafkaException:
        return {}
    finally:
        consumer.close()


def merge_all(store: SeqStore, spec: TaskSpec, into: OpenWindows | None = None) -> OpenWindows:
    """Merge every data set still in Redis (rseq..seq of every bucket) into `into`."""
    windows: OpenWindows = {} if into is None else into
    for bucket in range(spec.options.buckets):
        snapshot = store.snapshot(spec.id, bucket)
        if snapshot.seq >= snapshot.rseq:
            for _seq, data in store.read_datasets(spec.id, bucket, snapshot.rseq, snapshot.seq):
                merge_into(windows, decode_dataset(data))
    return windows


def results_of(spec: TaskSpec, windows: OpenWindows) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Merged partial states -> `{(window_start, *key): {alias: value}}` like the oracle's."""
    from mars.aggregates import aggregates_for

    aggregates = aggregates_for(spec.aggregates)
    aliases = [call.alias for call in spec.aggregates]
    return {
        (start, *key): {
            alias: agg.result(state)
            for alias, agg, state in zip(aliases, aggregates, states, strict=True)
        }
        for start, groups in windows.items()
        for key, states in groups.items()
    }
