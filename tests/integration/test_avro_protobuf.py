"""Avro and Protobuf input through the real pipeline (two mappers, one reducer, processes),
exact against DuckDB, with a mapper SIGKILLed mid-stream.

Three variants in one pipeline, `registry` per format and `schema_file` for Avro:
- `registry`: Confluent-framed records whose writer schema evolves mid-stream, registered
  under `<topic>-value` in the live schema registry (fixture `schema_registry_url`): v1, then
  v2 adds `app` (with a default), then v3 removes `bytes`. A field a record's writer schema
  lacks is NULL, so `sum(bytes)` skips v3 records and `count(app)` counts only v2/v3 ones. One
  record names a schema id the registry does not know, one has corrupt bytes: both are in the
  dead-letter topic with their reasons.
- `schema_file`: bare payloads of the v1 schema read through the task's `schema_file`; one
  record has corrupt bytes. It reads no registry.

The first part of the stream is read, a mapper is SIGKILLed and a replacement started, then the
rest is produced; a record per partition far past the data closes the data windows.

A second test freezes the registry while the mapper meets a schema it has not fetched: the
records are delayed, counted once, and none is dead-lettered (docs/semantics.md, "Input
formats").
"""

from __future__ import annotations

import io
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import fastavro
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from devtools.local import ClusterState, LocalCluster
from mars.config import Settings
from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.formats.schema_registry import SchemaRegistryClient
from mars.formats.wire import frame
from mars.side_topics import REASON_HEADER
from tests.duckdb_rows import insert_rows
from tests.integration.pipeline import TopicReader, wait_for
from tests.integration.watched import WatchedPipeline, make_topic

pytestmark = pytest.mark.integration

PARTITIONS = 2
SQL = (
    "SELECT sip, type, count(*) AS n, sum(bytes) AS total, count(app) AS apps "
    "FROM {topic} GROUP BY sip, type WINDOWING 1 s"
)
RECORDS_PER_VERSION = 400
START_MS = 1_700_000_000_000
UNKNOWN_ID = 987_654
REJOIN_S = 10
CLOSER_MS = START_MS + 60_000
CORRUPT = b"\xff" * 11  # a varint longer than any: no schema decodes it

_AVRO_V1 = {
    "type": "record",
    "name": "Flow",
    "fields": [
        {"name": "ts", "type": "long"},
        {"name": "sip", "type": "string"},
        {"name": "type", "type": "string"},
        {"name": "bytes", "type": "long"},
    ],
}
_AVRO_V2 = {
    **_AVRO_V1,
    "fields": [*_AVRO_V1["fields"], {"name": "app", "type": "string", "default": "web"}],
}
_AVRO_V3 = {**_AVRO_V2, "fields": [f for f in _AVRO_V2["fields"] if f["name"] != "bytes"]}
_PROTO_V1 = (
    'syntax = "proto3";\nmessage Flow {\n  int64 ts = 1;\n  string sip = 2;\n'
    "  string type = 3;\n  int64 bytes = 4;\n}\n"
)
_PROTO_V2 = _PROTO_V1.replace("  int64 bytes = 4;\n", "  int64 bytes = 4;\n  string app = 5;\n")
_PROTO_V3 = _PROTO_V2.replace("  int64 bytes = 4;\n", '  reserved 4;\n  reserved "bytes";\n')
SCHEMAS = {
    "avro": [json.dumps(s) for s in (_AVRO_V1, _AVRO_V2, _AVRO_V3)],
    "protobuf": [_PROTO_V1, _PROTO_V2, _PROTO_V3],
}
_FIELDS = [("sip", "bytes", "type"), ("sip", "bytes", "type", "app"), ("sip", "type", "app")]


def _payload(input_format: str, schema: str, record: dict[str, Any]) -> bytes:
    if input_format == "avro":
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, fastavro.parse_schema(json.loads(schema)), record)
        return buffer.getvalue()
    message_type = message_class(message_at(compile_proto(schema), (0,)))
    return bytes(message_type(**record).SerializeToString())


def _record(version: int, index: int) -> dict[str, Any]:
    full = {
        "ts": START_MS + index * 7,
        "sip": f"10.0.0.{index % 5}",
        "type": ("dns", "http")[index % 2],
        "bytes": 40 + index % 97,
        "app": ("qq", "web", "mail")[index % 3],
    }
    return {k: v for k, v in full.items() if k == "ts" or k in _FIELDS[version]}


