"""Decode speed of each input format against CSV's: the same records as CSV, JSON (natively,
native/src/json_columns.rs, and through msgspec), Avro (natively, native/src/avro_columns.rs,
and through fastavro) and Protobuf (natively, native/src/protobuf_columns.rs, and through the
`protobuf` runtime), through the mapper's decoders.

    .venv/bin/python benchmarks/format_decode.py --records 500000 --repeat 3

Each record has 20 fields (a timestamp, addresses, ports, names, counters, a float), as the
reference tuples of `devtools.gen`; the task reads four: the timestamp, `sip`, `type` and
`bytes` (a SUM argument). A nested variant puts `sip` and `bytes` two levels down and reads
`m.src.ip`, `m.bytes` and `m.tags[0]`. Avro and Protobuf records are bare payloads of a schema
of the 20 fields (longs, strings, a double), as a task with a `schema_file` reads them.
Batches of 5,000 records as the native consumer hands them (`JoinedValues`) through
`decoder.decode`, frame included; CPU seconds of this process (Polars's threads included),
best of `--repeat`. docs/benchmarks.md reports the figures.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import time
from collections.abc import Sequence
from unittest.mock import patch

import fastavro
from google.protobuf.message import Message

from mars.engine.decode import CsvRecordDecoder, FieldPlan, JsonRecordDecoder, RecordDecoder
from mars.engine.joined_values import JoinedValues
from mars.formats import native_protobuf
from mars.formats.avro_decoder import AvroPayloadReader, parse_avro_schema
from mars.formats.binary_decoder import BinaryRecordDecoder
from mars.formats.protobuf_decoder import ProtobufPayloadReader
from mars.formats.protobuf_schema import compile_proto, message_at, message_class
from mars.tasks.spec import CsvFormat

BATCH = 5_000
COLUMNS = (
    "timestamp", "sip", "dip", "sport", "dport", "type", "protocol", "location", "flags", "ttl",
    "app", "user", "host", "method", "status", "bytes", "packets", "duration", "agent", "rtt",
)  # fmt: skip
WORDS = ["http", "dns", "tls", "Beijing", "Shanghai", "SYN", "ACK", "web", "mail", "GET", "POST"]


def _values(rng: random.Random, i: int) -> list[object]:
    ip = f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    return [
        1_700_000_000_000 + i,
        ip,
        f"192.168.{rng.randint(0, 255)}.{rng.randint(1, 254)}",
        rng.randint(1024, 65535),
        rng.choice([22, 53, 80, 443]),
        *(rng.choice(WORDS) for _ in range(4)),
        rng.choice([32, 64, 128]),
        rng.choice(WORDS),
        f"user{rng.randint(0, 9999)}",
        f"host{rng.randint(0, 999)}.example.com",
        rng.choice(["GET", "POST"]),
        rng.choice([200, 301, 404, 500]),
        rng.randint(40, 1_500_000),
        rng.randint(1, 1000),
        rng.randint(0, 60_000),
        "Mozilla/5.0",
        round(rng.random() * 100, 3),
    ]


def _schemas() -> tuple[str, str]:
    """The Avro and Protobuf schemas of the records (field types from `_values`)."""
    kinds = [type(v) for v in _values(random.Random(0), 0)]
    avro = {int: "long", str: "string", float: "double"}
    proto = {int: "int64", str: "string", float: "double"}
    avro_schema = {
        "type": "record",
        "name": "Flow",
        "fields": [{"name": c, "type": avro[k]} for c, k in zip(COLUMNS, kinds, strict=True)],
    }
    lines = [
        f"  {proto[k]} {c} = {n};" for n, (c, k) in enumerate(zip(COLUMNS, kinds, strict=True), 1)
    ]
    proto_text = 'syntax = "proto3";\nmessage Flow {\n' + "\n".join(lines) + "\n}\n"
    return json.dumps(avro_schema), proto_text


def _batches(count: int, seed: int = 1) -> dict[str, list[JoinedValues]]:
    """The same records as flat JSON, CSV, nested JSON, Avro and Protobuf, cut into batches."""
    rng = random.Random(seed)
    forms: dict[str, list[bytes]] = {"json": [], "csv": [], "nested": [], "avro": [], "proto": []}
    avro_text, proto_text = _schemas()
    avro_schema = parse_avro_schema(avro_text)
    message = message_class(message_at(compile_proto(proto_text), (0,)))
    for i in range(count):
        values = _values(rng, i)
        record = dict(zip(COLUMNS, values, strict=True))
        forms["json"].append(json.dumps(record).encode())
        forms["csv"].append(",".join(map(str, values)).encode())
        buffer = io.BytesIO()
        fastavro.schemaless_writer(buffer, avro_schema, record)
        forms["avro"].append(buffer.getvalue())
        forms["proto"].append(bytes(message(**record).SerializeToString()))
        rest = {k: v for k, v in record.items() if k not in ("sip", "dip", "bytes")}
        inner = {"src": {"ip": record["sip"], "port": record["sport"]}, "dst": record["dip"]}
        inner |= {"bytes": record["bytes"], "tags": [record["type"], "x"]}
        forms["nested"].append(json.dumps({**rest, "m": inner}).encode())
    return {
        form: [JoinedValues.of(values[at : at + BATCH]) for at in range(0, count, BATCH)]
        for form, values in forms.items()
    }


def _runtime_reader(message: type[Message], fields: tuple[str, ...]) -> ProtobufPayloadReader:
    """A Protobuf reader without its native decoder: every record through the runtime."""
    with patch.object(native_protobuf, "mars_native", None):
        return ProtobufPayloadReader(message, fields)


def _seconds(decoder: RecordDecoder, batches: Sequence[JoinedValues]) -> float:
    start = time.process_time()
    for batch in batches:
        decoded = decoder.decode(batch)
        assert not decoded.bad
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    batches = _batches(args.records)
    flat = FieldPlan(
        fields=("timestamp", "sip", "type", "bytes"), numeric_fields=frozenset({"bytes"})
    )
    nested = FieldPlan(
        fields=("timestamp", "$.m.src.ip", "$.m.tags[0]", "$.m.bytes"),
        numeric_fields=frozenset({"$.m.bytes"}),
    )
    csv_format = CsvFormat(columns=COLUMNS, delimiter=",")
    avro_text, proto_text = _schemas()
    avro_schema = parse_avro_schema(avro_text)
    message = message_class(message_at(compile_proto(proto_text), (0,)))

    def binary(reader: AvroPayloadReader | ProtobufPayloadReader) -> BinaryRecordDecoder:
        return BinaryRecordDecoder(flat, fixed=reader)

    runs: dict[str, tuple[RecordDecoder, list[JoinedValues]]] = {
        "CSV (Polars reader)": (CsvRecordDecoder(flat, csv_format), batches["csv"]),
        "JSON native": (JsonRecordDecoder(flat), batches["json"]),
        "JSON msgspec": (JsonRecordDecoder(flat, native=False), batches["json"]),
        "nested JSON native": (JsonRecordDecoder(nested), batches["nested"]),
        "nested JSON msgspec": (JsonRecordDecoder(nested, native=False), batches["nested"]),
        "Avro native": (binary(AvroPayloadReader(avro_schema, flat.fields)), batches["avro"]),
        "Avro fastavro": (
            binary(AvroPayloadReader(avro_schema, flat.fields, native=False)),
            batches["avro"],
        ),
        "Protobuf native": (binary(ProtobufPayloadReader(message, flat.fields)), batches["proto"]),
        "Protobuf runtime": (binary(_runtime_reader(message, flat.fields)), batches["proto"]),
    }
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(args.repeat):  # round-robin: a busy spell on the machine hits every run
        for label, (decoder, parts) in runs.items():
            best[label] = min(best[label], _seconds(decoder, parts))
    rates = {label: args.records / seconds for label, seconds in best.items()}
    sizes = {
        form: sum(len(b.data) for b in parts) / args.records for form, parts in batches.items()
    }
    print(
        f"{args.records:,} records; bytes/record: "
        + ", ".join(f"{form} {size:.0f}" for form, size in sizes.items())
    )
    csv_rate = rates["CSV (Polars reader)"]
    for label, rate in rates.items():
        print(f"{label:22s} {rate:12,.0f} records/CPU-s   CSV/this {csv_rate / rate:5.2f}x")
    print(
        f"native/msgspec: flat {rates['JSON native'] / rates['JSON msgspec']:.2f}x, nested "
        f"{rates['nested JSON native'] / rates['nested JSON msgspec']:.2f}x; Avro "
        f"native/fastavro {rates['Avro native'] / rates['Avro fastavro']:.2f}x; Protobuf "
        f"native/runtime {rates['Protobuf native'] / rates['Protobuf runtime']:.2f}x"
    )


if __name__ == "__main__":
    main()
