"""The local cluster: start the three servers (and, if asked, a Spark standalone master with
workers, and a schema registry), remember what was started, stop exactly that.

The state file (`<run_dir>/cluster.json`) lets `mars local status|down` in another process find
the cluster `mars local up` started; the Python API (`LocalCluster`) is what the tests use.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from devtools.local.credentials import LocalCredentials
from devtools.local.kafka_server import probe_kafka, start_kafka_nodes
from devtools.local.process_handle import (
    ProcessHandle,
    ServiceError,
    port_is_open,
    spawn,
    wait_port_free,
    wait_until,
)
from devtools.local.redis_server import (
    probe_redis,
    probe_redis_cluster_node,
    redis_cluster_url,
    redis_url,
    start_redis,
    start_redis_cluster,
)
from devtools.local.schema_registry_server import (
    probe_schema_registry,
    registry_port,
    schema_registry_url,
    start_schema_registry,
)
from devtools.local.spark_server import master_status, start_spark_master, start_spark_worker
from devtools.local.zookeeper_server import (
    client_port,
    probe_zookeeper,
    start_zookeeper,
    start_zookeeper_ensemble,
    zookeeper_mode,
)
from mars.config import KafkaSettings, Settings

__all__ = ["ClusterState", "LocalCluster", "ServiceError"]

START_ATTEMPTS = 3  # spawns of a server that exits while starting again, before giving up
# The roles a cluster starts itself, as opposed to Mars processes a caller adds and removes.
SERVER_ROLES = frozenset(
    {"kafka", "zookeeper", "redis", "spark-master", "spark-worker", "schema-registry"}
)


@dataclass(slots=True, kw_only=True)
class ProcessRecord:
    name: str
    role: str  # kafka | zookeeper | redis | spark-master | spark-worker | mapper | reducer | api
    # | schema-registry
    pid: int
    started: int
    argv: list[str]
    log: str
    address: str | None = None

    def handle(self) -> ProcessHandle:
        return ProcessHandle(
            name=self.name,
            pid=self.pid,
            started=self.started,
            argv=tuple(self.argv),
            log=Path(self.log),
        )


@dataclass(slots=True, kw_only=True)
class ClusterState:
    run_dir: str
    kafka_bootstrap: str
    zk_hosts: str
    redis_url: str
    spark_master: str | None = None  # spark://127.0.0.1:<port> when Spark workers were started
    spark_master_ui_port: int | None = None
    # librdkafka properties a client needs (SASL for a cluster started with credentials)
    kafka_client_properties: dict[str, str] = field(default_factory=dict)
    # Of the topics Mars creates: 3 and 2 on 3 brokers (`kafka.replication_factor`, ...)
    kafka_replication_factor: int = 1
    kafka_min_insync_replicas: int = 1
    # The Confluent-compatible API of the schema registry, when one was started
    schema_registry_url: str | None = None
    processes: list[ProcessRecord] = field(default_factory=list)

    def save(self) -> None:
        path = Path(self.run_dir) / "cluster.json"
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(path)

    @classmethod
    def load(cls, run_dir: Path) -> ClusterState | None:
        path = run_dir / "cluster.json"
        if not path.exists():
            return None
        data = json.loads(path.read_text())
        processes = [ProcessRecord(**p) for p in data.pop("processes")]
        return cls(**data, processes=processes)

    def settings_overrides(self) -> dict[str, Any]:
        """What to pass to `load_settings` so clients talk to this cluster."""
        return {
            "kafka": {
                "bootstrap_servers": self.kafka_bootstrap,
                "client_properties": self.kafka_client_properties,
                "replication_factor": self.kafka_replication_factor,
                "min_insync_replicas": self.kafka_min_insync_replicas,
            },
            "zookeeper": {"hosts": self.zk_hosts},
            "redis": {"url": self.redis_url},
            **self._schema_registry_settings(),
        }

    def _schema_registry_settings(self) -> dict[str, Any]:
        if self.schema_registry_url is None:
            return {}
        return {"schema_registry": {"url": self.schema_registry_url}}

    def env(self) -> dict[str, str]:
        """The same as `MARS_...` variables, for child processes."""
        return {
            "MARS_KAFKA__BOOTSTRAP_SERVERS": self.kafka_bootstrap,
            "MARS_KAFKA__CLIENT_PROPERTIES": json.dumps(self.kafka_client_properties),
            "MARS_KAFKA__REPLICATION_FACTOR": str(self.kafka_replication_factor),
            "MARS_KAFKA__MIN_INSYNC_REPLICAS": str(self.kafka_min_insync_replicas),
            "MARS_ZOOKEEPER__HOSTS": self.zk_hosts,
            "MARS_REDIS__URL": self.redis_url,
            **(
                {"MARS_SCHEMA_REGISTRY__URL": self.schema_registry_url}
                if self.schema_registry_url is not None
                else {}
            ),
        }

    def kafka(self) -> KafkaSettings:
        """The Kafka settings of a client of this cluster."""
        return KafkaSettings(
            bootstrap_servers=self.kafka_bootstrap, client_properties=self.kafka_client_properties
        )


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1].split("/")[0])


class LocalCluster:
    """Real Kafka, ZooKeeper and Redis on free loopback ports under one run folder.

    With `credentials` the cluster is secured: Kafka's client listener takes SASL/PLAIN logins
    of that user and Redis needs the password; `ClusterState.env()` and `settings_overrides()`
    carry them to the clients (`devtools.local.credentials`).

    With `zookeeper_nodes` > 1, ZooKeeper is an ensemble of that many quorum peers
    (`zookeeper-1` ..), each a process record of role `zookeeper`, and `ClusterState.zk_hosts`
    the connect string of all of them; 1 is the standalone server `zookeeper`. Likewise
    `kafka_brokers` > 1 starts that many KRaft nodes (`kafka-1` ..), and the topics Mars creates
    get min(3, brokers) replicas and `min.insync.replicas` 2. With `redis_cluster_masters` (3 or
    more), Redis is a Redis Cluster of that many masters (`redis-1` ..) and
    `ClusterState.redis_url` a `redis+cluster://` URL naming all of them."""

    def __init__(
        self,
        *,
        settings: Settings,
        run_dir: Path | None = None,
        credentials: LocalCredentials | None = None,
        zookeeper_nodes: int = 1,
        kafka_brokers: int = 1,
        redis_cluster_masters: int | None = None,
    ) -> None:
        if zookeeper_nodes < 1 or kafka_brokers < 1:
            raise ValueError(
                f"zookeeper_nodes ({zookeeper_nodes}) and kafka_brokers ({kafka_brokers}) "
                "must be at least 1"
            )
        if redis_cluster_masters is not None and redis_cluster_masters < 3:
            raise ValueError(
                f"a Redis Cluster needs at least 3 masters, not {redis_cluster_masters}"
            )
        self._settings = settings
        self._credentials = credentials
        self._zookeeper_nodes = zookeeper_nodes
        self._kafka_brokers = kafka_brokers
        self._redis_cluster_masters = redis_cluster_masters
        self.run_dir = (run_dir or settings.local.run_dir).resolve()
        self.state: ClusterState | None = ClusterState.load(self.run_dir)
        self._processes_lock = threading.Lock()  # processes may be started from threads

    def up(self, *, fresh: bool = True) -> ClusterState:
        """Start all three servers in parallel; return once each one answers."""
        if self.state is not None and any(p.handle().is_running() for p in self.state.processes):
            raise ServiceError(
                f"a local cluster is already running from {self.run_dir}; `mars local down` first"
            )
        if fresh and self.run_dir.exists():
            shutil.rmtree(self.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        local = self._settings.local
        jobs = {
            "redis": self._start_redis,
            "zookeeper": self._start_zookeeper,
            "kafka": lambda: start_kafka_nodes(
                self.run_dir,
                nodes=self._kafka_brokers,
                jars_dir=local.jars_dir,
                heap_mb=local.kafka_heap_mb,
                timeout_s=local.start_timeout_s,
                credentials=self._credentials,
            ),
        }
        with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
            futures = {role: pool.submit(job) for role, job in jobs.items()}
        started: dict[str, list[ProcessHandle]] = {}
        errors: list[str] = []
        for role, future in futures.items():
            try:
                started[role] = future.result()
            except ServiceError as error:
                errors.append(str(error))
        if errors:
            for handles in started.values():
                for handle in handles:
                    handle.stop()
            raise ServiceError("\n\n".join(errors))
        redis_ports = [h.port("--port") for h in started["redis"]]
        redis_address = (
            redis_url(redis_ports[0], self._credentials)
            if self._redis_cluster_masters is None
            else redis_cluster_url(redis_ports, self._credentials)
        )
        kafka_addresses = [_kafka_listener(h) for h in started["kafka"]]
        records = [
            *(  # each node by its own address: the probe and a restart talk to that node
                _record(h, "redis", address=redis_url(port, self._credentials))
                for h, port in zip(started["redis"], redis_ports, strict=True)
            ),
            *(
                _record(h, "zookeeper", address=f"127.0.0.1:{client_port(h)}")
                for h in started["zookeeper"]
            ),
            *(
                _record(h, "kafka", address=address)
                for h, address in zip(started["kafka"], kafka_addresses, strict=True)
            ),
        ]
        replicas = min(3, self._kafka_brokers)
        self.state = ClusterState(
            run_dir=str(self.run_dir),
            kafka_bootstrap=",".join(kafka_addresses),
            zk_hosts=",".join(str(r.address) for r in records if r.role == "zookeeper"),
            redis_url=redis_address,
            kafka_client_properties=(
                self._credentials.kafka_client_properties() if self._credentials else {}
            ),
            kafka_replication_factor=replicas,
            kafka_min_insync_replicas=min(2, replicas),
            processes=records,
        )
        self.state.save()
        return self.state

    def _start_redis(self) -> list[ProcessHandle]:
        local = self._settings.local
        if self._redis_cluster_masters is None:
            return [
                start_redis(
                    self.run_dir,
                    maxmemory_mb=local.redis_maxmemory_mb,
                    timeout_s=local.start_timeout_s,
                    credentials=self._credentials,
                )
            ]
        return start_redis_cluster(
            self.run_dir,
            masters=self._redis_cluster_masters,
            maxmemory_mb=local.redis_maxmemory_mb,
            timeout_s=local.start_timeout_s,
            credentials=self._credentials,
        )

    def _start_zookeeper(self) -> list[ProcessHandle]:
        local = self._settings.local
        if self._zookeeper_nodes == 1:
            return [
                start_zookeeper(
                    self.run_dir, jars_dir=local.jars_dir, timeout_s=local.start_timeout_s
                )
            ]
        return start_zookeeper_ensemble(
            self.run_dir,
            jars_dir=local.jars_dir,
            nodes=self._zookeeper_nodes,
            timeout_s=local.start_timeout_s,
        )

    def start_spark(self, *, workers: int, cores: int = 1, memory_mb: int = 1024) -> str:
        """Start a Spark standalone master (unless one runs) and `workers` more workers, each
        offering `cores` and `memory_mb`; return the master's URL."""
        assert self.state is not None, "cluster is not up"
        timeout_s = self._settings.local.start_timeout_s
        if self.state.spark_master is None:
            handle, url, ui_port = start_spark_master(self.run_dir, timeout_s=timeout_s)
            self.state.spark_master, self.state.spark_master_ui_port = url, ui_port
            self.add_process(_record(handle, "spark-master", address=f"127.0.0.1:{ui_port}"))
        assert self.state.spark_master is not None and self.state.spark_master_ui_port
        master, master_ui = self.state.spark_master, self.state.spark_master_ui_port
        index = sum(1 for p in self.state.processes if p.role == "spark-worker")

        def start(number: int) -> ProcessHandle:
            return start_spark_worker(
                self.run_dir,
                name=f"spark-worker-{number}",
                master_url=master,
                master_ui_port=master_ui,
                cores=cores,
                memory_mb=memory_mb,
                timeout_s=timeout_s,
            )

        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:  # JVMs start slowly
            handles = list(pool.map(start, range(index, index + workers)))
        for handle in handles:
            ui_port = handle.port("--webui-port")
            self.add_process(_record(handle, "spark-worker", address=f"127.0.0.1:{ui_port}"))
        return master

    def start_schema_registry(self) -> str:
        """Start the schema registry (unless one runs) and return the URL of its
        Confluent-compatible API; Mars processes started afterwards get it as
        `MARS_SCHEMA_REGISTRY__URL` (`devtools.local.schema_registry_server`)."""
        assert self.state is not None, "cluster is not up"
        if self.state.schema_registry_url is None:
            local = self._settings.local
            handle = start_schema_registry(
                self.run_dir,
                jars_dir=local.jars_dir,
                heap_mb=local.schema_registry_heap_mb,
                timeout_s=local.schema_registry_start_timeout_s,
            )
            url = schema_registry_url(registry_port(handle))
            self.state.schema_registry_url = url
            self.add_process(_record(handle, "schema-registry", address=url))
        return self.state.schema_registry_url

    def add_process(self, record: ProcessRecord) -> None:
        """Remember a Mars process (mapper, reducer, api) so `down` stops it too."""
        assert self.state is not None, "cluster is not up"
        with self._processes_lock:
            self.state.processes.append(record)
            self.state.save()

    def remove_process(self, name: str) -> None:
        """Forget a Mars process (after stopping it)."""
        assert self.state is not None, "cluster is not up"
        with self._processes_lock:
            self.state.processes = [p for p in self.state.processes if p.name != name]
            self.state.save()

    def restart(
        self, role: str, *, name: str | None = None, kill: bool = True, down_s: float = 0.0
    ) -> ProcessHandle:
        """Stop a server (`kill`: SIGKILL, a crash; else SIGTERM), wait `down_s`, and start it
        again with the same command line: same ports, same data folder (Redis replays its AOF,
        Kafka and ZooKeeper recover their logs). Returns once it answers its probe again (a
        ZooKeeper ensemble node: once it has rejoined the quorum).

        The process of `role` named `name` (e.g. `zookeeper-2` of an ensemble); without a name,
        the first process of `role`."""
        state = self.state
        assert state is not None, "cluster is not up"
        matching = [
            p for p in state.processes if p.role == role and (name is None or p.name == name)
        ]
        if not matching:
            known = ", ".join(p.name for p in state.processes if p.role == role) or "none"
            raise ServiceError(f"no {role} process named {name!r} to restart (known: {known})")
        record = matching[0]
        old = record.handle()
        if kill:
            old.kill()
        else:
            old.stop()
        time.sleep(down_s)
        return self._start_again(record, state, why="after a restart")

    def revive(self) -> list[str]:
        """Start again every server of this cluster that is not running (one a failed test left
        killed, or one that crashed), each with its old command line; return their names.

        Tests share one cluster: without this, a server one test failed to bring back fails
        every later test with "connection refused" and hides which test broke it."""
        state = self.state
        assert state is not None, "cluster is not up"
        revived = []
        for record in list(state.processes):
            if record.role in SERVER_ROLES and not record.handle().is_running():
                self._start_again(record, state, why="revived")
                revived.append(record.name)
        return revived

    def _start_again(
        self, record: ProcessRecord, state: ClusterState, *, why: str
    ) -> ProcessHandle:
        """Spawn `record`'s command line once its port is free; return once it answers its probe.

        A killed process can hold its listening socket for a moment after SIGKILL on a loaded
        machine, and a server spawned before then fails to bind and exits: so a server that
        exits while starting is spawned again, up to `START_ATTEMPTS` times."""
        timeout_s = self._settings.local.start_timeout_s
        for attempt in range(1, START_ATTEMPTS + 1):
            if record.address is not None:
                wait_port_free(_port(record.address), timeout_s=timeout_s)
            handle = spawn(record.name, record.argv, log=Path(record.log))
            spawned = time.monotonic()
            try:
                wait_until(
                    record.name,
                    lambda: _healthy(record, state),
                    handle=handle,
                    timeout_s=timeout_s,
                    what=f"{record.role} answering on {record.address} {why}",
                )
            except ServiceError:
                timed_out = time.monotonic() - spawned >= timeout_s  # else it exited
                if timed_out or attempt == START_ATTEMPTS:
                    raise
                time.sleep(1.0)
                continue
            record.pid, record.started = handle.pid, handle.started
            state.save()
            return handle
        raise AssertionError("unreachable")

    def down(self) -> list[str]:
        """Stop every process this cluster started, Mars processes first. Returns their names."""
        if self.state is None:
            return []
        order = {
            "api": 0,
            "mapper": 1,
            "reducer": 1,
            "spark-worker": 1,
            "spark-master": 2,
            "schema-registry": 2,
            "kafka": 2,
            "redis": 3,
            "zookeeper": 3,
        }
        stopped = []
        for record in sorted(self.state.processes, key=lambda p: order.get(p.role, 0)):
            record.handle().stop()
            stopped.append(record.name)
        self.state.processes = []
        self.state.spark_master = self.state.spark_master_ui_port = None
        self.state.schema_registry_url = None
        self.state.save()
        return stopped

    def status(self) -> dict[str, Any]:
        """Every process with PID, address and health (a probe, not just 'PID exists')."""
        if self.state is None:
            return {"run_dir": str(self.run_dir), "up": False, "processes": []}
        rows: list[dict[str, Any]] = []
        for record in self.state.processes:
            running = record.handle().is_running()
            rows.append(
                {
                    "name": record.name,
                    "role": record.role,
                    "pid": record.pid,
                    "address": record.address,
                    "log": record.log,
                    "running": running,
                    "healthy": running and _healthy(record, self.state),
                }
            )
            if record.role == "zookeeper" and record.address is not None:
                # leader | follower | standalone; None while it does not serve
                rows[-1]["mode"] = zookeeper_mode(_port(record.address)) if running else None
        return {
            "run_dir": self.state.run_dir,
            "up": bool(rows) and all(r["healthy"] for r in rows),
            "kafka_bootstrap": self.state.kafka_bootstrap,
            "zk_hosts": self.state.zk_hosts,
            "redis_url": self.state.redis_url,
            "spark_master": self.state.spark_master,
            "schema_registry_url": self.state.schema_registry_url,
            "processes": rows,
        }


