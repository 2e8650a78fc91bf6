"""Devices with skewed clocks, through the real pipeline, once per watermark mode.

Twelve devices, each the group key of a tumbling 10 s window task, send in their own order
(every device's records in time order) but with clocks up to four minutes behind, and every
third one in bursts after 30 s of buffering, as uploads from a phone do. The source topic is
keyed by device (each device in one partition). The session variant (gap 5 s) has each device
fall silent for 20 s of every minute of its own time, so its sessions close on its own clock
one after another. Per window kind and mode, two mappers and two reducers:

- results and counters exact against the DuckDB oracle of the mode (tests/differential/oracle.py);
- with `watermark = 'key'` no record is late (every device is in order), with the partition
  watermark many are (the oracle says how many, and Mars agrees); so are many with
  `key_groups = 3` (each group's devices in one partition, on one clock);
- a reducer owning the task is SIGKILLed mid-run (after 20 results, 8 sessions, a quarter of
  them with key groups; checkpoints only when a step needs one): nothing is missing or
  emitted twice.

After the stream, one filtered record per partition far in the future moves every partition's
stream time past the last windows, so they close by event time; idle close is kept out of the
run (`idle_timeout` 10 m): the pause around the kill would otherwise close windows by the wall
clock, and the second half's records of them would be late at the reducer (docs/semantics.md,
the reducer's rule), which is not what this test is about.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from confluent_kafka.admin import AdminClient

from tests.differential.cases import AGGREGATES, Case, TaskShape, _key_partition
from tests.differential.compare import problems
from tests.differential.oracle import Expected, expected_of
from tests.differential.run import _stats
from tests.integration.pipeline import TopicReader, produce_in_order
from tests.integration.watched import WatchedPipeline, kill_an_owner, make_topic

pytestmark = pytest.mark.integration

BASE_MS = 1_700_000_000_000
PARTITIONS = 3
DEVICES = 12
MAX_SKEW_MS = 240_000
KEY_LAG_MS = 300_000
KILL_AFTER_ROWS = {"tumbling": 20, "session": 8}  # results out before a reducer is killed
KEY_GROUPS = 3  # the key_groups variant: 12 devices on 3 clocks, each group in one partition
SILENT_MS, EVERY_MS = 20_000, 60_000  # the session variant: each device's quiet spells
SUM_V = next(a for a in AGGREGATES if a.alias == "sv")


def device_stream(
    seed: int = 37, seconds: int = 180, key_groups: int | None = None
) -> tuple[tuple[bytes, ...], ...]:
    """Per partition, the devices' records in arrival order (see the module docstring)."""
    rng = random.Random(seed)
    skews = {f"d{d:02}": rng.randint(0, MAX_SKEW_MS) for d in range(DEVICES)}
    buffered: dict[str, list[bytes]] = {device: [] for device in skews}
    partitions: list[list[bytes]] = [[] for _ in range(PARTITIONS)]
    keys = ("k1",)
    for tick in range(0, seconds * 1000, 500):
        for number, (device, skew) in enumerate(skews.items()):
            if rng.random() < 0.5:
                value = {"ts": BASE_MS + MAX_SKEW_MS + tick - skew, "k1": device}
                value["v"] = rng.randint(0, 100)
                buffered[device].append(json.dumps(value).encode())
            if number % 3 != 0 or tick % 30_000 == 0:  # bursty devices flush every 30 s
                for record in buffered[device]:
                    p = _key_partition(record, keys, PARTITIONS, key_groups)
                    partitions[p].append(record)
                buffered[device].clear()
    closer = json.dumps({"ts": BASE_MS + 10**8, "k1": "closer", "v": -1}).encode()
    return tuple((*records, closer) for records in partitions)


def with_quiet_spells(partitions: tuple[tuple[bytes, ...], ...]) -> tuple[tuple[bytes, ...], ...]:
    """The records outside each device's quiet spells (its own 20 s of every minute, offset
    per device; the closer stays)."""

    def heard(value: bytes) -> bool:
        record = json.loads(value)
        if record["k1"] == "closer":
            return True
        offset = int(record["k1"][1:]) * 5_000
        return (record["ts"] + offset) % EVERY_MS >= SILENT_MS

    return tuple(tuple(v for v in values if heard(v)) for values in partitions)


