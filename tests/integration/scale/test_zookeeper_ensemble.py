"""A 3-node ZooKeeper ensemble loses its quorum leader mid-run (docs/deployment.md).

The module starts only a ZooKeeper ensemble of three quorum peers (`start_zookeeper_ensemble`,
what `mars local up --zookeeper-nodes 3` starts) beside the session's Kafka and Redis. `mars
api`, one `mars mapper` and two `mars reducer` processes reach ZooKeeper only through the
connect string of the three nodes (`MARS_ZOOKEEPER__HOSTS`).

The reference query (docs/references.md), with 10 s windows, runs over live traffic: 1,500
records/s for 35 s on two partitions. 15 s of traffic in, while the producer is still
sending, the node that is the quorum leader is killed with SIGKILL. The node killed is always
the quorum leader, whichever node the reducer leader's session is connected to (kazoo picks a
random host of the connect string); the test prints whether the two were the same. Killing the
quorum leader is the harder case anyway: until the two survivors have elected a new leader no
node serves, so every Mars session is disconnected, and those of the killed node must move to
another node. A few seconds later the node is started again and must rejoin as a follower. Then
every window is closed and each (window, sip, type) must be emitted exactly once with the DuckDB
oracle's count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

from devtools.local import ClusterState, LocalCluster
from devtools.local.process_handle import ProcessHandle
from devtools.local.zookeeper_server import (
    client_port,
    respawn_zookeeper,
    session_ids,
    start_zookeeper_ensemble,
    zookeeper_mode,
)
from mars.config import Settings, load_settings
from mars.registry.paths import ZkPaths
from tests.integration.pipeline import BackgroundProducer, ExpectedTopic, wait_exact, wait_for
from tests.integration.watched import (
    PAPER_AGGREGATES,
    PAPER_GROUPS,
    PaperStream,
    WatchedPipeline,
    make_topic,
)

pytestmark = pytest.mark.integration

NODES = 3
RATE = 1_500
PRODUCE_S = 35
KILL_AFTER_S = 15  # of produced traffic
DOWN_S = 3  # how long the killed node stays down
PARTITIONS = 2
SEED = 17
WINDOW_MS = 10_000
SQL = (
    "SELECT sip, type, timestamp, count(*) FROM {topic} "
    "GROUP BY sip, type, timestamp WINDOWING 10 s"
)


@dataclass
class Ensemble:
    """The ensemble's nodes by name (`zookeeper-1` ..), as started and restarted."""

    nodes: dict[str, ProcessHandle]
    timeout_s: float

    @property
    def hosts(self) -> str:
        return ",".join(f"127.0.0.1:{self.port(name)}" for name in self.nodes)

    def port(self, name: str) -> int:
        return client_port(self.nodes[name])

    def modes(self) -> dict[str, str | None]:
        return {name: zookeeper_mode(self.port(name)) for name in self.nodes}

    def leader(self) -> str:
        leaders = [name for name, mode in self.modes().items() if mode == "leader"]
        assert len(leaders) == 1, f"not one quorum leader: {self.modes()}"
        return leaders[0]

    def serving_with_one_leader(self, names: list[str]) -> bool:
        modes = [self.modes()[name] for name in names]
        return modes.count("leader") == 1 and modes.count("follower") == len(names) - 1

    def session_owner(self, session_id: int) -> str | None:
        """The node the client session `session_id` is connected to."""
        for name in self.nodes:
            if session_id in session_ids(self.port(name)):
                return name
        return None

    def all_sessions(self) -> set[int]:
        return set().union(*(session_ids(self.port(name)) for name in self.nodes))

    def kill(self, name: str) -> None:
        self.nodes[name].kill()

    def start_again(self, name: str) -> None:
        self.nodes[name] = respawn_zookeeper(self.nodes[name], timeout_s=self.timeout_s)

    def stop(self) -> None:
        for handle in self.nodes.values():
            handle.stop()


@pytest.fixture(scope="module")
def ensemble(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ensemble]:
    local = load_settings().local
    started = time.monotonic()
    handles = start_zookeeper_ensemble(
        tmp_path_factory.mktemp("zookeeper-ensemble"),
        jars_dir=local.jars_dir,
        nodes=NODES,
        timeout_s=local.start_timeout_s,
    )
    nodes = Ensemble(nodes={h.name: h for h in handles}, timeout_s=local.start_timeout_s)
    print(f"\n{NODES} ZooKeeper nodes serving in {time.monotonic() - started:.1f} s")
    try:
        yield nodes
    finally:
        nodes.stop()