# (records sent, their encoded batches, bad record -> reason, one closer per partition)
Stream = tuple[list[dict[str, Any]], list[list[bytes]], dict[bytes, str], list[bytes]]


# The schema-file mode once (its Protobuf streams run through the pipeline in the differential
# test). The three variants share one pipeline and one mapper kill: each costs a minute of make
# test on a pipeline of its own.
VARIANTS = (("avro", "registry"), ("protobuf", "registry"), ("avro", "schema_file"))


@dataclass(frozen=True, slots=True)
class Variant:
    """One format and mode: its topic, task and stream."""

    input_format: str
    mode: str
    topic: str
    task: str
    options: dict[str, Any]
    stream: Stream

    @property
    def name(self) -> str:
        return f"{self.input_format}/{self.mode}"


@pytest.mark.timeout(480)
def test_avro_and_protobuf_are_exact_through_a_mapper_killed_mid_stream(
    schema_registry_url: str,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    settings: Settings,
    kafka_admin: AdminClient,
    unique_name: str,
    tmp_path: Path,
) -> None:
    variants = [
        _variant(f, mode, f"{unique_name}{i}", kafka_admin, schema_registry_url, tmp_path)
        for i, (f, mode) in enumerate(VARIANTS)
    ]
    env = {"MARS_MAPPER__BATCH_SIZE": "50", "MARS_SCHEMA_REGISTRY__URL": schema_registry_url}
    with WatchedPipeline.running(
        local_cluster, name=unique_name, token=settings.api.token, env=env, mappers=2, reducers=1
    ) as pipeline:
        outputs = {
            v.name: pipeline.register(SQL.format(topic=v.topic), task_id=v.task, options=v.options)[
                "topics"
            ]["output"]
            for v in variants
        }
        producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})
        for number in range(max(len(v.stream[1]) for v in variants)):
            for v in variants:
                batches, bad = v.stream[1], v.stream[2]
                for index, value in enumerate(batches[number] if number < len(batches) else []):
                    producer.produce(v.topic, value, partition=index % PARTITIONS)
                for index, value in enumerate(bad if number == 0 else []):
                    producer.produce(v.topic, value, partition=index % PARTITIONS)
            producer.flush(30)
            if number == 0:
                time.sleep(3)  # the mappers are reading: kill one mid-stream
                pipeline.procs.kill(pipeline.procs.alive("mapper")[0])
                pipeline.procs.start("mapper")  # a replacement joins the group
                time.sleep(REJOIN_S)  # the rest of the stream is read after the rebalance
        for v in variants:
            for partition, value in enumerate(v.stream[3]):
                producer.produce(v.topic, value, partition=partition)
        producer.flush(30)
        expected = {v.name: _expected(v.stream[0]) for v in variants}
        dead_letters = {v.name: f"mars.dlq.{v.task}" for v in variants}
        reader = TopicReader(cluster.kafka_bootstrap, [*outputs.values(), *dead_letters.values()])

        def done(v: Variant) -> bool:
            return len(reader.values(outputs[v.name])) >= len(expected[v.name]) and len(
                reader.records[dead_letters[v.name]]
            ) >= len(v.stream[2])

        try:
            wait_for(
                lambda: all(done(v) for v in variants),
                timeout_s=180,
                what="every variant's windows' results and bad records",
                logs=lambda: (
                    ", ".join(
                        f"{v.name}: {len(reader.values(outputs[v.name]))} results, "
                        f"{len(reader.records[dead_letters[v.name]])} dead letters"
                        for v in variants
                    )
                    + f"\n{pipeline.logs()}"
                ),
                every=lambda: reader.poll_for(0.5),
            )
            reader.poll_for(3.0)
            results = {
                v.name: [r for r in reader.values(outputs[v.name]) if r["window_start"] < CLOSER_MS]
                for v in variants
            }
        finally:
            reader.close()
        reasons = {
            v.name: _reasons(cluster.kafka_bootstrap, dead_letters[v.name]) for v in variants
        }

    for v in variants:
        _check(v.name, results[v.name], expected[v.name], v.stream[2], reasons[v.name])


# Past the registry client's 10 s timeout twice: the mapper's retries meet the outage.
OUTAGE_S = 25


