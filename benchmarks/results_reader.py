"""Reads a result topic live (read_committed) and notes when each window's rows became readable.

One consumer per reader (`TopicsReader`: one for several topics, with a thread that consumes
and one that parses); it assigns every partition from the beginning and keeps, per window
start, the sum of the count column, the number of rows and the wall time (time.time()) the
last row became readable: when the partition's committed end was seen past it
(`benchmarks.committed_ends`), or when it was consumed if that came first. The topic must
exist before `start`.

It reads with the mappers' native consumer and decodes a batch in one msgspec call: with
confluent-kafka's consumer (a Python object per message) and a dict per row, a reader of
289,329 result records, all committed, took 1.6 s to read them, and the benchmarks counted that
as the system's time (experiment 16).
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
from typing import Any

import msgspec
import numpy as np
import polars as pl
from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from benchmarks.committed_ends import CommittedEnds
from mars.clients import client_config
from mars.clients.kafka_config import BACKLOG_CONSUMER
from mars.clients.native_consumer import NativeConsumer
from mars.config import KafkaSettings
from mars.engine.joined_values import JoinedValues
from mars.engine.native_json import NativeJsonReader
from mars.engine.records import TopicBatches
from mars.tasks.field_paths import is_path_name

# msgspec, not `json`: 4x faster, and at 300,000 rows the reader's own parsing was seconds
# of the time a run measures until its last row is read (experiment 16)
decode_row = msgspec.json.Decoder(dict[str, object]).decode

Fields = tuple[object, ...]  # a row's fields a reader decodes, in the order it names them


def fields_decoder(names: Sequence[str]) -> Callable[[JoinedValues], list[Fields]]:
    """A decoder of JSON objects' `names` fields only, each object's as a tuple in that order
    (None for a field it lacks); empty values (tombstones) are skipped. It builds no dict, and
    a batch without empty values is one msgspec call: 289,000 rows in 0.09 s against 0.57 s
    as dicts."""
    unique = list(dict.fromkeys(names))
    struct = msgspec.defstruct(
        "Fields",
        [(f"f{i}", object, None) for i in range(len(unique))],
        rename={f"f{i}": name for i, name in enumerate(unique)},
    )
    decode_all = msgspec.json.Decoder(list[struct]).decode  # type: ignore[valid-type]
    decode_one = msgspec.json.Decoder(struct).decode
    astuple = msgspec.structs.astuple
    at = None if len(unique) == len(names) else [unique.index(name) for name in names]

    def decode(values: JoinedValues) -> list[Fields]:
        if not len(values):
            return []
        if _has_empty_value(values):
            rows = [decode_one(value) for value in values if value]
        else:
            rows = decode_all(b"[" + values.joined(b",") + b"]")
        if at is None:
            return [astuple(row) for row in rows]
        return [tuple(astuple(row)[i] for i in at) for row in rows]

    return decode


def fields_columns(names: Sequence[str]) -> Callable[[JoinedValues], pl.DataFrame | None]:
    """A decoder of JSON objects' `names` fields as columns `c0, c1, ...` in that order (a
    column of nulls for a field no object has), read by the mappers' native JSON decoder with
    no Python object per row; None when it declines the batch (an empty value, a value that is
    not plain, a field named as a path, no extension): `fields_decoder` then decodes it.
    289,329 result rows took about 1 CPU s through `fields_decoder` and the loops over its
    tuples, the reader's share of the cores at the close of experiment 16."""
    unique = list(dict.fromkeys(names))
    # A result's field named as a path (`$.a.b`, a nested key's column) is a flat key of the
    # row, which the decoder would read as the path: such readers take rows.
    flat = not any(is_path_name(name) for name in unique)
    reader = NativeJsonReader(unique)
    at = [unique.index(name) for name in names]

    def decode(values: JoinedValues) -> pl.DataFrame | None:
        if not flat or not len(values) or _has_empty_value(values):
            return None
        columns = reader.columns(values)
        if columns is None:
            return None
        return pl.DataFrame([columns.series[unique[i]].alias(f"c{j}") for j, i in enumerate(at)])

    return decode


def _has_empty_value(values: JoinedValues) -> bool:
    """Whether a value of the batch is empty (a tombstone): consecutive ends."""
    return bool((np.diff(values.ends, prepend=-1) == 1).any())


