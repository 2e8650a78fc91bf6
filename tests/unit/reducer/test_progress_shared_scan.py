"""Progress reads of one partition share a scan: the reads that join it before it starts get
their answers from it; a read that comes once it started has a scan of its own. The scans here are
stand-ins (what is tested is who scans for whom, not Kafka: tests/integration/reducer/
test_zombie_and_progress.py reads real partitions)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from mars.config import KafkaSettings
from reducer import progress_reader
from reducer.progress_record import ProgressRecord, partition_for

TOPIC = "mars.progress"
PARTITIONS = 8


def keys_of_one_partition(count: int) -> list[str]:
    keys = (f"task/{bucket}" for bucket in range(1000))
    return [key for key in keys if partition_for(key, PARTITIONS) == 0][:count]


def record(watermark: int) -> bytes:
    return ProgressRecord(
        closed_watermark=watermark, rseqs={0: watermark}, merged={0: 0}
    ).to_bytes()


class StandInScans:
    """`_read` replaced: records which keys each scan was asked for; a scan waits for `go`."""

    def __init__(self, values: dict[str, bytes]) -> None:
        self.values = {key.encode(): value for key, value in values.items()}
        self.asked: list[frozenset[bytes]] = []
        self.started = threading.Semaphore(0)
        self.go = threading.Event()
        self.error: Exception | None = None

    def __call__(
        self,
        kafka: KafkaSettings,
        *,
        topic: str,
        partition: int,
        wanted: frozenset[bytes],
        timeout_s: float,
    ) -> dict[bytes, bytes]:
        self.asked.append(wanted)
        self.started.release()
        assert self.go.wait(10)
        if self.error is not None:
            raise self.error
        return {key: self.values[key] for key in wanted if key in self.values}


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[dict[str, bytes]], StandInScans]]:
    made: list[StandInScans] = []

    def make(values: dict[str, bytes]) -> StandInScans:
        made.append(StandInScans(values))
        monkeypatch.setattr(progress_reader, "_read", made[-1])
        return made[-1]

    yield make
    for scan in made:
        scan.go.set()


class Reads:
    """Reads of keys on threads, and what each got (a record's watermark, None, or the error)."""

    def __init__(self) -> None:
        self.got: dict[str, object] = {}
        self.threads: list[threading.Thread] = []

    def start(self, key: str) -> None:
        def read() -> None:
            try:
                found = progress_reader.read_progress(
                    kafka=KafkaSettings(), topic=TOPIC, key=key, partitions=PARTITIONS, timeout_s=10
                )
                self.got[key] = None if found is None else found.closed_watermark
            except Exception as exc:
                self.got[key] = exc

        self.threads.append(threading.Thread(target=read))
        self.threads[-1].start()

    def join(self) -> dict[str, object]:
        for thread in self.threads:
            thread.join(10)
        return self.got


def waiting_keys() -> int:
    with progress_reader._waiting_lock:
        return sum(len(scan.wanted) for scan in progress_reader._waiting.values())


def wait_for(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@contextlib.contextmanager
def every_slot_taken() -> Iterator[None]:
    """No scan can start meanwhile: the reads started join the scans waiting for a slot."""
    for _ in range(progress_reader.SCANS_AT_ONCE):
        assert progress_reader._scan_slots.acquire(timeout=1)
    try:
        yield
    finally:
        for _ in range(progress_reader.SCANS_AT_ONCE):
            progress_reader._scan_slots.release()


def read_while_slots_taken(keys: list[str], stand_in: StandInScans) -> dict[str, object]:
    """Read `keys` at once while no scan can start (so they all join one), then let it run."""
    reads = Reads()
    with every_slot_taken():
        for key in keys:
            reads.start(key)
        wait_for(lambda: waiting_keys() == len(keys))
    stand_in.go.set()
    return reads.join()


def test_reads_waiting_for_a_slot_share_one_scan(
    scans: Callable[[dict[str, bytes]], StandInScans],
) -> None:
    keys = keys_of_one_partition(5)
    stand_in = scans({key: record(i) for i, key in enumerate(keys[:4])})  # the last: none
    got = read_while_slots_taken(keys, stand_in)
    assert stand_in.asked == [frozenset(key.encode() for key in keys)]
    assert got == {**{key: i for i, key in enumerate(keys[:4])}, keys[4]: None}


def test_a_read_after_the_scan_started_has_a_scan_of_its_own(
    scans: Callable[[dict[str, bytes]], StandInScans],
) -> None:
    first, second = keys_of_one_partition(2)
    stand_in = scans({first: record(1), second: record(2)})
    reads = Reads()
    reads.start(first)
    assert stand_in.started.acquire(timeout=10)  # the scan for `first` has its high watermark
    reads.start(second)
    assert stand_in.started.acquire(timeout=10)  # a scan of its own, beside the first
    stand_in.go.set()
    assert reads.join() == {first: 1, second: 2}
    assert stand_in.asked == [frozenset({first.encode()}), frozenset({second.encode()})]


def test_a_failed_scan_fails_every_read_that_joined_it(
    scans: Callable[[dict[str, bytes]], StandInScans],
) -> None:
    keys = keys_of_one_partition(3)
    stand_in = scans({})
    stand_in.error = progress_reader.ProgressReadTimeoutError("not stable")
    got = read_while_slots_taken(keys, stand_in)
    assert len(stand_in.asked) == 1
    assert all(
        isinstance(error, progress_reader.ProgressReadTimeoutError) for error in got.values()
    )
    assert set(got) == set(keys)
    assert not progress_reader._waiting  # the next read starts a scan of its own
