"""Apache Kafka in KRaft combined mode (each node broker + controller), from Maven jars.

One node (`start_kafka`), or several (`start_kafka_nodes`): a static controller quorum of all
nodes, every topic replicated to min(3, nodes) by default and `min.insync.replicas` 2, so a
node can die without losing an acknowledged write or stopping transactions.
"""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

from devtools.local.credentials import KAFKA_LISTENER, LocalCredentials
from devtools.local.process_handle import ProcessHandle, ServiceError, free_port, spawn, wait_until
from devtools.local.zookeeper_server import jar_classpath, java_binary
from mars.clients.kafka_config import admin_client, client_config
from mars.config import KafkaSettings

READY_TOPIC = "mars.ready"

_LOG4J2 = """\
status = warn
appender.console.type = Console
appender.console.name = STDOUT
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.state.name = state.change.logger
logger.state.level = WARN
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


@dataclass(frozen=True, slots=True)
class KafkaNode:
    """One node's id and loopback ports."""

    node_id: int
    port: int
    controller_port: int


def _server_properties(
    *,
    node: KafkaNode,
    quorum: Sequence[KafkaNode],
    log_dir: Path,
    credentials: LocalCredentials | None,
) -> str:
    listener = "PLAINTEXT" if credentials is None else KAFKA_LISTENER
    replicas = str(min(3, len(quorum)))
    min_isr = "1" if len(quorum) == 1 else "2"
    if len(quorum) == 1:  # a dynamic quorum of one, formatted `--standalone`
        voters = {"controller.quorum.bootstrap.servers": f"127.0.0.1:{node.controller_port}"}
    else:
        voters = {
            "controller.quorum.voters": ",".join(
                f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in quorum
            )
        }
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        **voters,
        "listeners": (
            f"{listener}://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        ),
        "advertised.listeners": (
            f"{listener}://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}"
        ),
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": listener,
        "listener.security.protocol.map": f"CONTROLLER:PLAINTEXT,{listener}:{listener}",
        "log.dirs": str(log_dir),
        "num.partitions": "4",
        "default.replication.factor": replicas,
        "min.insync.replicas": min_isr,
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": replicas,
        "offsets.topic.num.partitions": "8",
        "transaction.state.log.replication.factor": replicas,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": "8",
        "share.coordinator.state.topic.replication.factor": replicas,
        "share.coordinator.state.topic.min.isr": min_isr,
        "group.initial.rebalance.delay.ms": "0",
        "group.consumer.min.session.timeout.ms": "3000",
        "group.min.session.timeout.ms": "3000",
        # Results stay readable; compaction keeps one record per (task, window, group) key.
        "log.retention.hours": "168",
    }
    # broker.session.timeout.ms stays Kafka's 9 s, although a lone node's controller can fence
    # its own broker after a 20 s stall on an overloaded machine: a restarted node's registration
    # is refused (DUPLICATE_BROKER_REGISTRATION) until its old session runs out, so 60 s made
    # every restart of the broker a minute long (tried 2026-11-27).
    if credentials is not None:
        settings |= {
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            f"listener.name.{listener.lower()}.plain.sasl.jaas.config": (
                credentials.kafka_jaas_config()
            ),
        }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def start_kafka(
    run_dir: Path,
    *,
    jars_dir: Path,
    heap_mb: int,
    port: int | None = None,
    timeout_s: float,
    credentials: LocalCredentials | None = None,
) -> ProcessHandle:
    """Start one node; with `credentials`, its client listener takes SASL/PLAIN logins of
    that one user (`LocalCredentials`)."""
    (handle,) = start_kafka_nodes(
        run_dir,
        nodes=1,
        jars_dir=jars_dir,
        heap_mb=heap_mb,
        ports=[port or free_port()],
        timeout_s=timeout_s,
        credentials=credentials,
    )
    return handle


