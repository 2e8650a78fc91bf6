"""`CommittedEnds`: when each partition's committed end passed each offset, polled from the
broker, so a result reader can say when its rows became readable rather than when it got
round to reading them.

A read_committed consumer sees a transaction's records only once it commits, and then all of
them at once: a closing window of 289,329 groups is 145,000 records a reducer, committed
together. The harness's reader (`benchmarks.results_reader`) consumed the last of such a burst
0.16-0.25 s after the poller below saw it committed (experiment 16; 0.31-0.36 s for ten tasks'
closes in experiment 11), and noting each batch's arrival as it was consumed counted that as
the system's time. The committed end of a partition, its last stable offset (ListOffsets with
read_committed isolation), moves when a transaction commits, and a record is readable from the
moment the end passes its offset.

The poller asks for every partition's end every `POLL_S` in one ListOffsets request
(`mars.clients.end_offsets`, as the mappers ask whether they caught up) and notes the wall time
each answer came back: never earlier than the move it shows, at most `POLL_S` plus the
request's time later.
"""

from __future__ import annotations

import bisect
import threading
import time
from dataclasses import dataclass, field

from mars.clients.end_offsets import EndOffsetQuery, PartitionKey
from mars.clients.kafka_config import admin_client
from mars.config import KafkaSettings

POLL_S = 0.05  # every 10 ms cost the broker and poller 0.1-0.3 CPU s a second (40 partitions)
REQUEST_TIMEOUT_S = 5.0


@dataclass(slots=True)
class _EndMoves:
    """One partition's committed ends as polled, each with the wall time first seen."""

    ends: list[int] = field(default_factory=list)
    seen_s: list[float] = field(default_factory=list)

    def note(self, end: int, at: float) -> None:
        if not self.ends or end > self.ends[-1]:
            self.ends.append(end)
            self.seen_s.append(at)

    def passed(self, offset: int) -> float | None:
        """The wall time the end was first seen past `offset`; None if not yet."""
        i = bisect.bisect_right(self.ends, offset)
        return self.seen_s[i] if i < len(self.ends) else None


@dataclass(slots=True)
class CommittedEnds:
    """Polls the committed ends of `partitions` on a thread of its own until `stop`."""

    kafka: KafkaSettings
    partitions: list[PartitionKey]
    _moves: dict[PartitionKey, _EndMoves] = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __post_init__(self) -> None:
        self._moves = {partition: _EndMoves() for partition in self.partitions}

    def start(self) -> CommittedEnds:
        self._thread = threading.Thread(target=self._poll, name="committed-ends", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def readable_at(self, partition: PartitionKey, offset: int) -> float | None:
        """When the record at `offset` of `partition` was first seen committed (None: not yet
        seen, or a partition not polled)."""
        with self._lock:
            moves = self._moves.get(partition)
            return None if moves is None else moves.passed(offset)

    def _poll(self) -> None:
        query = EndOffsetQuery(lambda: admin_client(self.kafka), timeout_s=REQUEST_TIMEOUT_S)
        while not self._stop.wait(POLL_S):
            ends = query.ends(self.partitions)
            if ends is None:
                continue  # a broker busy or restarting: the next poll asks again
            at = time.time()
            with self._lock:
                for partition, end in ends.items():
                    self._moves[partition].note(end, at)
