"""`mars results <id> [--follow] [--from-beginning]`: a task's results, read from its Kafka
result topic with `isolation.level=read_committed` (only committed, final records).
`mars results <id> --current [--group col=value ...] [--window-start MS]`: the current values
of its open windows instead (a pull query, `GET /tasks/<id>/windows`).

The topic name comes from the REST API (`GET /tasks/<id>`) unless `--topic` names it. Without
`--from-beginning` reading starts `--tail` records before the end of each partition. Without
`--follow` the command prints what is committed now as one table sorted by window and exits;
with it, it keeps printing rows as windows close.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from cli.task_commands import add_api_argument, api_url, format_error
from mars.clients import check_access, client_config
from mars.clients.api_client import ApiCallError, MarsApiClient
from mars.config import KafkaSettings, load_settings

WINDOW_COLUMNS = ("window_start", "window_end")
POLL_TIMEOUT_S = 0.5


def register(subparsers: Any) -> None:
    results = subparsers.add_parser("results", help="print a task's results from Kafka")
    results.add_argument("task_id", metavar="ID")
    results.add_argument("--follow", "-f", action="store_true", help="keep printing new windows")
    results.add_argument(
        "--from-beginning", action="store_true", help="read the whole result topic"
    )
    results.add_argument(
        "--tail", type=int, default=100, help="records per partition before the end (default 100)"
    )
    results.add_argument("--topic", help="result topic (default: asked from the REST API)")
    results.add_argument(
        "--timeout", type=float, default=30.0, help="seconds to wait for Kafka without --follow"
    )
    results.add_argument(
        "--current",
        action="store_true",
        help="the current values of open windows (pull query) instead of the result topic",
    )
    results.add_argument(
        "--group",
        action="append",
        default=[],
        metavar="COL=VALUE",
        help="with --current: only groups whose column equals the value (repeatable)",
    )
    results.add_argument(
        "--window-start", type=int, help="with --current: only the window starting here (ms)"
    )
    add_api_argument(results)
    results.set_defaults(handler=_results)


@dataclass(slots=True)
class ResultTable:
    """Rows printed as an aligned table; columns are fixed by the first rows seen."""

    columns: list[str] = field(default_factory=list)

    def fit(self, rows: Sequence[dict[str, Any]]) -> None:
        for row in rows:
            for name in row:
                if name not in self.columns:
                    self.columns.append(name)
        ordered = [c for c in WINDOW_COLUMNS if c in self.columns]
        self.columns = ordered + [c for c in self.columns if c not in WINDOW_COLUMNS]

    def header(self) -> str:
        return "  ".join(f"{name:>16}" for name in self.columns)

    def line(self, row: dict[str, Any]) -> str:
        return "  ".join(f"{_cell(row.get(name)):>16}" for name in self.columns)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def sort_key(row: dict[str, Any]) -> tuple[Any, ...]:
    start = row.get("window_start")
    return (start if isinstance(start, int) else 0, json.dumps(row, sort_keys=True, default=str))


def decode_row(value: bytes | None) -> dict[str, Any] | None:
    """A result record's JSON object (None for tombstones and non-object values)."""
    if value is None:
        return None
    try:
        row = json.loads(value)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def read_committed_rows(
    *,
    kafka: KafkaSettings,
    topic: str,
    from_beginning: bool,
    tail: int,
    follow: bool,
    timeout_s: float,
    stop: Callable[[], bool] = lambda: False,
) -> Iterator[list[dict[str, Any]]]:
    """Yield batches of result rows. The first batch is everything committed up to now;
    with `follow`, later batches are rows as they are committed, until `stop()`."""
    consumer = Consumer(
        client_config(
            kafka,
            {
                "group.id": f"mars-results-{uuid.uuid4().hex[:8]}",  # never committed
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
                "enable.partition.eof": True,
            },
        )
    )
    try:
        metadata = consumer.list_topics(timeout=timeout_s)
        if topic not in metadata.topics or metadata.topics[topic].error is not None:
            raise LookupError(f"result topic '{topic}' does not exist")
        partitions = sorted(metadata.topics[topic].partitions)
        assignment = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(
                TopicPartition(topic, partition), timeout=timeout_s
            )
            start = OFFSET_BEGINNING if from_beginning else max(low, high - tail)
            assignment.append(TopicPartition(topic, partition, start))
        consumer.assign(assignment)
        pending_eof = set(partitions)
        batch: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout_s
        while pending_eof:
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka did not deliver {topic} within {timeout_s} s")
            _poll_into(consumer, batch, pending_eof)
        yield batch
        while follow and not stop():
            batch = []
            _poll_into(consumer, batch, set())
            if batch:
                yield batch
    finally:
        consumer.close()