def _record(handle: ProcessHandle, role: str, *, address: str | None) -> ProcessRecord:
    return ProcessRecord(
        name=handle.name,
        role=role,
        pid=handle.pid,
        started=handle.started,
        argv=list(handle.argv),
        log=str(handle.log),
        address=address,
    )


def _healthy(record: ProcessRecord, state: ClusterState) -> bool:
    if record.address is None:
        return True
    try:
        if record.role == "spark-master":
            return master_status(_port(record.address)).get("status") == "ALIVE"
        if record.role == "schema-registry":
            return probe_schema_registry(record.address)
        if record.role == "redis":
            if state.redis_url != record.address:  # a node of a Redis Cluster
                return probe_redis_cluster_node(record.address)
            return probe_redis(record.address)
        if record.role == "zookeeper":
            return probe_zookeeper(_port(record.address))
        if record.role == "kafka":  # this node: its own listener must answer
            node = state.kafka().model_copy(update={"bootstrap_servers": record.address})
            return probe_kafka(node)
        return port_is_open(_port(record.address))
    except Exception:
        return False


def _kafka_listener(handle: ProcessHandle) -> str:
    """host:port of a node's client listener, from the server.properties it was started with."""
    for line in Path(handle.argv[-1]).read_text().splitlines():
        if line.startswith("listeners="):
            client_listener = line.split("=", 1)[1].split(",")[0]
            return client_listener.split("://", 1)[1]
    raise ServiceError(f"{handle.name}: no listeners in {handle.argv[-1]}")