@pytest.mark.timeout(240)
def test_killing_the_quorum_leader_mid_stream_keeps_every_window_exact(
    ensemble: Ensemble,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    settings: Settings,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    assert sorted(ensemble.nodes) == ["zookeeper-1", "zookeeper-2", "zookeeper-3"]
    assert ensemble.serving_with_one_leader(list(ensemble.nodes)), ensemble.modes()
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    with WatchedPipeline.running(
        local_cluster,
        name=unique_name,
        token=settings.api.token,
        env={"MARS_ZOOKEEPER__HOSTS": ensemble.hosts},
        mappers=1,
        reducers=2,
    ) as pipeline:
        body = pipeline.register(SQL.format(topic=topic), task_id=unique_name, options={})
        output = body["topics"]["output"]
        with PaperStream.running(
            cluster.kafka_bootstrap,
            topic,
            rate=RATE,
            seconds=PRODUCE_S,
            partitions=PARTITIONS,
            seed=SEED,
            window_ms=WINDOW_MS,
        ) as stream:
            wait_for(
                lambda: _reducers_settled(pipeline),
                timeout_s=30,
                what="two reducers, one of them the leader",
                logs=pipeline.logs,
            )
            stream.wait_produced(KILL_AFTER_S)
            _kill_the_quorum_leader_and_restart_it(ensemble, pipeline, unique_name, stream.producer)
            expected = stream.finish()
        expectation = ExpectedTopic(output, expected, PAPER_GROUPS, tuple(PAPER_AGGREGATES))
        waited = wait_exact(cluster.kafka_bootstrap, [expectation], logs=pipeline.logs)
        windows = len({key[0] for key in expected})
        print(
            f"exact: {len(expected)} results in {windows} windows, the last {waited:.1f} s "
            "after every window was closed"
        )


def _reducers_settled(pipeline: WatchedPipeline) -> bool:
    view = pipeline.get("/cluster")
    return len(view["members"]) == 2 and view["leader"] in view["members"]


def _kill_the_quorum_leader_and_restart_it(
    ensemble: Ensemble, pipeline: WatchedPipeline, root: str, producer: BackgroundProducer
) -> None:
    leader = ensemble.leader()
    reducer_leader = pipeline.get("/cluster")["leader"]
    zk = KazooClient(hosts=ensemble.hosts, timeout=10)
    zk.start(timeout=15)
    try:
        stat = zk.exists(ZkPaths(root=f"/{root}").reducer(reducer_leader))
        assert stat is not None, f"no membership node of the reducer leader {reducer_leader}"
        reducer_session = stat.ephemeralOwner
    finally:
        zk.stop()
        zk.close()
    on_node = ensemble.session_owner(reducer_session) or "no node (reconnecting)"
    sessions = ensemble.all_sessions()  # the Mars processes' sessions (ours is closed)

    assert not producer.done(), "the producer finished before the kill"
    produced_at_kill = producer.produced
    assert 0 < produced_at_kill < RATE * PRODUCE_S
    ensemble.kill(leader)  # SIGKILL
    killed_at = time.monotonic()
    survivors = [name for name in ensemble.nodes if name != leader]
    elected = wait_for(
        lambda: ensemble.serving_with_one_leader(survivors),
        timeout_s=30,
        what=f"a new quorum leader among {survivors}",
        every=lambda: time.sleep(0.05),
    )
    time.sleep(max(0.0, DOWN_S - (time.monotonic() - killed_at)))
    restarted = time.monotonic()
    ensemble.start_again(leader)
    rejoined = time.monotonic() - restarted
    modes = ensemble.modes()
    assert modes[leader] == "follower", modes
    assert ensemble.serving_with_one_leader(list(ensemble.nodes)), modes

    def sessions_back() -> bool:
        return sessions <= ensemble.all_sessions()

    try:
        back = f"in {wait_for(sessions_back, timeout_s=15, what='the sessions'):.1f} s"
    except AssertionError:
        back = f"not all within 15 s ({len(sessions & ensemble.all_sessions())} back)"
    print(
        f"\nkilled the quorum leader {leader} after {produced_at_kill} of {RATE * PRODUCE_S} "
        f"records; the reducer leader's session was on {on_node} "
        f"({'the same node' if on_node == leader else 'another node'}); a new quorum leader "
        f"{ensemble.leader()} served {elected:.1f} s after the kill; {leader} started again "
        f"after {DOWN_S} s rejoined as a follower in {rejoined:.1f} s; the {len(sessions)} Mars "
        f"sessions were all connected again {back}"
    )
