"""The benchmark input: the reference tuples preloaded into Kafka, as ~144-byte CSV lines or,
for the formats experiment, as JSON, Avro or Protobuf records of the same tuples.

Data is generated once per topic and reused by every run (each run is a fresh task id and a
fresh consumer group). After the data, one *sentinel* record per partition carries an event
time far past the data, so the watermark of both Mars and Spark passes the last data window
and every data window is emitted without waiting for idleness.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Producer

from devtools.gen import FIELD_NAMES, Encoding, GeneratorConfig
from devtools.gen.binary_encoding import (
    BINARY_ENCODINGS,
    BinaryEncoder,
    reference_fields,
    reference_schema,
)
from devtools.gen.config import DEFAULT_START_S
from devtools.gen.produce import THROUGHPUT_CONFIG, produce
from mars.clients import admin_client, client_config
from mars.config import KafkaSettings
from mars.tasks.spec import TimeFormat
from mars.tasks.topics import Replication, TopicPlan, ensure_topics

CSV_COLUMNS = ",".join(FIELD_NAMES)
SENTINEL_OFFSET_S = 86_400  # a day after the data: far past every data window
SENTINEL_TYPE = "sentinel"  # the sentinel's `type`, a value the data never has
PAPER_WINDOW_S = 60  # the reference query's tumbling window
# Every topic of a benchmark keeps its records for good. The data's event times are in 2023, and
# a record stamped with one (Quix Streams stamps its repartitioned records and its results
# with their window's time) is past the broker's time retention: its check, every 5 minutes,
# deleted them in the middle of a run, and the run waited for results that were gone. Quix
# Streams gives its internal topics the retention of the topic they read.
KEEP_RECORDS = {"retention.ms": "-1"}


@dataclass(frozen=True, slots=True)
class InputFormat:
    """How a preloaded topic's records are encoded: CSV (the default), JSON, or bare Avro /
    Protobuf payloads of the reference schema, which a task reads through `schema_file`."""

    encoding: Encoding = Encoding.CSV
    schema_file: str | None = None

    def options(self, *, idle: str, more: str = "") -> str:
        """The WITH clause of a task over these tuples (`more`: further options, e.g.
        `buckets=8`)."""
        chosen = [f"format='{self.encoding.value}'"]
        if self.encoding is Encoding.CSV:
            chosen.append(f"csv_columns='{CSV_COLUMNS}'")
        if self.schema_file is not None:
            chosen.append(f"schema_file='{self.schema_file}'")
        chosen.append(f"idle_timeout='{idle}'")
        return f"WITH ({', '.join(chosen + ([more] if more else []))})"


CSV_INPUT = InputFormat()


def csv_options(*, idle: str, more: str = "") -> str:
    """The WITH clause of a task over these CSV tuples (`more`: further options, e.g.
    `buckets=8`)."""
    return CSV_INPUT.options(idle=idle, more=more)


def paper_sql(
    topic: str,
    *,
    window: str = "60 s",
    extra: str = "",
    idle: str = "10 s",
    options: str = "",
    input_format: InputFormat = CSV_INPUT,
) -> str:
    """The reference query: count per (sip, type) and tumbling window (`options`: further WITH
    options, e.g. `preaggregation='spark'`)."""
    return (
        f"SELECT sip, type, timestamp, count(*) FROM {topic} GROUP BY sip, type, timestamp "
        f"WINDOWING {window} {extra} {input_format.options(idle=idle, more=options)}"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """A preloaded topic: `records` data records (+ one sentinel per partition)."""

    topic: str
    partitions: int
    records: int
    mean_bytes: float
    start_s: int
    span_s: int
    produce_rate: float
    sentinel_s: int | None
    input_format: InputFormat = CSV_INPUT

    @property
    def mbytes(self) -> float:
        return self.records * self.mean_bytes / 1e6

    @property
    def window_ends_s(self) -> int:
        return self.start_s + self.span_s

    def sentinel_window_ms(self, window_ms: int) -> int:
        """The start of the sentinels' window: every window before it holds data only."""
        assert self.sentinel_s is not None, "this run needs the sentinel records"
        return self.sentinel_s * 1000 // window_ms * window_ms