_COUNTED_TYPES = (pl.Int64, pl.Null)  # a window and a count of these types count as in rows


@dataclass(slots=True)
class WindowSeen:
    rows: int = 0
    count: int = 0
    last_arrival_s: float = 0.0
    first_arrival_s: float = 0.0


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
    # (window, *keys) of the counted rows: the rows path's counted as they arrive, the columns
    # path's kept as frames and counted only when asked (`keys_seen`)
    _key_rows: Counter[tuple[object, ...]] = field(default_factory=Counter)
    _key_frames: list[pl.DataFrame] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _consumer: TopicsReader | None = None
    _decode: Callable[[JoinedValues], list[Fields]] = field(init=False, repr=False)
    _columns: Callable[[JoinedValues], pl.DataFrame | None] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = (self.window_field, self.count_field, *self.key_fields, *self.kept_fields)
        self._decode = fields_decoder(names)
        self._columns = fields_columns(names)

    def start(self) -> ResultReader:
        """Read `topic` on a thread of its own (a `TopicsReader` of this one topic)."""
        self._consumer = TopicsReader(kafka=self.kafka, readers={self.topic: self}).start()
        return self

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.stop()

    def add_values(self, values: JoinedValues, arrival: float) -> None:
        """Result records' values that arrived together (one consume): as columns when the
        window and the count are integer columns, else as rows (the same figures)."""
        columns = self._columns(values)
        if columns is not None and all(
            isinstance(columns.get_column(name).dtype, _COUNTED_TYPES) for name in ("c0", "c1")
        ):
            self._add_columns(columns, arrival)
        else:
            self._add_rows(self._decode(values), arrival)

    def _add_columns(self, columns: pl.DataFrame, arrival: float) -> None:
        counted = columns.filter(pl.col("c0").is_not_null() & pl.col("c1").is_not_null())
        per_window = counted.group_by("c0").agg(pl.len(), pl.col("c1").sum())
        names = ["c0", *(f"c{i}" for i in range(2, 2 + len(self.key_fields)))]  # window, keys
        keys = counted.select(names)
        with self._lock:
            for start, rows, count in per_window.iter_rows():
                self._tally(start, rows, count, arrival)
            self._key_frames.append(keys)
            self.keep_columns(columns, arrival)

    def _add_rows(self, rows: list[Fields], arrival: float) -> None:
        keys_end = 2 + len(self.key_fields)
        with self._lock:
            for row in rows:
                start, count = row[0], row[1]
                if not isinstance(start, int) or not isinstance(count, int):
                    continue
                self._tally(start, 1, count, arrival)
                self._key_rows[(start, *row[2:keys_end])] += 1
            self.keep(rows, arrival)

    def _tally(self, start: int, rows: int, count: int, arrival: float) -> None:
        """`rows` rows of window `start` arrived, their counts summing to `count`; under the
        lock. Batches come in the order they were consumed, not always of readable times: a
        later batch's partition may have committed first."""
        seen = self.windows.get(start)
        if seen is None:
            seen = self.windows[start] = WindowSeen(first_arrival_s=arrival)
        seen.rows += rows
        seen.count += count
        seen.first_arrival_s = min(seen.first_arrival_s, arrival)
        seen.last_arrival_s = max(seen.last_arrival_s, arrival)

    def keep(self, rows: list[Fields], arrival: float) -> None:
        """Rows decoded together, (window, count, *key_fields, *kept_fields) each, counted or
        not; called under the lock. Nothing is kept here."""

    def keep_columns(self, columns: pl.DataFrame, arrival: float) -> None:
        """`keep` for rows decoded as columns (`c0, c1, ...` in `keep`'s order); called under
        the lock. Nothing is kept here: a subclass that keeps rows keeps these too."""

    def _counted(self, before_ms: int | None) -> list[WindowSeen]:
        """The windows starting before `before_ms` (all when None)."""
        with self._lock:
            return [
                w for start, w in self.windows.items() if before_ms is None or start < before_ms
            ]

    def total(self, *, before_ms: int | None = None) -> int:
        """Sum of counts over windows starting before `before_ms` (all when None)."""
        return sum(w.count for w in self._counted(before_ms))

    def keys_seen(self) -> Counter[tuple[object, ...]]:
        """How many counted rows each (window, *key_fields) had. The keys of batches decoded
        as columns become tuples only here, once reading is over: made per row as the rows
        arrived (with the rows for a `keep` that kept nothing), they were three quarters of
        the parsing's CPU (80,000 rows of the reference query 0.19 CPU s, now 0.05), which
        the runs measure as the system's: the reader shares its cores."""
        with self._lock:
            seen = Counter(self._key_rows)
            frames = list(self._key_frames)
        for frame in frames:
            seen.update(frame.iter_rows())
        return seen

    def duplicates(self) -> int:
        return sum(n - 1 for n in self.keys_seen().values() if n > 1)

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
        """Wall time the last counted row arrived (became readable, read by a `TopicsReader`)."""
        return max((w.last_arrival_s for w in self._counted(before_ms)), default=float("nan"))


