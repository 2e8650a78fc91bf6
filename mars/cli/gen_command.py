"""`mars gen`: produce the paper's simulated network tuples into a Kafka topic."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from mars.config import load_settings
from mars.gen import GeneratorConfig
from mars.gen.produce import ProduceError, ensure_source_topic, produce


def register(subparsers: Any) -> None:
    gen = subparsers.add_parser("gen", help="produce the paper's 20-field tuples into a topic")
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
    gen.set_defaults(handler=_gen)


def progress_bar(label: str) -> Any:
    started = time.monotonic()

    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        rate = done / max(time.monotonic() - started, 1e-6)
        bar = "#" * filled + "-" * (width - filled)
        print(f"\r{label} [{bar}] {done:>10,}/{total:,}  {rate:,.0f}/s", end="", file=sys.stderr)
        if done >= total:
            print(file=sys.stderr)

    return show


def _gen(args: argparse.Namespace) -> int:
    settings = load_settings()
    bootstrap = settings.kafka.bootstrap_servers
    config = GeneratorConfig(
        count=args.count,
        seed=args.seed,
        start_s=args.start if args.start is not None else int(time.time()),
        span_s=args.span,
        disorder_s=args.disorder,
        sip_cardinality=args.sip_cardinality,
        zipf_s=args.zipf,
        malformed_ratio=args.malformed,
    )
    ensure_source_topic(bootstrap, args.topic, args.partitions)
    try:
        report = produce(
            bootstrap, args.topic, config, rate=args.rate, on_progress=progress_bar(args.topic)
        )
    except ProduceError as error:
        print(f"mars gen: {error}", file=sys.stderr)
        return 1
    print(
        f"produced {report.delivered:,} records ({report.malformed:,} malformed) to "
        f"{report.topic} in {report.elapsed_s:.1f}s"
    )
    return 0
