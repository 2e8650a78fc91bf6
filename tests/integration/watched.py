"""A pipeline to watch: `mars mapper`, `mars reducer` and `mars api` processes started by the
local launcher (so each serves `/metrics` where `mars local status` says), a source topic, and
helpers to scrape and sum Prometheus metrics and to read the API."""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from devtools.gen import GeneratorConfig, generate
from devtools.local import LocalCluster
from devtools.local.http_client import local_http
from devtools.local.process_handle import free_port
from devtools.local.roles import start_role
from mars.clients.kafka_config import IDEMPOTENT_PRODUCER
from tests.integration.pipeline import (
    CLOSING_DELAY_S,
    BackgroundProducer,
    OracleInBackground,
    PipelineProcesses,
    wait_for,
)
from tests.oracle import ExpectedResults

Labels = frozenset[tuple[str, str]]
PAPER_GROUPS = ("sip", "type")  # the reference query (docs/references.md): count per sip, type
PAPER_AGGREGATES: Mapping[str, str] = {"count_star": "count(*)"}


@dataclass(frozen=True, slots=True)
class Scrape:
    """One parsed `/metrics` text: sample name -> labels -> value."""

    samples: Mapping[str, Mapping[Labels, float]]

    @classmethod
    def parse(cls, text: str) -> Scrape:
        """Parse with `prometheus_client.parser` (a malformed text raises)."""
        samples: dict[str, dict[Labels, float]] = defaultdict(dict)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                samples[sample.name][frozenset(sample.labels.items())] = sample.value
        return cls(samples)

    def total(self, name: str, **labels: str) -> float:
        """The sum of `name` over the samples carrying `labels`."""
        wanted = set(labels.items())
        return sum(v for key, v in self.samples.get(name, {}).items() if wanted <= key)

    def values(self, name: str) -> dict[Labels, float]:
        return dict(self.samples.get(name, {}))


def scrape(address: str) -> Scrape:
    response = local_http().get(f"http://{address}/metrics", timeout=10)
    response.raise_for_status()
    assert response.headers["content-type"].startswith("text/plain")
    return Scrape.parse(response.text)


def total(scrapes: list[Scrape], name: str, **labels: str) -> float:
    return sum(s.total(name, **labels) for s in scrapes)


