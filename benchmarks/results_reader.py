"""Reads a result topic live (read_committed) and notes when each window's rows became readable.

One consumer per reader (`TopicsReader`: one for several topics, with a thread that consumes
and one that parses); it assigns every partition from the beginning and keeps, per window
start, the sum of the count column, the number of rows, the wall time (time.time()) the last
row arrived and the largest Kafka message timestamp. The topic must exist before `start`.
"""

from __future__ import annotations

import dataclasses
import queue
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import msgspec
from confluent_kafka import OFFSET_BEGINNING, Consumer, Message, TopicPartition

from mars.clients import client_config
from mars.config import KafkaSettings

Row = tuple[dict[str, object], int]  # a whole result row and its Kafka message timestamp (ms)

# msgspec, not `json`: 4x faster, and at 300,000 rows the reader's own parsing was seconds
# of the time a run measures until its last row is read (experiment 16)
decode_row = msgspec.json.Decoder(dict[str, object]).decode


def fields_decoder(names: Sequence[str]) -> Callable[[bytes], tuple[object, ...]]:
    """A decoder of a JSON object's `names` fields only, as a tuple in that order (None for a
    field the object lacks). It builds no dict: 289,000 rows in 0.09 s against 0.57 s as dicts."""
    unique = list(dict.fromkeys(names))
    fields = msgspec.defstruct(
        "Fields",
        [(f"f{i}", object, None) for i in range(len(unique))],
        rename={f"f{i}": name for i, name in enumerate(unique)},
    )
    decode = msgspec.json.Decoder(fields).decode
    astuple = msgspec.structs.astuple
    if len(unique) == len(names):
        return lambda value: astuple(decode(value))
    at = [unique.index(name) for name in names]
    return lambda value: tuple(astuple(decode(value))[i] for i in at)


@dataclass(slots=True)
class WindowSeen:
    rows: int = 0
    count: int = 0
    last_arrival_s: float = 0.0
    first_arrival_s: float = 0.0
    max_kafka_ts_ms: int = 0


@dataclass(slots=True)
class ResultReader:
    """Collects rows of `topic`: `count_field` summed per window (`window_field`).

    Only the fields it counts by are decoded (the window, the count, `key_fields` and
    `kept_fields`); a subclass that keeps more of each row gets them in `keep`."""

    kafka: KafkaSettings
    topic: str
    count_field: str
    window_field: str = "window_start"
    key_fields: tuple[str, ...] = ("sip", "type")
    kept_fields: tuple[str, ...] = ()  # decoded after the keys, for `keep`
    windows: dict[int, WindowSeen] = field(default_factory=dict)
    keys_seen: Counter[tuple[object, ...]] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _consumer: TopicsReader | None = None
    _decode: Callable[[bytes], tuple[object, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = (self.window_field, self.count_field, *self.key_fields, *self.kept_fields)
        self._decode = fields_decoder(names)

    def start(self) -> ResultReader:
        """Read `topic` on a thread of its own (a `TopicsReader` of this one topic)."""
        self._consumer = TopicsReader(kafka=self.kafka, readers={self.topic: self}).start()
        return self

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.stop()

    def add_values(self, values: list[bytes], timestamps: list[int], arrival: float) -> None:
        """Result records that arrived together (one consume), each with its Kafka message
        timestamp (ms)."""
        rows = [self._decode(value) for value in values]
        keys_end = 2 + len(self.key_fields)
        with self._lock:
            for row, kafka_ts_ms in zip(rows, timestamps, strict=True):
                start, count = row[0], row[1]
                if not isinstance(start, int) or not isinstance(count, int):
                    continue
                seen = self.windows.get(start)
                if seen is None:
                    seen = self.windows[start] = WindowSeen(first_arrival_s=arrival)
                seen.rows += 1
                seen.count += count
                seen.last_arrival_s = arrival
                seen.max_kafka_ts_ms = max(seen.max_kafka_ts_ms, kafka_ts_ms)
                self.keys_seen[(start, *row[2:keys_end])] += 1
            self.keep(rows, arrival)

    def keep(self, rows: list[tuple[object, ...]], arrival: float) -> None:
        """Rows decoded together, (window, count, *key_fields, *kept_fields) each, counted or
        not; called under the lock. Nothing is kept here."""

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
    """One read_committed consumer over several result topics, each topic's rows collected by
    its own `ResultReader` (`readers`, never started themselves): dozens of tasks read without
    dozens of consumers competing with the pipeline for the CPU. The topics must exist before
    `start`.

    Two threads: one consumes and notes each batch's arrival, the other parses the batches.
    When one thread did both, a burst of rows committed at once (a closing window of 300,000
    groups) was noted as arriving batch after batch, each after the parsing of those before
    it: the last row's arrival came seconds after it was readable, a lag the benchmarks then
    counted as the system's time (experiment 16)."""

    kafka: KafkaSettings
    readers: dict[str, ResultReader]
    _stop: threading.Event = field(default_factory=threading.Event)
    _arrived: queue.SimpleQueue[tuple[list[Message], float] | None] = field(
        default_factory=queue.SimpleQueue
    )
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> TopicsReader:
        consumer = _committed_reader(self.kafka)
        consumer.assign(
            [
                TopicPartition(topic, p, OFFSET_BEGINNING)
                for topic in self.readers
                for p in _ready_partitions(consumer, topic)
            ]
        )
        self._threads = [
            threading.Thread(target=self._consume, args=(consumer,), daemon=True),
            threading.Thread(target=self._parse, daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def _consume(self, consumer: Consumer) -> None:
        try:
            while not self._stop.is_set():
                messages = consumer.consume(num_messages=10_000, timeout=0.05)
                if messages:
                    self._arrived.put((messages, time.time()))
        finally:
            self._arrived.put(None)  # the parser's end
            consumer.close()

    def _parse(self) -> None:
        while (batch := self._arrived.get()) is not None:
            messages, arrival = batch
            arrived: dict[str, tuple[list[bytes], list[int]]] = {}
            for message in messages:
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                values, timestamps = arrived.setdefault(message.topic() or "", ([], []))
                values.append(value)
                timestamps.append(message.timestamp()[1])
            for topic, (values, timestamps) in arrived.items():
                reader = self.readers.get(topic)
                if reader is not None:
                    reader.add_values(values, timestamps, arrival)


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
