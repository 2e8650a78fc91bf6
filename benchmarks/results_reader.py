"""Reads a result topic live (read_committed) and notes when each window's rows became readable.

One thread per reader (`TopicsReader`: one thread for several topics); it assigns every
partition from the beginning and keeps, per window start, the sum of the count column, the
number of rows, the wall time (time.time()) the last row arrived and the largest Kafka message
timestamp. The topic must exist before `start`.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from mars.clients import client_config
from mars.config import KafkaSettings

# msgspec, not `json`: 4x faster, and at 300,000 rows the reader's own parsing was seconds
# of the time a run measures until its last row is read (experiment 16)
_decode_row = msgspec.json.Decoder(dict[str, object]).decode

Row = tuple[dict[str, object], int]  # a result row and its Kafka message timestamp (ms)


@dataclass(slots=True)
class WindowSeen:
    rows: int = 0
    count: int = 0
    last_arrival_s: float = 0.0
    first_arrival_s: float = 0.0
    max_kafka_ts_ms: int = 0


@dataclass(slots=True)
class ResultReader:
    """Collects rows of `topic`: `count_field` summed per window (`window_field`)."""

    kafka: KafkaSettings
    topic: str
    count_field: str
    window_field: str = "window_start"
    key_fields: tuple[str, ...] = ("sip", "type")
    windows: dict[int, WindowSeen] = field(default_factory=dict)
    keys_seen: Counter[tuple[object, ...]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _consumer: TopicsReader | None = None

    def start(self) -> ResultReader:
        """Read `topic` on a thread of its own (a `TopicsReader` of this one topic)."""
        self._consumer = TopicsReader(kafka=self.kafka, readers={self.topic: self}).start()
        return self

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.stop()

    def add_rows(self, rows: list[Row], arrival: float) -> None:
        """Rows that arrived together (one consume), each with its Kafka message timestamp."""
        with self._lock:
            for row, kafka_ts_ms in rows:
                start = row.get(self.window_field)
                count = row.get(self.count_field)
                if not isinstance(start, int) or not isinstance(count, int):
                    continue
                seen = self.windows.get(start)
                if seen is None:
                    seen = self.windows[start] = WindowSeen(first_arrival_s=arrival)
                seen.rows += 1
                seen.count += count
                seen.last_arrival_s = arrival
                seen.max_kafka_ts_ms = max(seen.max_kafka_ts_ms, kafka_ts_ms)
                self.keys_seen[(start, *map(row.get, self.key_fields))] += 1

    def _counted(self, before_ms: int | None) -> list[WindowSeen]:
        """The windows starting before `before_ms` (all when None)."""
        with self._lock:
            return [
                w for start, w in self.windows.items() if before_ms is None or start < before_ms
            ]

    def total(self, *, before_ms: int | None = None) -> int:
        """Sum of counts over windows starting before `before_ms` (all when None)."""
        return sum(w.count for w in self._counted(before_ms))

    def duplicates(self) -> int:
        with self._lock:
            return sum(n - 1 for n in self.keys_seen.values() if n > 1)

    def snapshot(self) -> dict[int, WindowSeen]:
        with self._lock:
            return {k: dataclasses.replace(v) for k, v in self.windows.items()}

    def wait_total(
        self,
        target: int,
        *,
        before_ms: int | None,
        timeout_s: float,
        alive: Callable[[], bool] = lambda: True,
    ) -> bool:
        """Whether the count reached `target` within `timeout_s` (and while `alive()`: the
        system writing the topic still runs)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.total(before_ms=before_ms) >= target:
                return True
            if not alive():
                return False
            time.sleep(0.05)
        return False

    def completion_time_s(self, *, before_ms: int | None) -> float:
        """Wall time the last counted row arrived."""
        return max((w.last_arrival_s for w in self._counted(before_ms)), default=float("nan"))


@dataclass(slots=True)
class TopicsReader:
    """One read_committed consumer (one thread) over several result topics, each topic's rows
    collected by its own `ResultReader` (`readers`, never started themselves): dozens of tasks
    read without dozens of consumers competing with the pipeline for the CPU. The topics must
    exist before `start`."""

    kafka: KafkaSettings
    readers: dict[str, ResultReader]
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> TopicsReader:
        consumer = _committed_reader(self.kafka)
        consumer.assign(
            [
                TopicPartition(topic, p, OFFSET_BEGINNING)
                for topic in self.readers
                for p in _ready_partitions(consumer, topic)
            ]
        )
        self._thread = threading.Thread(target=self._loop, args=(consumer,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self, consumer: Consumer) -> None:
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=1000, timeout=0.05)
                arrival = time.time()
                arrived: dict[str, list[Row]] = {}
                for message in messages:
                    value = message.value()
                    if message.error() is not None or value is None:
                        continue
                    row = (_decode_row(value), message.timestamp()[1])
                    arrived.setdefault(message.topic() or "", []).append(row)
                for topic, rows in arrived.items():
                    reader = self.readers.get(topic)
                    if reader is not None:
                        reader.add_rows(rows, arrival)
        finally:
            consumer.close()


def _committed_reader(kafka: KafkaSettings) -> Consumer:
    """A consumer of its own group that reads only committed results, with little delay.

    A fetch of a just-created topic can fail with "offset out of range" at offset 0; the
    reset then goes back to the beginning, not to the end (librdkafka's default), which would
    skip results already written and leave the run waiting for them until its timeout."""
    return Consumer(
        client_config(
            kafka,
            {
                "group.id": f"bench-reader-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 10,
                "auto.offset.reset": "earliest",
            },
        )
    )


def _ready_partitions(consumer: Consumer, topic: str, *, timeout_s: float = 30.0) -> list[int]:
    """The topic's partitions once every one has a leader (a just-created topic's metadata
    can list none yet, and assigning none would read nothing forever)."""
    deadline = time.monotonic() + timeout_s
    while True:
        described = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if (
            described is not None
            and described.error is None
            and described.partitions
            and all(p.leader >= 0 for p in described.partitions.values())
        ):
            return sorted(described.partitions)
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no usable partitions after {timeout_s:.0f}s")
        time.sleep(0.2)
