"""`mars spark preagg | stream | holds | release-hold`: pre-aggregation with PySpark, in bulk
(backfill) or of a task's live stream (Structured Streaming)."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kazoo.client import KazooClient
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from mars.clients import check_access, connect_redis
from mars.config import Settings, load_settings
from mars.registry import TaskRegistry
from mars.store.backfill import BackfillCoordination
from mars.tasks.spec import TaskSpec
from spark.backfill_job import BackfillError, BackfillJob, ProgressCallback, run_backfill
from spark.offsets import OffsetSpecError
from spark.session import DEFAULT_MASTER, build_spark_session
from spark.sources import FileSource, KafkaSource
from spark.stream import StreamError, run_stream


def register(subparsers: Any) -> None:
    spark = subparsers.add_parser(
        "spark", help="pre-aggregation with PySpark: backfill, or a task's live stream"
    )
    commands = spark.add_subparsers(dest="spark_command", required=True, metavar="ACTION")

    preagg = commands.add_parser(
        "preagg", help="pre-aggregate history from Kafka or files into the task's reducers"
    )
    preagg.add_argument("task_id", metavar="TASK")
    preagg.add_argument("--from", dest="source", choices=("kafka", "files"), default="kafka")
    preagg.add_argument(
        "--starting-offsets", default="earliest", help='earliest | latest | {"topic":{"0":42}}'
    )
    preagg.add_argument(
        "--ending-offsets",
        default="latest",
        help="latest | earliest | JSON; becomes the hand-over point to the live mappers",
    )
    preagg.add_argument("--path", help="files: glob(s), comma-separated (.jsonl/.csv/.parquet)")
    preagg.add_argument("--master", default=DEFAULT_MASTER, help="Spark master URL")
    preagg.add_argument("--job", help="job id, the idempotency key (default: kafka / files-<hash>)")
    preagg.add_argument("--chunk-size", type=int, default=50_000, help="records per data set")
    preagg.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark conf, repeatable"
    )
    preagg.set_defaults(handler=_preagg)

    stream = commands.add_parser(
        "stream",
        help="pre-aggregate a task's live stream on Spark Structured Streaming (a task "
        "registered WITH (preaggregation = 'spark')) until stopped",
    )
    stream.add_argument("task_id", metavar="TASK")
    stream.add_argument("--master", default=DEFAULT_MASTER, help="Spark master URL")
    stream.add_argument("--trigger", type=float, default=1.0, help="seconds per micro-batch")
    stream.add_argument("--chunk-size", type=int, default=5_000, help="records per data set")
    stream.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="Spark conf, repeatable"
    )
    stream.set_defaults(handler=_stream)

    holds = commands.add_parser("holds", help="backfill jobs holding a task's watermark")
    holds.add_argument("task_id", metavar="TASK")
    holds.set_defaults(handler=_holds)

    release = commands.add_parser(
        "release-hold", help="release a failed backfill's watermark hold (its windows may close)"
    )
    release.add_argument("task_id", metavar="TASK")
    release.add_argument("--job", required=True)
    release.set_defaults(handler=_release)


def load_spec(settings: Settings, task_id: str) -> TaskSpec:
    zk = KazooClient(hosts=settings.zookeeper.hosts, timeout=settings.zookeeper.session_timeout_s)
    zk.start(timeout=15)
    try:
        return TaskRegistry(zk, root=settings.zookeeper.root).get(task_id).spec
    finally:
        zk.stop()
        zk.close()


@contextmanager
def _progress() -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr for `run_backfill`'s `on_progress(done, total)` (called
    from its reporter thread; total None: the end offsets are unknown, the bar pulses).
    Leaving the block stops it, so error messages start on a line of their own."""
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[applied]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as progress:
        bar = progress.add_task("backfill", total=None, applied="")

        def show(done: int, total: int | None) -> None:
            of = f"/{total:,}" if total is not None else ""
            applied = f"{done:,}{of} records applied"
            progress.update(bar, completed=done, total=total, applied=applied)

        yield show


def _preagg(args: argparse.Namespace) -> int:
    settings = load_settings()
    if args.source == "files" and not args.path:
        print("mars spark preagg: --from files needs --path", file=sys.stderr)
        return 2
    check_access(settings)
    conf = dict(item.split("=", 1) for item in args.conf)
    spec = load_spec(settings, args.task_id)
    source: KafkaSource | FileSource = (
        FileSource(path=args.path)
        if args.source == "files"
        else KafkaSource(starting_offsets=args.starting_offsets, ending_offsets=args.ending_offsets)
    )
    job = BackfillJob(spec=spec, source=source, job=args.job, chunk_size=args.chunk_size)
    spark = build_spark_session(master=args.master, jars_dir=settings.local.jars_dir, conf=conf)
    try:
        with _progress() as on_progress:
            summary = run_backfill(spark, settings=settings, job=job, on_progress=on_progress)
    except (BackfillError, OffsetSpecError) as error:
        print(f"mars spark preagg: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        print(
            f"mars spark preagg: failed: {error}\nThe job's watermark hold is kept: re-run the "
            "same command (it never applies a record twice) or `mars spark release-hold`.",
            file=sys.stderr,
        )
        return 1
    finally:
        spark.stop()
    print(summary.describe())
    print(summary.completion(idle_timeout_ms=spec.options.idle_timeout_ms))
    return 0


def _stream(args: argparse.Namespace) -> int:
    settings = load_settings()
    check_access(settings)
    spec = load_spec(settings, args.task_id)
    conf = dict(item.split("=", 1) for item in args.conf)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    spark = build_spark_session(
        master=args.master, jars_dir=settings.local.jars_dir, app_name="mars-stream", conf=conf
    )
    try:
        tally = run_stream(
            spark,
            settings=settings,
            spec=spec,
            stop=stop,
            trigger_s=args.trigger,
            chunk_size=args.chunk_size,
        )
    except StreamError as error:
        print(f"mars spark stream: {error}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    print(f"mars spark stream {spec.id}: stopped after {tally.describe()}")
    return 0


def _holds(args: argparse.Namespace) -> int:
    settings = load_settings()
    client = connect_redis(settings.redis)
    coordination = BackfillCoordination(client)
    for job, since in sorted(coordination.holds(args.task_id).items()):
        print(f"{job}\theld since {since} ms")
    for partition, offset in sorted(coordination.handovers(args.task_id).items()):
        print(f"partition {partition}\thand-over at offset {offset}")
    client.close()
    return 0


def _release(args: argparse.Namespace) -> int:
    settings = load_settings()
    client = connect_redis(settings.redis)
    BackfillCoordination(client).release(args.task_id, args.job)
    client.close()
    return 0
