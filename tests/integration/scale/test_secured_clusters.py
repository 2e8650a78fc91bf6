"""Secured clusters (docs/deployment.md): a Kafka broker whose client listener takes only SASL/PLAIN
logins and a Redis with `requirepass`, started by `LocalCluster(credentials=...)` for this
module alone (the session's open cluster is not used).

- The reference query (docs/references.md) runs end to end through them with real processes
  configured only by `MARS_...` variables: `mars api`, `mars task add`, `mars gen`, `mars
  mapper`, `mars reducer`; every window exact against the DuckDB oracle, the malformed records
  in the dead-letter topic (the side-topic producer authenticates too), the counters moved by
  the Lua scripts readable through a `decode_responses` client (`SeqStore` rebuilds it with the
  password).
- Wrong credentials stop `mars mapper` and `mars gen` within seconds with an error naming
  `kafka.client_properties` / `redis.url`, never the password, instead of retrying for ever.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from confluent_kafka.admin import NewTopic

from devtools.gen import GeneratorConfig, generate
from devtools.local import ClusterState, LocalCluster
from devtools.local.credentials import LocalCredentials
from devtools.local.process_handle import free_port
from devtools.local.roles import start_role
from mars.clients import admin_client
from mars.config import load_settings
from mars.store import SeqStore
from tests.integration.pipeline import TopicReader, check_exact, wait_for
from tests.integration.watched import close_every_window
from tests.oracle import expected_results

pytestmark = pytest.mark.integration

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# Characters that need quoting in a URL.
CREDENTIALS = LocalCredentials(username="mars", password="s3cret:p@ss/w0rd%")
WRONG_PASSWORD = "not-the-password"
PARTITIONS = 2
START_S = 1_700_000_000
GEN = GeneratorConfig(
    count=20_000, seed=17, start_s=START_S, span_s=600, sip_cardinality=30, malformed_ratio=0.002
)
PAPER_SQL = (
    "SELECT sip, type, timestamp, count(*) FROM {topic} "
    "GROUP BY sip, type, timestamp WINDOWING 60 s"
)
REFUSAL_TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    settings = load_settings(local={"kafka_heap_mb": 512})
    cluster = LocalCluster(
        settings=settings,
        run_dir=tmp_path_factory.mktemp("mars-secured"),
        credentials=CREDENTIALS,
    )
    cluster.up()
    try:
        yield cluster
    finally:
        cluster.down()


def mars(
    state: ClusterState, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[str]:
    """`mars <args>` with the cluster's variables (credentials included) plus `env`."""
    return subprocess.Popen(
        [sys.executable, "-m", "cli.main", *args],
        env={**os.environ, **state.env(), **(env or {})},
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_mars(state: ClusterState, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    process = mars(state, *args, env=env)
    output, _ = process.communicate(timeout=120)
    return process.returncode, output


@pytest.mark.timeout(240)
def test_the_papers_task_runs_exactly_through_sasl_kafka_and_redis_with_a_password(
    secured: LocalCluster,
) -> None:
    state = secured.state
    assert state is not None
    topic, task_id, zk_root = "paper_src", "paper", "/secured"
    admin = admin_client(state.kafka())
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
    env = {"MARS_ZOOKEEPER__ROOT": zk_root, "MARS_API__PORT": str(free_port())}
    started = [
        start_role(secured, "api", extra_env=env),
        start_role(secured, "reducer", extra_env=env),
        start_role(secured, "mapper", extra_env=env),
    ]
    spec_output = f"mars.results.{task_id}"
    reader: TopicReader | None = None
    try:
        api = f"http://127.0.0.1:{env['MARS_API__PORT']}"
        code, output = run_mars(
            state, "task", "add", PAPER_SQL.format(topic=topic), "--id", task_id, "--api", api,
            env=env,
        )  # fmt: skip
        assert code == 0, output
        code, output = run_mars(
            state, "gen", "--topic", topic, "--count", str(GEN.count), "--seed", str(GEN.seed),
            "--start", str(START_S), "--span", str(GEN.span_s),
            "--sip-cardinality", str(GEN.sip_cardinality), "--malformed", str(GEN.malformed_ratio),
        )  # fmt: skip
        assert code == 0, output
        close_every_window(
            state.kafka_bootstrap,
            topic,
            after_s=START_S + GEN.span_s,
            partitions=PARTITIONS,
            client_properties=state.kafka_client_properties,
        )
        batch = generate(GEN)
        expected = expected_results(
            batch.values,
            group_by=["sip", "type"],
            window_ms=60_000,
            aggregates={"count_star": "count(*)"},
        )
        dead_letters = f"mars.dlq.{task_id}"
        reader = TopicReader(
            state.kafka_bootstrap,
            [spec_output, dead_letters],
            client_properties=state.kafka_client_properties,
        )
        wait_for(
            lambda: len(reader.values(spec_output)) >= len(expected),
            timeout_s=120,
            what="every window of the paper's task",
            logs=lambda: "\n".join(h.log.read_text()[-2000:] for h in started),
            every=lambda: reader.poll_for(1.0),
        )
        reader.poll_for(2.0)  # a duplicate would show up now
        check_exact(reader.values(spec_output), expected, ("sip", "type"), ("count_star",))
        assert len(reader.records[dead_letters]) == len(batch.malformed) > 0

        # The counters are written by the mappers' Lua script; read them through a client with
        # str replies and the `user:password` form of the URL: SeqStore keeps the password.
        port = state.redis_url.rsplit(":", 1)[1].split("/")[0]
        user_form = state.redis_url.replace("redis://:", "redis://default:")
        assert user_form.endswith(f"@127.0.0.1:{port}/0")
        store = SeqStore(redis.Redis.from_url(user_form, decode_responses=True))
        counters = store.counters.read(task_id)
        assert counters["records_in"] == GEN.count + PARTITIONS
        assert counters.get("bad", 0) == len(batch.malformed)
    finally:
        if reader is not None:
            reader.close()
        for handle in started:
            handle.stop(timeout_s=20)


def wrong_kafka_password(state: ClusterState) -> dict[str, str]:
    properties = {**state.kafka_client_properties, "sasl.password": WRONG_PASSWORD}
    return {"MARS_KAFKA__CLIENT_PROPERTIES": json.dumps(properties)}


@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("command", "wrong", "setting"),
    [
        (("mapper",), "kafka", "kafka.client_properties (MARS_KAFKA__CLIENT_PROPERTIES"),
        (("gen", "--topic", "refused", "--count", "10"), "kafka", "kafka.client_properties"),
        (("mapper",), "redis", "redis.url (MARS_REDIS__URL)"),
        (("reducer",), "redis", "redis.url (MARS_REDIS__URL)"),
    ],
)
def test_wrong_credentials_stop_a_process_with_the_settings_name(
    secured: LocalCluster, command: tuple[str, ...], wrong: str, setting: str
) -> None:
    state = secured.state
    assert state is not None
    if wrong == "kafka":
        env, secret = wrong_kafka_password(state), WRONG_PASSWORD
    else:
        address = state.redis_url.split("@", 1)[1]
        env, secret = {"MARS_REDIS__URL": f"redis://:{WRONG_PASSWORD}@{address}"}, WRONG_PASSWORD
    env["MARS_ZOOKEEPER__ROOT"] = "/refused"
    started = time.monotonic()
    process = mars(state, *command, env=env)
    try:
        output, _ = process.communicate(timeout=REFUSAL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
        pytest.fail(f"mars {command[0]} still running after {REFUSAL_TIMEOUT_S} s:\n{output}")
    elapsed = time.monotonic() - started
    assert process.returncode == 2, output
    assert setting in output, output
    assert "refused the credentials" in output, output
    assert secret not in output and CREDENTIALS.password not in output
    print(f"\nmars {' '.join(command)} with a wrong {wrong} password: exit 2 in {elapsed:.1f} s")