def start_kafka_nodes(
    run_dir: Path,
    *,
    nodes: int,
    jars_dir: Path,
    heap_mb: int,
    ports: Sequence[int] | None = None,
    timeout_s: float,
    credentials: LocalCredentials | None = None,
) -> list[ProcessHandle]:
    """Start `nodes` nodes of one cluster (folders `kafka/` for one, else `kafka-<id>/`,
    processes named the same); return once the cluster takes a transaction."""
    ports = list(ports or [free_port() for _ in range(nodes)])
    quorum = [KafkaNode(i + 1, ports[i], free_port()) for i in range(nodes)]
    cluster_id = new_cluster_id()
    classpath = jar_classpath(jars_dir, "kafka")
    launches: list[tuple[str, list[str], Path]] = []
    for node in quorum:
        name = "kafka" if nodes == 1 else f"kafka-{node.node_id}"
        home = run_dir / name
        log_dir = home / "data"
        log_dir.mkdir(parents=True, exist_ok=True)
        config = home / "server.properties"
        config.write_text(
            _server_properties(node=node, quorum=quorum, log_dir=log_dir, credentials=credentials)
        )
        log4j = home / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        java = [java_binary(), f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath]
        standalone = ["--standalone"] if nodes == 1 else []
        formatted = subprocess.run(
            [*java, "kafka.tools.StorageTool", "format", *standalone, "-t", cluster_id,
             "-c", str(config)],
            capture_output=True,
            text=True,
            check=False,
        )  # fmt: skip
        if formatted.returncode != 0:
            raise ServiceError(
                f"{name}: formatting the KRaft storage failed:\n"
                f"{formatted.stdout}{formatted.stderr}"
            )
        argv = [
            java[0], f"-Xmx{heap_mb}m", f"-Xms{heap_mb // 2}m", "-XX:+UseG1GC",
            # Pauses beside the broker's log: a stalled broker is a GC or the machine.
            f"-Xlog:gc,safepoint:file={home / 'gc.log'}:time,uptime:filecount=2,filesize=20m",
            "-Djava.awt.headless=true", *java[1:], "kafka.Kafka", str(config),
        ]  # fmt: skip
        launches.append((name, argv, run_dir / "logs" / f"{name}.log"))
    handles = [
        spawn(name, argv, log=log) for name, argv, log in launches
    ]  # a quorum starts together
    kafka = KafkaSettings(
        bootstrap_servers=",".join(f"127.0.0.1:{node.port}" for node in quorum),
        client_properties=credentials.kafka_client_properties() if credentials else {},
    )
    for handle in handles:
        wait_until(
            handle.name,
            lambda: probe_kafka(kafka, brokers=nodes),
            handle=handle,
            timeout_s=timeout_s,
            what=f"metadata with {nodes} broker(s) from {kafka.bootstrap_servers}",
        )
    try:
        round_trip(kafka)
    except KafkaException as error:
        for handle in handles:
            handle.stop()
        raise ServiceError(f"kafka: produce/consume round trip failed: {error}") from error
    return handles


def new_cluster_id() -> str:
    """A random KRaft cluster id (22 base64url characters), never starting with '-': the
    storage tool would read such an id as an option and refuse to format."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def probe_kafka(kafka: KafkaSettings, *, brokers: int = 1) -> bool:
    """The cluster's metadata lists at least `brokers` brokers."""
    # log_level 0: a probe of a broker that is still starting must not spam "connection refused"
    admin = admin_client(kafka, {"socket.timeout.ms": 2000, "log_level": 0})
    metadata = admin.list_topics(timeout=2)
    return len(metadata.brokers) >= brokers


def round_trip(kafka: KafkaSettings, *, timeout_s: float = 60.0) -> None:
    """Transactional produce + read_committed consume: the broker is really usable."""
    admin = admin_client(kafka)
    if READY_TOPIC not in admin.list_topics(timeout=10).topics:
        admin.create_topics([NewTopic(READY_TOPIC, 1)])[READY_TOPIC].result(timeout=30)
    producer = Producer(client_config(kafka, {"transactional.id": "mars-ready-probe"}))
    producer.init_transactions(timeout_s)
    producer.begin_transaction()
    marker = uuid.uuid4().hex.encode()
    producer.produce(READY_TOPIC, value=marker)
    producer.commit_transaction(timeout_s)
    consumer = Consumer(
        client_config(
            kafka,
            {
                "group.id": f"mars-ready-{marker.decode()}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            },
        )
    )
    try:
        consumer.assign([TopicPartition(READY_TOPIC, 0, 0)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None and message.value() == marker:
                return
        raise ServiceError("kafka: the round-trip message was not read back in time")
    finally:
        consumer.close()