@pytest.mark.timeout(360)
def test_a_registry_outage_delays_records_and_dead_letters_none(
    schema_registry_url: str,
    local_cluster: LocalCluster,
    cluster: ClusterState,
    settings: Settings,
    kafka_admin: AdminClient,
    unique_name: str,
) -> None:
    """The registry frozen (SIGSTOP: connections are accepted, nothing answers) while the only
    mapper meets a writer schema it has not fetched: it retries the batch until the registry
    answers again, and every record is counted once; none is dead-lettered."""
    topic = make_topic(kafka_admin, f"{unique_name}_src", partitions=PARTITIONS)
    client = SchemaRegistryClient(schema_registry_url)
    ids = [client.register(f"{topic}-value", text, "AVRO") for text in SCHEMAS["avro"][:2]]
    client.close()
    v1 = [_record(0, i) for i in range(RECORDS_PER_VERSION)]
    v2 = [_record(1, RECORDS_PER_VERSION + i) for i in range(RECORDS_PER_VERSION)]

    def framed(version: int, records: list[dict[str, Any]]) -> list[bytes]:
        schema = SCHEMAS["avro"][version]
        return [frame(ids[version], _payload("avro", schema, r)) for r in records]

    registry = next(p for p in cluster.processes if p.role == "schema-registry")
    task = f"{unique_name}t"
    options = {"event_time": "ts", "event_time_format": "epoch_ms", "format": "avro"}
    options["idle_timeout"] = "120 s"  # longer than the outage: no idle close meanwhile
    env = {"MARS_MAPPER__BATCH_SIZE": "50", "MARS_SCHEMA_REGISTRY__URL": schema_registry_url}
    with WatchedPipeline.running(
        local_cluster, name=unique_name, token=settings.api.token, env=env, mappers=1, reducers=1
    ) as pipeline:
        output = pipeline.register(SQL.format(topic=topic), task_id=task, options=options)[
            "topics"
        ]["output"]
        producer = Producer({"bootstrap.servers": cluster.kafka_bootstrap})

        def produce(values: list[bytes]) -> None:
            for index, value in enumerate(values):
                producer.produce(topic, value, partition=index % PARTITIONS)
            producer.flush(30)

        produce(framed(0, v1))
        time.sleep(3)  # the mapper reads v1 with the registry up
        os.kill(registry.pid, signal.SIGSTOP)
        try:
            produce(framed(1, v2))  # v2's schema: not fetched yet
            time.sleep(OUTAGE_S)
        finally:
            os.kill(registry.pid, signal.SIGCONT)
        produce(framed(1, _closers(1)))
        expected = _expected(v1 + v2)
        dead_letters = f"mars.dlq.{task}"
        reader = TopicReader(cluster.kafka_bootstrap, [output, dead_letters])
        try:
            wait_for(
                lambda: len(reader.values(output)) >= len(expected),
                timeout_s=120,
                what="every window's results after the outage",
                logs=lambda: f"{len(reader.values(output))} results\n{pipeline.logs()}",
                every=lambda: reader.poll_for(0.5),
            )
            reader.poll_for(3.0)
            results = [r for r in reader.values(output) if r["window_start"] < CLOSER_MS]
        finally:
            reader.close()
        mapper_logs = "".join(
            handle.log.read_text(errors="replace")
            for name, handle in pipeline.procs.handles.items()
            if name.startswith(f"{unique_name}-mapper-")
        )
        reasons = _reasons(cluster.kafka_bootstrap, dead_letters)

    met = f"schema registry {schema_registry_url.rstrip('/')}"
    assert met in mapper_logs, "the mapper never met the outage: the test proves nothing"
    _check("avro/registry outage", results, expected, {}, reasons)


def _variant(
    input_format: str,
    mode: str,
    name: str,
    kafka_admin: AdminClient,
    registry_url: str,
    tmp_path: Path,
) -> Variant:
    topic = make_topic(kafka_admin, f"{name}_src", partitions=PARTITIONS)
    options: dict[str, Any] = {
        "event_time": "ts",
        "event_time_format": "epoch_ms",
        "format": input_format,
        # Longer than the pauses of the test: the stream's event time does not follow the wall
        # clock, so an idle close during a pause would make the records after it late.
        "idle_timeout": "120 s",
    }
    if mode == "registry":
        stream = _registry_stream(input_format, topic, registry_url)
    else:
        path = tmp_path / ("flow.avsc" if input_format == "avro" else "flow.proto")
        path.write_text(SCHEMAS[input_format][0])
        options["schema_file"] = str(path)
        stream = _file_stream(input_format)
    return Variant(input_format, mode, topic, f"{name}t", options, stream)