@dataclass
class WatchedPipeline:
    """Mappers, reducers and one API of one ZooKeeper root and consumer group."""

    cluster: LocalCluster
    procs: PipelineProcesses
    api_url: str
    token: str
    registered: list[str] = field(default_factory=list)

    @classmethod
    @contextmanager
    def running(
        cls,
        cluster: LocalCluster,
        *,
        name: str,
        token: str,
        env: Mapping[str, str],
        mappers: int = 0,
        reducers: int = 0,
    ) -> Iterator[WatchedPipeline]:
        """The API (and `mappers`, `reducers`) started side by side; every process stopped
        afterwards."""
        procs = cls.processes(cluster, name=name, env=env)
        try:
            with ThreadPoolExecutor(max_workers=1) as pool:  # (its exit waits for the API)
                api = pool.submit(cls.start_api, procs, token=token)
                procs.start_many(["mapper"] * mappers + ["reducer"] * reducers)
                watched = api.result()
            yield watched
        finally:
            procs.stop_all()

    @classmethod
    def start_api(cls, procs: PipelineProcesses, *, token: str) -> WatchedPipeline:
        """The pipeline of `procs` with its API started among them."""
        port = free_port()
        api_name = f"{procs.name}-api-0"
        procs.handles[api_name] = start_role(
            procs.cluster, "api", name=api_name, extra_env=dict(procs.env), api_port=port
        )
        return cls(
            cluster=procs.cluster, procs=procs, api_url=f"http://127.0.0.1:{port}", token=token
        )

    @staticmethod
    def processes(cluster: LocalCluster, *, name: str, env: Mapping[str, str]) -> PipelineProcesses:
        """No process yet: the pipeline's ZooKeeper root, consumer group and environment."""
        return PipelineProcesses(
            cluster=cluster,
            name=name,
            env={
                "MARS_ZOOKEEPER__ROOT": f"/{name}",
                "MARS_MAPPER__GROUP_ID": f"mappers-{name}",
                **env,
            },
        )

    @property
    def bootstrap(self) -> str:
        assert self.cluster.state is not None
        return self.cluster.state.kafka_bootstrap

    def call(
        self, method: str, path: str, *, body: Any = None, timeout: float = 30
    ) -> httpx.Response:
        """`method` on the API's `path`, with the token; the response, whatever its status."""
        return local_http().request(
            method,
            self.api_url + path,
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=timeout,
        )

    def get(self, path: str) -> Any:
        response = self.call("GET", path)
        response.raise_for_status()
        return response.json()

    def register(self, sql: str, *, task_id: str, options: Mapping[str, Any]) -> dict[str, Any]:
        response = self.call(
            "POST",
            "/tasks",
            body={"sql": sql, "id": task_id, "options": dict(options)},
            timeout=60,
        )
        assert response.status_code == 201, response.text
        self.registered.append(task_id)
        return dict(response.json())

    def targets(self) -> dict[str, list[str]]:
        """Role -> the `/metrics` addresses `GET /metrics/targets` lists."""
        by_role: dict[str, list[str]] = defaultdict(list)
        for entry in self.get("/metrics/targets"):
            by_role[entry["labels"]["role"]].extend(entry["targets"])
        return dict(by_role)

    def logs(self) -> str:
        """Each registered task's units as the API sees them (which one stalled, and where),
        then the processes' last log lines."""
        return "\n".join(
            [*(self._units_seen(task) for task in self.registered), self.procs.logs(40)]
        )

    def _units_seen(self, task: str) -> str:
        try:
            units = self.get(f"/tasks/{task}")["live"]["units"]
        except (httpx.HTTPError, KeyError) as exc:
            return f"--- {task}: units not read ({exc!r})"
        now_ms = time.time_ns() // 1_000_000
        seen = [
            f"{u['bucket']}: owner {u['owner']}, watermark {u['watermark']}, "
            f"{u['results_emitted']} results, published "
            + (
                "never"
                if u["updated_ms"] is None
                else f"{(now_ms - u['updated_ms']) / 1000:.0f} s ago"
            )
            for u in units
        ]
        return f"--- {task} units: " + "; ".join(seen)

    def stop(self) -> None:
        self.procs.stop_all()


def unit_owners(pipeline: WatchedPipeline, task: str) -> set[str]:
    """The member ids of the reducers owning units of `task`."""
    units = pipeline.get(f"/tasks/{task}")["live"]["units"]
    return {unit["owner"] for unit in units if unit["owner"]}


def kill_an_owner(pipeline: WatchedPipeline, task: str) -> str:
    """SIGKILL a reducer owning units of `task`; return its member id."""
    owners = unit_owners(pipeline, task)
    assert owners, "no unit of the task has an owner"
    victim = sorted(owners)[0]
    kill_member(pipeline, victim)
    return victim


def kill_member(pipeline: WatchedPipeline, member_id: str) -> None:
    """SIGKILL the reducer that joined the cluster as `member_id`."""
    pid = pipeline.get("/cluster")["members"][member_id]["pid"]
    pipeline.procs.kill(pipeline.procs.by_pid(pid))


def wait_taken_over(
    pipeline: WatchedPipeline, task: str, victim: str, *, every: Callable[[], None] | None = None
) -> None:
    """Until no unit of `task` is owned by the killed reducer `victim` (60 s at most)."""
    wait_for(
        lambda: victim not in unit_owners(pipeline, task),
        timeout_s=60,
        what="the killed reducer's units taken over",
        logs=pipeline.logs,
        every=every,
    )


def windowed_sql(
    topic: str, group_by: tuple[str, ...], aggregates: Mapping[str, str], windowing: str
) -> str:
    """`SELECT <groups>, <aggregate> AS <name>, ... GROUP BY <groups> WINDOWING <windowing>`."""
    select = ", ".join([*group_by, *(f"{sql} AS {name}" for name, sql in aggregates.items())])
    return f"SELECT {select} FROM {topic} GROUP BY {', '.join(group_by)} WINDOWING {windowing}"


