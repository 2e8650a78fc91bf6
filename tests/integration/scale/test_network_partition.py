"""The reducer leader cut off from the network mid-run, longer than its ZooKeeper session, then
healed: exactly-once beyond one machine (docs/deployment.md, "A network partition"; [Mars]'s
accuracy experiment cut nodes off mid-run too).

The leader runs in a group of its own (`nogroup`, through `setpriv`), so one firewall rule drops
every packet it sends (`iptables -I OUTPUT -m owner --gid-owner ... -j DROP`): ZooKeeper, Kafka,
Redis, all of it, as if its host's link went down, while the process keeps running and believes
it still owns its units. The rest of the cluster (two reducers, a mapper) must notice the
session expire, elect a new leader and take the units over from their checkpoints, fencing the
cut-off owners' transactional producers. Once the link is back, whatever the zombie had in
flight must not survive: every (window, sip, type) comes exactly once with the DuckDB oracle's
count.

Why a group rule and not `ip netns`: the servers listen on 127.0.0.1 of the root namespace and
Kafka advertises that address, so a process in a namespace of its own could not reach them
without rewriting addresses; dropping the process's own packets cuts it off just as hard.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState
from mars.tasks.topics import PROGRESS_TOPIC
from tests.integration.pipeline import ExpectedTopic, TopicReader, wait_exact, wait_for
from tests.integration.watched import (
    PAPER_AGGREGATES,
    PAPER_GROUPS,
    PaperStream,
    WatchedPipeline,
    make_topic,
    windowed_sql,
)

pytestmark = pytest.mark.integration

CUT_OFF_GROUP = "nogroup"
SESSION_TIMEOUT_S = 6
CUT_S = SESSION_TIMEOUT_S + 8  # longer than the session: it expires while the zombie runs
RATE = 1_500
PRODUCE_S = 45
CUT_AFTER_S = 12  # of produced traffic
PARTITIONS = 2
SEED = 29


class Firewall:
    """One iptables rule dropping every packet a group's processes send."""

    def __init__(self, group: str) -> None:
        self._rule = ["OUTPUT", "-m", "owner", "--gid-owner", group, "-j", "DROP"]
        self.cut = False

    def cut_off(self) -> None:
        subprocess.run(["iptables", "-w", "-I", *self._rule], check=True)
        self.cut = True

    def heal(self) -> None:
        if self.cut:
            subprocess.run(["iptables", "-w", "-D", *self._rule], check=True)
            self.cut = False


@pytest.fixture
def firewall() -> Iterator[Firewall]:
    wall = Firewall(CUT_OFF_GROUP)
    try:
        yield wall
    finally:
        wall.heal()


