"""An output producer waiting on the broker's acks sleeps; it does not spin.

For an idempotent producer, librdkafka sets its broker thread's next wakeup to now when a
partition's batch is ready, and then allows the partition `5 - (messages in flight)` new
requests: with 5 messages in flight and a ready batch, the thread polls without waiting until an
ack comes, a core for as long as the broker is slow (docs/reducer.md, "Output producers").
`IDEMPOTENT_PRODUCER` allows 4 requests in flight per connection, so requests of one message
each (a trickle) cannot reach 5 in flight: the fifth waits unsent, and librdkafka's
backpressure stops the partition's serve before it sets that wakeup.

The broker is frozen (SIGSTOP: its sockets take the bytes, nothing answers) while a
`TransactionalOutput`'s transaction has one partition and records are produced one linger
apart, each a request of its own; then the producer's librdkafka threads' CPU is read while it
waits. With 5 per connection they took a core for the whole wait.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient

from benchmarks.procstat import thread_cpu_seconds
from devtools.local import ClusterState
from mars.config import Settings
from reducer.output import OutRecord, TransactionalOutput
from tests.integration.pipeline import TopicReader, wait_for
from tests.integration.watched import make_topic

pytestmark = pytest.mark.integration

REQUESTS = 8  # more than librdkafka lets be in flight per partition (5)
WAIT_S = 3.0  # the broker frozen with them in flight
MAX_CPU_S = 0.5  # of librdkafka's threads in that wait; spinning took about WAIT_S


def _librdkafka_threads() -> dict[int, float]:
    """This process's librdkafka threads (`rdk:*`): thread id -> CPU seconds."""
    return thread_cpu_seconds(os.getpid(), name_prefix="rdk:")


def test_a_transaction_waiting_on_a_frozen_broker_does_not_spin(
    cluster: ClusterState, settings: Settings, kafka_admin: AdminClient, unique_name: str
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_out", partitions=1)
    broker = next(p for p in cluster.processes if p.role == "kafka")
    others = set(_librdkafka_threads())
    output = TransactionalOutput(
        kafka=settings.kafka, transactional_id=f"{unique_name}-txn", transaction_timeout_ms=60_000
    )
    output.start()
    threads = set(_librdkafka_threads()) - others  # this producer's
    spent: list[float] = []

    def cpu() -> float:
        now = _librdkafka_threads()
        return sum(now.get(thread, 0.0) for thread in threads)

    def records() -> Iterator[OutRecord]:
        yield OutRecord(topic, b"k0", b"0")
        time.sleep(1.0)  # the partition added to the transaction, the first request acked
        os.kill(broker.pid, signal.SIGSTOP)
        try:
            for i in range(1, REQUESTS + 1):
                yield OutRecord(topic, f"k{i}".encode(), str(i).encode())
                time.sleep(0.02)  # past linger.ms (5): a request of its own
            before = cpu()
            time.sleep(WAIT_S)
            spent.append(cpu() - before)
        finally:
            os.kill(broker.pid, signal.SIGCONT)

    try:
        output.commit(records())
    finally:
        output.close()
    assert spent[0] < MAX_CPU_S, (
        f"the producer's librdkafka threads used {spent[0]:.2f} CPU s of {WAIT_S} s "
        "waiting on a frozen broker"
    )
    reader = TopicReader(cluster.kafka_bootstrap, [topic])
    try:

        def all_read() -> bool:
            reader.poll_for(0.5)
            return len(reader.records[topic]) == REQUESTS + 1

        wait_for(
            all_read,
            timeout_s=60,
            what="every record of the transaction, committed after the broker came back",
        )
    finally:
        reader.close()
