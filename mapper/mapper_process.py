"""The `mars mapper` process: build the clients, serve `/metrics`, register in ZooKeeper (the
node holds the status, `mapper.status_publisher`), run the loop.

SIGTERM / SIGINT set the stop event: the loop finishes the batch in hand (written to Redis),
commits its Kafka offsets and leaves the consumer group, so the partitions move to the other
mappers at once instead of after the session timeout. A SIGKILL is safe too (Redis holds the
applied offsets), it only costs the group's session timeout and a re-read.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import socket
import threading
import uuid
from collections.abc import Mapping
from types import FrameType
from typing import Any

from confluent_kafka import Consumer
from kazoo.client import KazooClient
from prometheus_client import CollectorRegistry

from mapper.consumer_loop import LoopParts, MapperLoop, wall_clock_ms
from mapper.rewind_reader import RewindReader
from mapper.status_publisher import ZkStatusPublisher
from mapper.task_router import TaskRouter
from mars.clients import admin_client, client_config, connect_redis
from mars.clients.kafka_config import BACKLOG_CONSUMER
from mars.clients.native_consumer import NativeConsumer, SourceConsumer
from mars.config import Settings
from mars.engine import Preaggregator
from mars.formats.schema_registry import SchemaRegistryClient
from mars.heap import keep_freed_heap
from mars.metrics_server import serve_metrics
from mars.native import native_available
from mars.registry import TaskRecord, TaskRegistry
from mars.registry.mapper_status import MapperStatus
from mars.side_topics import SideTopicProducer
from mars.store import SeqStore

log = logging.getLogger(__name__)


def consumer_config(settings: Settings, *, member_id: str) -> dict[str, Any]:
    """The source consumer: manual commits, eager assignment (whole batches between
    rebalances), committed transactions only; members hear of a rebalance within a quarter
    second, and a partition that moved is fetched at once (docs/mapper.md, "When partitions
    move")."""
    return client_config(
        settings.kafka,
        {
            "group.id": settings.mapper.group_id,
            "client.id": member_id,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "roundrobin",
            "isolation.level": "read_committed",
            "session.timeout.ms": 6000,
            # Members hear of a rebalance (a mapper joined, a task added a topic) at their
            # next heartbeat: until then the partitions stay where they are.
            "heartbeat.interval.ms": 250,
            "max.poll.interval.ms": 300_000,
            # librdkafka has one fetch in flight per broker: one waiting at the partitions'
            # ends holds back the first fetch of a partition just assigned or sought for as
            # long as this (librdkafka's 500 ms stalled a mapper 0.36-0.57 s per rebalance).
            "fetch.wait.max.ms": settings.mapper.batch_timeout_ms,
            "enable.partition.eof": False,
            **BACKLOG_CONSUMER,
        },
    )


def source_consumer(settings: Settings, *, member_id: str) -> SourceConsumer:
    """`mapper.consumer`: the native batch consumer when asked for and built, else
    confluent-kafka's (same group, same semantics; docs/mapper.md, "The consumer")."""
    config = consumer_config(settings, member_id=member_id)
    if settings.mapper.consumer == "native":
        if native_available():
            return NativeConsumer(config)
        log.warning("mapper.consumer = native, but mars_native is not built: using confluent")
    return Consumer(config)


def install_signal_handlers(stop: threading.Event) -> None:
    def handle(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: finishing the batch, then leaving the group", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handle)
    signal.signal(signal.SIGINT, handle)


def run_mapper(settings: Settings, *, stop: threading.Event | None = None) -> int:
    """Run one mapper until `stop` is set (or a signal arrives). Returns the exit code."""
    keep_freed_heap()  # before the clients' threads start allocating
    stop = stop or threading.Event()
    member_id = f"mapper-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    zk = KazooClient(hosts=settings.zookeeper.hosts, timeout=settings.zookeeper.session_timeout_s)
    zk.start(timeout=30)
    redis_client = connect_redis(settings.redis)
    side = SideTopicProducer.connect(settings.kafka)
    consumer = source_consumer(settings, member_id=member_id)
    schemas = (
        SchemaRegistryClient(settings.schema_registry.url) if settings.schema_registry.url else None
    )
    router = TaskRouter(compile_task=functools.partial(Preaggregator.for_spec, schemas=schemas))
    metrics_registry = CollectorRegistry()
    metrics = serve_metrics(metrics_registry, settings.metrics, role="mapper", member_id=member_id)
    watch = None
    try:
        registry = TaskRegistry(zk, root=settings.zookeeper.root)
        status = ZkStatusPublisher(zk, f"{registry.paths.mappers}/{member_id}")
        status.register(
            MapperStatus(
                member_id=member_id,
                metrics=metrics.address,
                updated_ms=wall_clock_ms(),
                partitions=[],
                backlog={},
            )
        )
        # Rewinds' re-reads run beside the loop (mapper.rewind_reader, docs/rewind.md).
        rewinds = RewindReader(
            settings=settings, store=SeqStore(redis_client), clock_ms=wall_clock_ms, stop=stop
        )

        def on_tasks(records: Mapping[str, TaskRecord]) -> None:
            router.on_tasks(records)
            rewinds.on_tasks(records)

        watch = registry.watch(on_tasks)
        rewinds.start()
        loop = MapperLoop(
            settings=settings,
            parts=LoopParts(
                consumer=consumer,
                admin=admin_client(settings.kafka),
                store=SeqStore(redis_client),
                router=router,
                side_records=side,
                clock_ms=wall_clock_ms,
                member_id=member_id,
                metrics_registry=metrics_registry,
                metrics_address=metrics.address,
                publish_status=status.publish,
            ),
            stop=stop,
        )
        log.info(
            "mapper %s started (group %s, %s consumer, metrics on %s)",
            member_id,
            settings.mapper.group_id,
            "native" if isinstance(consumer, NativeConsumer) else "confluent",
            metrics.address,
        )
        loop.run()
    finally:
        metrics.close()
        if watch is not None:
            watch.stop()
        side.close()
        redis_client.close()
        zk.stop()
        zk.close()
    log.info("mapper %s stopped", member_id)
    return 0