@pytest.mark.pipeline(
    mappers=1,
    env={
        "MARS_ZOOKEEPER__SESSION_TIMEOUT_S": str(SESSION_TIMEOUT_S),
        "MARS_REDUCER__CHECKPOINT_INTERVAL_MS": "1000",
    },
)
@pytest.mark.timeout(300)
def test_a_cut_off_leader_is_replaced_and_its_zombie_output_never_lands(
    pipeline: WatchedPipeline,
    firewall: Firewall,
    cluster: ClusterState,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    sql = windowed_sql(topic, PAPER_GROUPS, PAPER_AGGREGATES, "10 s")
    body = pipeline.register(sql, task_id=unique_name, options={"buckets": 6})
    output = body["topics"]["output"]
    zombie = pipeline.procs.start("reducer", group=CUT_OFF_GROUP)  # first: it leads
    zombie_id = _member_of(pipeline, zombie)
    wait_for(
        lambda: pipeline.get("/cluster")["leader"] == zombie_id,
        timeout_s=30,
        what="the first reducer leading",
        logs=pipeline.logs,
    )
    pipeline.procs.start_many(["reducer", "reducer"])
    wait_for(
        lambda: len(_owners(pipeline)) == 3,
        timeout_s=30,
        what="units on all three reducers",
        logs=pipeline.logs,
    )
    with PaperStream.running(
        cluster.kafka_bootstrap,
        topic,
        rate=RATE,
        seconds=PRODUCE_S,
        partitions=PARTITIONS,
        seed=SEED,
    ) as stream:
        try:
            stream.wait_produced(CUT_AFTER_S)
            firewall.cut_off()
            cut_at, cut_ms = time.monotonic(), int(time.time() * 1000)
            took_over = wait_for(
                lambda: _new_leader_without(pipeline, zombie_id),
                timeout_s=CUT_S,
                what="a new leader and the zombie's units owned by the others",
                logs=pipeline.logs,
            )
            time.sleep(max(0.0, CUT_S - (time.monotonic() - cut_at)))
            assert not stream.producer.done(), "the stream ended while the leader was cut off"
        finally:
            firewall.heal()
        heal_ms = int(time.time() * 1000)
        print(f"\nnew leader and units handed over {took_over:.1f} s into a {CUT_S} s cut")
        expected = stream.finish()
    expectation = ExpectedTopic(output, expected, PAPER_GROUPS, tuple(PAPER_AGGREGATES))
    wait_exact(cluster.kafka_bootstrap, [expectation], logs=pipeline.logs)
    _check_no_zombie_commit_after_takeover(
        cluster, unique_name, zombie_id, cut_ms=cut_ms, heal_ms=heal_ms
    )
    zombie_log = Path(pipeline.procs.handles[zombie].log).read_text(errors="replace")
    assert "ZooKeeper connection suspended; owners stop" in zombie_log, zombie_log[-3000:]
    print(f"zombie fenced by a newer owner: {'fenced by a newer owner' in zombie_log}")


def _check_no_zombie_commit_after_takeover(
    cluster: ClusterState, task: str, zombie_id: str, *, cut_ms: int, heal_ms: int
) -> None:
    """In the committed progress records of each of the task's units (one per transaction,
    read_committed), none the zombie made before the link came back (`committed_ms` is
    stamped when the record is made) follows the first one a new owner committed after the
    cut: whatever it had in flight was aborted or fenced, never committed. (Once healed, it
    rejoins as a new member and may own units again: those records come after `heal_ms`.)"""
    reader = TopicReader(cluster.kafka_bootstrap, [PROGRESS_TOPIC])
    try:
        reader.poll_for(3.0)
        by_unit: dict[str, list[dict[str, Any]]] = {}
        for key, value in reader.records[PROGRESS_TOPIC]:
            unit = (key or b"").decode()
            if unit.startswith(f"{task}/") and value:
                by_unit.setdefault(unit, []).append(json.loads(value))
    finally:
        reader.close()
    zombie_units = [
        u for u, records in by_unit.items() if any(r["owner"] == zombie_id for r in records)
    ]
    assert zombie_units, f"the zombie never committed for {task}: nothing to check"
    for unit in zombie_units:
        records = by_unit[unit]
        takeover = next(
            (
                i
                for i, r in enumerate(records)
                if r["owner"] != zombie_id and r["committed_ms"] >= cut_ms
            ),
            None,
        )
        assert takeover is not None, f"{unit}: no new owner committed after the cut"
        stale = [
            r for r in records[takeover:] if r["owner"] == zombie_id and r["committed_ms"] < heal_ms
        ]
        assert not stale, f"{unit}: the zombie's output landed after the takeover: {stale}"


def _member_of(pipeline: WatchedPipeline, process: str) -> str:
    pid = pipeline.procs.handles[process].pid
    found: list[str] = []

    def joined() -> bool:
        members = pipeline.get("/cluster")["members"]
        found[:] = [m for m, info in members.items() if info["pid"] == pid]
        return bool(found)

    wait_for(joined, timeout_s=30, what=f"{process} in the membership", logs=pipeline.logs)
    return found[0]


def _owners(pipeline: WatchedPipeline) -> set[str]:
    assignment = pipeline.get("/cluster")["assignment"] or {}
    return set(assignment.get("units", {}).values())


def _new_leader_without(pipeline: WatchedPipeline, zombie_id: str) -> bool:
    view = pipeline.get("/cluster")
    owners = _owners(pipeline)
    return view["leader"] not in (None, zombie_id) and bool(owners) and zombie_id not in owners
