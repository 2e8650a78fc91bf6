"""docker-compose.yml run for real: the compose topology (Kafka, ZooKeeper, Redis, the schema
registry, 2 mappers, 2 reducers, the API) in podman containers built from a local Debian base
(docker-compose.podman.yml, scripts/compose_images.sh), reached only through the ports it
publishes on 127.0.0.1.

The reference query (docs/references.md) is registered through the API's published port;
`mars gen` on the host produces into topic S through Kafka's host listener; one reducer's
container is killed (`podman kill`) while the stream is produced; the results, read with
read_committed, must hold every (window, sip, type) exactly once with the DuckDB oracle's
count. The project is torn down (containers, network, volumes) also when the test fails.

`make test-compose` runs it (it sets MARS_COMPOSE_TESTS=1; `make test` leaves it out).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from cli.demo_command import PAPER_SQL, SOURCE_TOPIC
from devtools.gen import GeneratorConfig, generate
from mars.config import PROJECT_ROOT
from tests.compose.cluster import ComposeProject, HostPorts, running
from tests.integration.pipeline import ExpectedTopic, wait_exact, wait_for
from tests.integration.watched import PAPER_GROUPS, close_every_window
from tests.oracle import expected_results

# Below the kernel's ephemeral range (32768-60999), where the suite's own servers take theirs.
PORTS = HostPorts(kafka=19092, zookeeper=12181, redis=16379, schema_registry=18081, api=18640)
PROJECT = "mars-compose-test"
TOKEN = "change-me-please"  # docker-compose.yml's MARS_API__TOKEN
PARTITIONS = 4  # create-topics' partitions of S
COUNT = 60_000
RATE = 2_000  # records/s: 30 s of traffic
SPAN_S = 300  # five 60 s windows of event time
SEED = 39
KILL_AFTER_S = 10

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def project() -> Iterator[ComposeProject]:
    with running(ComposeProject(PROJECT, PORTS), timeout_s=420) as up:
        yield up
    assert up.leftovers() == []


@pytest.mark.timeout(900)
def test_the_compose_cluster_computes_exactly_with_a_reducer_killed(
    project: ComposeProject,
) -> None:
    print(f"compose up: {project.timings}")
    bootstrap = f"127.0.0.1:{PORTS.kafka}"
    task = _register(PAPER_SQL)
    alias = task["spec"]["aggregates"][0]["alias"]
    start_s = int(time.time())
    config = GeneratorConfig(count=COUNT, seed=SEED, start_s=start_s, span_s=SPAN_S)
    gen = subprocess.Popen(
        [str(PROJECT_ROOT / ".venv/bin/mars"), "gen", "--topic", SOURCE_TOPIC,
         "--count", str(COUNT), "--rate", str(RATE), "--seed", str(SEED),
         "--start", str(start_s), "--span", str(SPAN_S)],
        env={**os.environ, "MARS_KAFKA__BOOTSTRAP_SERVERS": bootstrap},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    time.sleep(KILL_AFTER_S)
    assert gen.poll() is None, "mars gen ended before the reducer was killed"
    cluster = _cluster()
    assert len(cluster["mappers"]) == 2, cluster["mappers"]
    hosts = {info["host"]: info.get("units") or 0 for info in cluster["members"].values()}
    assert hosts.keys() == {"reducer-1", "reducer-2"} and hosts["reducer-1"] > 0, hosts
    project.kill("reducer-1")
    out, _ = gen.communicate(timeout=COUNT / RATE * 5)
    assert gen.returncode == 0, out
    print(out.strip(), f"; reducer-1 after the kill: {dict(project.state('reducer-1'))}")
    close_every_window(bootstrap, SOURCE_TOPIC, after_s=start_s + SPAN_S, partitions=PARTITIONS)
    expected = expected_results(
        generate(config).values,
        group_by=list(PAPER_GROUPS),
        window_ms=60_000,
        aggregates={alias: "count(*)"},
    )
    assert len(expected) > 0
    output = task["topics"]["output"]
    waited = wait_exact(
        bootstrap,
        [ExpectedTopic(output, expected, PAPER_GROUPS, (alias,))],
        logs=project.logs,
        timeout_s=300,
    )
    print(f"{len(expected)} (window, sip, type) rows exact, {waited:.0f} s after the stream")
    wait_for(  # the killed one's session expired: reducer-2 alone merged what was left
        lambda: [m["host"] for m in _cluster()["members"].values()] == ["reducer-2"],
        timeout_s=60,
        what="reducer-1 gone from the reducers",
    )


def _cluster() -> dict[str, Any]:
    cluster: dict[str, Any] = httpx.get(
        f"http://127.0.0.1:{PORTS.api}/cluster",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    ).json()
    return cluster


def _register(sql: str) -> dict[str, Any]:
    base = f"http://127.0.0.1:{PORTS.api}"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
        created = client.post("/tasks", json={"id": "paper", "sql": sql})
        assert created.status_code == 201, created.text
        task: dict[str, Any] = client.get("/tasks/paper").json()
    return task