def make_topic(admin: AdminClient, name: str, *, partitions: int) -> str:
    admin.create_topics([NewTopic(name, num_partitions=partitions)])[name].result(timeout=30)
    deadline = time.monotonic() + 30
    while name not in admin.list_topics(timeout=30).topics:
        assert time.monotonic() < deadline, f"topic {name} not listed 30 s after creation"
        time.sleep(0.1)
    return name


def live_producer(
    bootstrap: str, topic: str, *, start_s: int, rate: float, seconds: int, **config: Any
) -> BackgroundProducer:
    """Records whose event times follow the wall clock from `start_s` (now), at `rate` per
    second for `seconds`."""
    generated = GeneratorConfig(
        count=int(rate * seconds), start_s=start_s, span_s=seconds, **config
    )
    producer = BackgroundProducer(bootstrap=bootstrap, topic=topic, config=generated, rate=rate)
    producer.start()
    return producer


def close_every_window(
    bootstrap: str,
    topic: str,
    *,
    after_s: int,
    partitions: int,
    client_properties: Mapping[str, str] | None = None,
) -> None:
    """One generated record per partition `CLOSING_DELAY_S` after `after_s`: every window of the
    stream before it closes (the record's own window stays open). `client_properties`: the
    brokers' `kafka.client_properties` (SASL, ...)."""
    record = json.loads(generate(GeneratorConfig(count=1, seed=1)).values[0])
    record["timestamp"] = after_s + CLOSING_DELAY_S
    producer = Producer(
        {"bootstrap.servers": bootstrap, **(client_properties or {}), **IDEMPOTENT_PRODUCER}
    )
    for partition in range(partitions):
        producer.produce(topic, json.dumps(record).encode(), partition=partition)
    assert producer.flush(30) == 0


@dataclass
class PaperStream:
    """The reference query's live stream (`live_producer`, `seconds` of traffic at `rate` records
    per second from now) with its DuckDB oracle computed meanwhile; `finish` waits for the
    stream, closes every window and returns what the task must emit."""

    bootstrap: str
    topic: str
    rate: int
    seconds: int
    partitions: int
    start_s: int
    producer: BackgroundProducer
    oracle: OracleInBackground

    @classmethod
    @contextmanager
    def running(
        cls,
        bootstrap: str,
        topic: str,
        *,
        rate: int,
        seconds: int,
        partitions: int,
        seed: int,
        window_ms: int = 10_000,
        aggregates: Mapping[str, str] = PAPER_AGGREGATES,
    ) -> Iterator[PaperStream]:
        start_s = int(time.time())
        config = GeneratorConfig(count=rate * seconds, start_s=start_s, span_s=seconds, seed=seed)
        oracle = OracleInBackground(
            config, group_by=list(PAPER_GROUPS), window_ms=window_ms, aggregates=dict(aggregates)
        )
        producer = live_producer(
            bootstrap, topic, start_s=start_s, rate=rate, seconds=seconds, seed=seed
        )
        try:
            yield cls(bootstrap, topic, rate, seconds, partitions, start_s, producer, oracle)
        finally:
            producer.stop()
            oracle.close()

    def wait_produced(self, seconds: float) -> None:
        """Until `seconds` of traffic are out; the stream must still be running then."""
        wait_for(
            lambda: self.producer.produced >= self.rate * seconds or self.producer.done(),
            timeout_s=seconds * 3,
            what=f"{seconds} s of traffic produced",
        )
        assert not self.producer.done(), f"the stream ended before {seconds} s were produced"

    def finish(self, *, timeout_s: float = 120) -> ExpectedResults:
        """Wait for the stream's end, close every window; the oracle's expected results."""
        self.producer.join(timeout_s=self.seconds * 3)
        close_every_window(
            self.bootstrap,
            self.topic,
            after_s=self.start_s + self.seconds,
            partitions=self.partitions,
        )
        return self.oracle.result(timeout_s=timeout_s)[0]