def _poll_into(consumer: Consumer, batch: list[dict[str, Any]], pending_eof: set[int]) -> None:
    for message in consumer.consume(num_messages=500, timeout=POLL_TIMEOUT_S):
        error = message.error()
        if error is not None:
            if error.code() == KafkaError._PARTITION_EOF:
                pending_eof.discard(message.partition())
                continue
            raise RuntimeError(f"Kafka: {error}")
        row = decode_row(message.value())
        if row is not None:
            batch.append(row)


def _topic_of(args: argparse.Namespace) -> str:
    if args.topic:
        return str(args.topic)
    settings = load_settings()
    with MarsApiClient(base_url=api_url(settings, args.api), token=settings.api.token) as client:
        task = client.get_task(args.task_id)
    return str(task["topics"]["output"])


def _current(args: argparse.Namespace) -> int:
    """Print the pull query's rows as a table, with the watermark and how old the values are."""
    settings = load_settings()
    groups = dict(item.split("=", 1) for item in args.group if "=" in item)
    if len(groups) != len(args.group):
        print("mars results: --group needs COL=VALUE", file=sys.stderr)
        return 2
    try:
        with MarsApiClient(
            base_url=api_url(settings, args.api), token=settings.api.token
        ) as client:
            answer = client.current_windows(
                args.task_id, groups=groups, window_start=args.window_start
            )
    except ApiCallError as error:
        print(f"mars results: {format_error(error)}", file=sys.stderr)
        return 1
    staleness = answer["staleness_ms"]
    print(
        f"watermark {answer['watermark']}  values as of {answer['as_of_ms']} "
        f"({'unknown age' if staleness is None else f'{staleness} ms old'}), "
        f"{answer['backlog_datasets']} data sets not merged yet"
    )
    rows = sorted(answer["rows"], key=sort_key)
    table = ResultTable()
    table.fit(rows)
    if not rows:
        print("(no open window matches)")
        return 0
    print(table.header())
    for row in rows:
        print(table.line(row))
    return 0


def _results(args: argparse.Namespace) -> int:
    if args.current:
        return _current(args)
    settings = load_settings()
    check_access(settings, redis=False)
    try:
        topic = _topic_of(args)
        table = ResultTable()
        printed_header = False
        for batch in read_committed_rows(
            kafka=settings.kafka,
            topic=topic,
            from_beginning=args.from_beginning,
            tail=max(0, args.tail),
            follow=args.follow,
            timeout_s=args.timeout,
        ):
            rows = sorted(batch, key=sort_key)
            if not printed_header:
                table.fit(rows)
                if not table.columns:
                    if not args.follow:
                        print("(no results yet)")
                    continue
                print(table.header())
                printed_header = True
            for row in rows:
                print(table.line(row))
            sys.stdout.flush()
    except ApiCallError as error:
        print(f"mars results: {format_error(error)}", file=sys.stderr)
        return 1
    except (LookupError, TimeoutError, RuntimeError) as error:
        print(f"mars results: {error}", file=sys.stderr)
        return 1
    return 0