def _check(
    name: str,
    results: list[dict[str, Any]],
    expected: dict[tuple[int, str, str], tuple[int, Any, int]],
    bad: dict[bytes, str],
    reasons: dict[bytes, str],
) -> None:
    keys = [(r["window_start"], r["sip"], r["type"]) for r in results]
    assert len(keys) == len(set(keys)), f"{name}: a window was emitted twice"
    assert set(keys) == set(expected), f"{name}: windows differ"
    for row in results:
        want = expected[(row["window_start"], row["sip"], row["type"])]
        assert (row["n"], row["total"], row["apps"]) == want, (name, row)
    assert len(reasons) == len(bad), (name, reasons)
    for value, reason in bad.items():
        found = reasons[value]
        ok = found.startswith("corrupt") if reason == "corrupt" else reason in found
        assert ok, (name, found)


def _registry_stream(input_format: str, topic: str, url: str) -> Stream:
    """v1, v2, v3 records framed with their registered ids, and the bad ones."""
    client = SchemaRegistryClient(url)
    ids = [
        client.register(f"{topic}-value", text, input_format.upper())
        for text in SCHEMAS[input_format]
    ]
    client.close()
    indexes = (0,) if input_format == "protobuf" else None
    sent: list[dict[str, Any]] = []
    batches: list[list[bytes]] = []
    for version, schema in enumerate(SCHEMAS[input_format]):
        records = [_record(version, len(sent) + i) for i in range(RECORDS_PER_VERSION)]
        sent += records
        batches.append(
            [frame(ids[version], _payload(input_format, schema, r), indexes) for r in records]
        )
    unknown = frame(UNKNOWN_ID, _payload(input_format, SCHEMAS[input_format][0], sent[0]), indexes)
    bad = {frame(ids[0], CORRUPT, indexes): "corrupt", unknown: f"unknown schema id {UNKNOWN_ID}"}
    closers = [
        frame(ids[-1], _payload(input_format, SCHEMAS[input_format][-1], r), indexes)
        for r in _closers(2)
    ]
    return sent, batches, bad, closers


def _file_stream(input_format: str) -> Stream:
    """Bare v1 payloads in two halves, and one corrupt record."""
    schema = SCHEMAS[input_format][0]
    sent = [_record(0, i) for i in range(2 * RECORDS_PER_VERSION)]
    values = [_payload(input_format, schema, r) for r in sent]
    halves = [values[:RECORDS_PER_VERSION], values[RECORDS_PER_VERSION:]]
    closers = [_payload(input_format, schema, r) for r in _closers(0)]
    return sent, halves, {CORRUPT: "corrupt"}, closers


def _closers(version: int) -> list[dict[str, Any]]:
    """A record per partition far past the data: the data windows close on the watermark."""
    return [{**_record(version, i), "ts": CLOSER_MS} for i in range(PARTITIONS)]


def _expected(sent: list[dict[str, Any]]) -> dict[tuple[int, str, str], tuple[int, Any, int]]:
    db = duckdb.connect()
    db.execute("CREATE TABLE r (ts BIGINT, sip VARCHAR, type VARCHAR, bytes BIGINT, app VARCHAR)")
    insert_rows(
        db,
        "r",
        [(s["ts"], s["sip"], s["type"], s.get("bytes"), s.get("app")) for s in sent],
    )
    rows = db.execute(
        "SELECT ts - ts % 1000, sip, type, count(*), sum(bytes), count(app) FROM r GROUP BY ALL"
    ).fetchall()
    return {(w, sip, kind): (n, total, apps) for w, sip, kind, n, total, apps in rows}


def _reasons(bootstrap: str, topic: str) -> dict[bytes, str]:
    """The dead-letter topic's records up to its end now: original bytes -> reason header."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"dlq-{topic}", "enable.auto.commit": False}
    )
    metadata = consumer.list_topics(topic, timeout=30).topics[topic]
    ends = {
        p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        for p in metadata.partitions
    }
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.partitions])
    found: dict[bytes, str] = {}

    def read_to_the_end() -> bool:
        positions = consumer.position([TopicPartition(topic, p) for p in ends])
        return all(ends[tp.partition] == 0 or tp.offset >= ends[tp.partition] for tp in positions)

    deadline = time.monotonic() + 10  # what a read that never reaches the end gets (_check tells)
    while not read_to_the_end() and time.monotonic() < deadline:
        for message in consumer.consume(100, timeout=0.5):
            if message.error() is None:
                headers = dict(message.headers() or [])
                found[message.value() or b""] = (headers.get(REASON_HEADER) or b"").decode()
    consumer.close()
    return found