def preload(
    kafka: KafkaSettings,
    *,
    topic: str,
    records: int,
    partitions: int,
    span_s: int,
    sentinel: bool = True,
    malformed_ratio: float = 0.0,
    disorder_s: int = 0,
    seed: int = 7,
    zipf_s: float = 0.0,
    encoding: Encoding = Encoding.CSV,
    schema_dir: Path | None = None,
) -> Dataset:
    """Create `topic` and fill it with generated tuples (as fast as Kafka takes them); fields
    Zipf-skewed with exponent `zipf_s` when > 0. Avro and Protobuf records are bare payloads
    whose schema is written to `schema_dir` (required for them) as `<topic>.avsc|.proto`."""
    input_format = InputFormat(encoding=encoding)
    if encoding in BINARY_ENCODINGS:
        if schema_dir is None:
            raise ValueError(f"{encoding} records need a schema_dir for their schema file")
        path = schema_dir / f"{topic}{'.avsc' if encoding is Encoding.AVRO else '.proto'}"
        path.write_text(reference_schema(encoding, TimeFormat.EPOCH_S), encoding="utf-8")
        input_format = InputFormat(encoding=encoding, schema_file=str(path))
    plan = TopicPlan(name=topic, partitions=partitions, config=KEEP_RECORDS)
    ensure_topics(admin_client(kafka), [plan], Replication.of(kafka))
    config = GeneratorConfig(
        count=records,
        seed=seed,
        start_s=DEFAULT_START_S,
        span_s=span_s,
        encoding=encoding,
        malformed_ratio=malformed_ratio,
        disorder_s=disorder_s,
        zipf_s=zipf_s,
    )
    report = produce(kafka, topic, config)
    sentinel_s = None
    if sentinel:
        sentinel_s = config.start_s + span_s + SENTINEL_OFFSET_S
        write_sentinels(
            kafka, topic, partitions=partitions, event_time_s=sentinel_s, encoding=encoding
        )
    sample = next(iter(_sample_values(config)))
    return Dataset(
        topic=topic,
        partitions=partitions,
        records=records,
        mean_bytes=sum(map(len, sample)) / max(len(sample), 1),
        start_s=config.start_s,
        span_s=span_s,
        produce_rate=report.records_per_s,
        sentinel_s=sentinel_s,
        input_format=input_format,
    )


def sentinel_value(event_time_s: int, encoding: Encoding = Encoding.CSV) -> bytes:
    """A valid tuple with the given event time (sip/type never seen in the data), encoded as
    the data is (Avro and Protobuf: a bare payload of the reference schema)."""
    record: dict[str, int | str] = {
        name: 0 if number else "0" for name, number in reference_fields(TimeFormat.EPOCH_S)
    }
    record.update(timestamp=event_time_s, type=SENTINEL_TYPE, sip="0.0.0.0")
    if encoding is Encoding.CSV:
        return ",".join(str(record[name]) for name in FIELD_NAMES).encode()
    if encoding is Encoding.JSON:
        return json.dumps(record, separators=(",", ":")).encode()
    schema = reference_schema(encoding, TimeFormat.EPOCH_S)
    return BinaryEncoder(encoding, schema, schema_id=None).payload(record)


def write_sentinels(
    kafka: KafkaSettings,
    topic: str,
    *,
    partitions: int,
    event_time_s: int,
    encoding: Encoding = Encoding.CSV,
) -> None:
    producer = Producer(client_config(kafka, THROUGHPUT_CONFIG))
    value = sentinel_value(event_time_s, encoding)
    for partition in range(partitions):
        producer.produce(topic, value, b"sentinel", partition)
    if producer.flush(30) != 0:
        raise RuntimeError(f"sentinels not delivered to {topic}")


def _sample_values(config: GeneratorConfig) -> list[list[bytes]]:
    from devtools.gen import iter_chunks

    sample_config = GeneratorConfig(
        count=min(config.count, 20_000),
        seed=config.seed,
        start_s=config.start_s,
        span_s=config.span_s,
        zipf_s=config.zipf_s,
        encoding=config.encoding,
    )
    return [chunk.values for chunk in iter_chunks(sample_config, chunk_size=20_000)]