def case_of(
    key_lag_ms: int | None, window: str = "tumbling", key_groups: int | None = None
) -> Case:
    size_ms = 5_000 if window == "session" else 10_000  # the session gap
    shape = TaskShape(
        keys=("k1",),
        aggregates=(AGGREGATES[0], SUM_V),
        window="session" if window == "session" else "tumbling",
        size_ms=size_ms,
        slide_ms=size_ms,
        grace_ms=1_000,
        unit="ms",
        where="v >= 0",
        key_lag_ms=key_lag_ms,
        key_groups=key_groups,
    )
    partitions = device_stream(key_groups=key_groups)
    if window == "session":
        partitions = with_quiet_spells(partitions)
    return Case(seed=0, shape=shape, partitions=partitions)


@pytest.mark.pipeline(
    mappers=2,
    reducers=2,
    # Checkpoints only when a step must carry one: a recovery then replays everything merged
    # since the last, and a group closed by its key clock after it would come out twice.
    env={"MARS_MAPPER__BATCH_SIZE": "64", "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "600000"},
)
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("key_lag_ms", "key_groups"),
    [(None, None), (KEY_LAG_MS, None), (KEY_LAG_MS, KEY_GROUPS)],
    ids=["partition", "key", "key_groups"],
)
@pytest.mark.parametrize("window", ["tumbling", "session"])
def test_skewed_devices_are_exact_per_mode_through_a_reducer_kill(
    pipeline: WatchedPipeline,
    kafka_admin: AdminClient,
    unique_name: str,
    key_lag_ms: int | None,
    key_groups: int | None,
    window: str,
) -> None:
    case = case_of(key_lag_ms, window, key_groups)
    expected = expected_of(case)
    if key_lag_ms is None:
        assert expected.late > case.records // 5  # the lagging devices' records
    elif key_groups is None:
        assert expected.late == 0  # every device is in order
    else:  # a device shares its group's clock with the faster devices of its group
        assert expected.late > 0
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    produce_half(pipeline, topic, case, second=False)
    task = f"{unique_name}t"
    body = pipeline.register(
        case.task_sql(topic), task_id=task, options={"idle_timeout": "10 m", "buckets": 2}
    )
    output = body["topics"]["output"]
    reader = TopicReader(pipeline.bootstrap, [output])
    try:
        deadline = time.monotonic() + 120
        # key_groups: fewer results (14 sessions in all); a quarter of them is mid-run
        kill_after = KILL_AFTER_ROWS[window] if key_groups is None else len(expected.rows) // 4
        while len(reader.values(output)) < kill_after:
            assert time.monotonic() < deadline, "no result before the kill\n" + pipeline.logs()
            reader.poll_for(0.5)
        kill_an_owner(pipeline, task)
        produce_half(pipeline, topic, case, second=True)
        found = problems_when_done(pipeline, reader, task, case, expected)
    finally:
        reader.close()
    assert found == [], "\n".join(found[:20]) + "\n" + pipeline.logs()


def produce_half(pipeline: WatchedPipeline, topic: str, case: Case, *, second: bool) -> None:
    """The first (or second) half of each partition's records, in order."""
    produce_in_order(
        pipeline.bootstrap,
        topic,
        (
            (p, v)
            for p, values in enumerate(case.partitions)
            for v in (values[len(values) // 2 :] if second else values[: len(values) // 2])
        ),
    )


def problems_when_done(
    pipeline: WatchedPipeline, reader: TopicReader, task: str, case: Case, expected: Expected
) -> list[str]:
    """Once every record is in and the expected rows are out (or 180 s passed), what differs
    from the oracle (`tests.differential.compare.problems`)."""
    output = reader.topics[0]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        reader.poll_for(0.5)
        stats = _stats(pipeline, task)
        if stats.get("records_in", 0) >= case.records and len(reader.values(output)) >= len(
            expected.rows
        ):
            break
    reader.poll_for(3.0)  # anything beyond the expected rows shows now
    return problems(case, expected, reader.values(output), _stats(pipeline, task))
