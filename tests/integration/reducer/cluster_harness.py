"""Real reducer subprocesses and a read_committed result reader for the cluster tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError

from devtools.local import ClusterState
from mars.store.keys import process_stats_key
from tests.integration.reducer.harness import ScriptedMapper

PROJECT_ROOT = Path(__file__).resolve().parents[3]


class WallClock:
    def __call__(self) -> int:
        return time.time_ns() // 1_000_000


@dataclass
class ReducerProcs:
    """`python -m cli.main reducer` processes with the cluster's environment."""

    cluster: ClusterState
    zk_root: str
    log_dir: Path
    extra_env: dict[str, str] = field(default_factory=dict)
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self, member_id: str) -> subprocess.Popen[bytes]:
        env = {
            **os.environ,
            **self.cluster.env(),
            "MARS_ZOOKEEPER__ROOT": self.zk_root,
            "MARS_ZOOKEEPER__SESSION_TIMEOUT_S": "4",
            "MARS_REDUCER__TRANSACTION_TIMEOUT_MS": "10000",
            "MARS_REDUCER__POLL_INTERVAL_MS": "50",
            **self.extra_env,
        }
        log = open(self.log_dir / f"{member_id}.log", "ab")  # noqa: SIM115 - lives with the proc
        proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "reducer", "--id", member_id],
            cwd=PROJECT_ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs[member_id] = proc
        return proc

    def kill(self, member_id: str) -> None:
        proc = self.procs.pop(member_id)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
        self.procs.clear()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.log_dir.glob("*.log"))
        )


class Heartbeats:
    """Keeps the scripted mapper's liveness fresh; `caught_up` flips idleness on."""

    def __init__(self, mapper: ScriptedMapper, lock: threading.Lock) -> None:
        self.mapper = mapper
        self.caught_up = False
        self._lock = lock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Heartbeats:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                self.mapper.heartbeat(caught_up=self.caught_up)
            self._stop.wait(0.2)


class CommittedReader:
    """Reads a topic with isolation.level=read_committed from the beginning."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"test-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self._consumer.subscribe([topic])
        self.records: list[dict[str, Any]] = []

    def poll_for(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self._consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() in (KafkaError._PARTITION_EOF, KafkaError.UNKNOWN_TOPIC_OR_PART):
                    continue
                raise AssertionError(str(error))
            self.records.append(json.loads(message.value() or b"null"))

    def wait_until(self, count: int, *, timeout_s: float, settle_s: float = 3.0) -> None:
        """Read until `count` records arrived (then `settle_s` more, to see duplicates)."""
        deadline = time.monotonic() + timeout_s
        while len(self.records) < count and time.monotonic() < deadline:
            self.poll_for(0.5)
        self.poll_for(settle_s)

    def close(self) -> None:
        self._consumer.close()


def assert_counted_once(bootstrap: str, topic: str, expected: Counter[tuple[int, str]]) -> None:
    """`topic`'s committed rows are `expected`'s (window start, k) -> count, each once."""
    reader = CommittedReader(bootstrap, topic)
    try:
        reader.wait_until(len(expected), timeout_s=30, settle_s=2)
        got = [(r["window_start"], r["k"]) for r in reader.records]
        assert len(got) == len(set(got))
        assert {(r["window_start"], r["k"]): r["c"] for r in reader.records} == dict(expected)
    finally:
        reader.close()


def iter_rows(records: list[dict[str, Any]]) -> Iterator[tuple[int, Any, int]]:
    for row in records:
        yield row["window_start"], row["k"], row["c"]


def owners_of(client: Any, members: list[str]) -> dict[str, str]:
    """Unit key -> the member that publishes it among its `owned_units`."""
    owners: dict[str, str] = {}
    for member in members:
        raw = client.hget(process_stats_key(member), "owned_units")
        owners.update({unit: member for unit in json.loads(raw or b"[]")})
    return owners


def wait_owned(
    client: Any, members: list[str], units: set[str], *, timeout_s: float = 60.0
) -> None:
    """Wait until the reducers' published `owned_units` together cover `units`."""
    deadline = time.monotonic() + timeout_s
    owned: set[str] = set()
    while time.monotonic() < deadline:
        owned = set(owners_of(client, members))
        if units <= owned:
            return
        time.sleep(0.3)
    raise AssertionError(f"units {sorted(units - owned)} not owned by {members} in time")