@dataclass(slots=True)
class TopicsReader:
    """One read_committed consumer over several result topics, each topic's rows collected by
    its own `ResultReader` (`readers`, never started themselves): dozens of tasks read without
    dozens of consumers competing with the pipeline for the CPU. The topics must exist before
    `start`.

    Two threads: one consumes and notes when each batch became readable (`_readable`), the
    other parses the batches. When one thread did both, a burst of rows committed at once (a
    closing window of 300,000 groups) was noted as arriving batch after batch, each after the
    parsing of those before it: the last row's arrival came seconds after it was readable, a
    lag the benchmarks then counted as the system's time (experiment 16). The consumer's own
    fetching of such a burst still lagged up to 0.25 s behind its commit; the committed ends,
    polled beside it, take that out too."""

    kafka: KafkaSettings
    readers: dict[str, ResultReader]
    _stop: threading.Event = field(default_factory=threading.Event)
    _arrived: queue.SimpleQueue[tuple[TopicBatches, dict[str, float]] | None] = field(
        default_factory=queue.SimpleQueue
    )
    _threads: list[threading.Thread] = field(default_factory=list)
    _committed: CommittedEnds | None = None

    def start(self) -> TopicsReader:
        config = _committed_reader_config(self.kafka)
        metadata = Consumer(config)
        try:
            partitions = [
                TopicPartition(topic, p, OFFSET_BEGINNING)
                for topic in self.readers
                for p in _ready_partitions(metadata, topic)
            ]
        finally:
            metadata.close()
        consumer = NativeConsumer(config)
        consumer.assign(partitions)
        self._committed = CommittedEnds(
            self.kafka, [(tp.topic, tp.partition) for tp in partitions]
        ).start()
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
        if self._committed is not None:
            self._committed.stop()

    def _consume(self, consumer: NativeConsumer) -> None:
        try:
            while not self._stop.is_set():
                batches = consumer.consume_grouped(10_000, 0.05)
                if batches:
                    self._arrived.put((batches, self._readable(batches, time.time())))
        finally:
            self._arrived.put(None)  # the parser's end
            consumer.close()

    def _readable(self, batches: TopicBatches, consumed: float) -> dict[str, float]:
        """Per topic, when the batch's records were all readable: when the committed end of
        each of its partitions was first seen past the partition's last record, if the poller
        saw that before they were consumed; else when they were consumed."""
        committed = self._committed
        readable: dict[str, float] = {}
        for topic, partitions in batches.items():
            at = 0.0
            for partition, batch in partitions.items():
                seen = None
                if committed is not None and batch.offsets:
                    seen = committed.readable_at((topic, partition), batch.offsets[-1])
                at = max(at, consumed if seen is None else min(seen, consumed))
            readable[topic] = at
        return readable

    def _parse(self) -> None:
        while (arrived := self._arrived.get()) is not None:
            batches, readable = arrived
            for topic, partitions in batches.items():
                reader = self.readers.get(topic)
                if reader is not None:
                    values = [JoinedValues.of(batch.values) for batch in partitions.values()]
                    reader.add_values(JoinedValues.concat(values), readable[topic])


def _committed_reader_config(kafka: KafkaSettings) -> dict[str, Any]:
    """The settings of a consumer of its own group that reads only committed results, with
    little delay.

    A fetch of a just-created topic can fail with "offset out of range" at offset 0; the
    reset then goes back to the beginning, not to the end (librdkafka's default), which would
    skip results already written and leave the run waiting for them until its timeout."""
    return client_config(
        kafka,
        {
            "group.id": f"bench-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.wait.max.ms": 10,
            "auto.offset.reset": "earliest",
            **BACKLOG_CONSUMER,
        },
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
