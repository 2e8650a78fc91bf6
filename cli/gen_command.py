"""`mars gen`: produce the reference tuples (docs/references.md) into a Kafka topic."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from devtools.gen import GeneratorConfig
from devtools.gen.config import Encoding
from devtools.gen.produce import ProduceError, ProgressCallback, ensure_source_topic, produce
from devtools.gen.schema_setup import with_schema
from mars.clients import check_access
from mars.config import load_settings
from mars.formats.schema_registry import SchemaRegistryUnavailable


def register(subparsers: Any) -> None:
    gen = subparsers.add_parser("gen", help="produce the reference 20-field tuples into a topic")
    gen.add_argument("--topic", default="S", help="target topic (created if missing)")
    gen.add_argument("--partitions", type=int, default=4, help="partitions when creating it")
    gen.add_argument("--count", type=int, default=100_000, help="records to produce")
    gen.add_argument("--rate", type=float, default=None, help="records per second (default: max)")
    gen.add_argument("--start", type=int, default=None, help="first event time, epoch s")
    gen.add_argument("--span", type=int, default=3600, help="event-time span in seconds")
    gen.add_argument("--disorder", type=int, default=0, help="max out-of-orderness, seconds")
    gen.add_argument("--sip-cardinality", type=int, default=1000, help="distinct sip values")
    gen.add_argument("--zipf", type=float, default=0.0, help="Zipf skew exponent (0: uniform)")
    gen.add_argument("--malformed", type=float, default=0.0, help="share of malformed records")
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument(
        "--format",
        choices=[e.value for e in Encoding],
        default=Encoding.JSON.value,
        help="record encoding; avro/protobuf register the schema as <topic>-value when "
        "schema_registry.url is set (Confluent-framed records), else write it to --schema-file "
        "(bare records)",
    )
    gen.add_argument(
        "--schema-file",
        default=None,
        help="where the Avro/Protobuf schema goes without a registry (default ./<topic>.avsc or "
        "./<topic>.proto)",
    )
    gen.set_defaults(handler=_gen)


@contextmanager
def progress_bar(label: str) -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr (stdout keeps only the report) for `produce`'s
    `on_progress(done, total)`; leaving the block stops it, even when producing fails."""
    started = time.monotonic()
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[counts]}  {task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        bar = progress.add_task(label, total=None, counts="", rate="")

        def show(done: int, total: int) -> None:
            rate = done / max(time.monotonic() - started, 1e-6)
            counts = f"{done:>10,}/{total:,}"
            progress.update(bar, completed=done, total=total, counts=counts, rate=f"{rate:,.0f}/s")

        yield show


def _gen(args: argparse.Namespace) -> int:
    settings = load_settings()
    check_access(settings, redis=False)
    config = GeneratorConfig(
        count=args.count,
        seed=args.seed,
        start_s=args.start if args.start is not None else int(time.time()),
        span_s=args.span,
        disorder_s=args.disorder,
        sip_cardinality=args.sip_cardinality,
        zipf_s=args.zipf,
        malformed_ratio=args.malformed,
        encoding=Encoding(args.format),
    )
    try:
        config = with_schema(config, settings, topic=args.topic, schema_file=args.schema_file)
    except SchemaRegistryUnavailable as error:
        print(f"mars gen: {error}", file=sys.stderr)
        return 1
    ensure_source_topic(settings.kafka, args.topic, args.partitions)
    try:
        with progress_bar(args.topic) as on_progress:
            report = produce(
                settings.kafka, args.topic, config, rate=args.rate, on_progress=on_progress
            )
    except ProduceError as error:
        print(f"mars gen: {error}", file=sys.stderr)
        return 1
    print(
        f"produced {report.delivered:,} records ({report.malformed:,} malformed) to "
        f"{report.topic} in {report.elapsed_s:.1f}s"
    )
    return 0
