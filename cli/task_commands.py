"""`mars task add | ls | show | pause | resume | preaggregation | buckets | rm` (and
`explain | replace`, cli.task_lifecycle_commands): manage tasks through the REST API."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cli.task_lifecycle_commands import register_lifecycle
from mars.clients.api_client import ApiCallError, MarsApiClient
from mars.config import Settings, load_settings


def api_url(settings: Settings, override: str | None) -> str:
    """`--api URL` if given, else `http://{api.host}:{api.port}` from the settings."""
    return override or f"http://{settings.api.host}:{settings.api.port}"


def add_api_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--api", metavar="URL", help="REST API base URL (default: from settings)")


def register(subparsers: Any) -> None:
    task = subparsers.add_parser("task", help="register and manage statistics tasks")
    commands = task.add_subparsers(dest="task_command", required=True, metavar="ACTION")

    add = commands.add_parser("add", help="register a task from its SQL")
    add.add_argument("sql", help='e.g. "SELECT sip, count(*) FROM S GROUP BY sip WINDOWING 60 s"')
    add.add_argument("--id", dest="task_id", help="task id (default: generated)")
    add.add_argument(
        "--paused",
        action="store_true",
        help="register it PAUSED (no mapper writes it until `mars task resume`: backfill first)",
    )
    add.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="task option, repeatable (e.g. --option buckets=16)",
    )
    add.set_defaults(handler=_add)

    ls = commands.add_parser("ls", help="list tasks")
    ls.set_defaults(handler=_ls)

    show = commands.add_parser("show", help="a task's spec, status and counters")
    show.add_argument("task_id", metavar="ID")
    show.set_defaults(handler=_show)

    for name, handler in (("pause", _pause), ("resume", _resume)):
        sub = commands.add_parser(name, help=f"{name} a task")
        sub.add_argument("task_id", metavar="ID")
        sub.set_defaults(handler=handler)

    handover = commands.add_parser(
        "preaggregation",
        help="hand a task's live pre-aggregation to mappers or to `mars spark stream`",
    )
    handover.add_argument("task_id", metavar="ID")
    handover.add_argument("by", choices=("mappers", "spark"))
    handover.set_defaults(handler=_preaggregation)

    rebucket = commands.add_parser(
        "buckets", help="change a running task's bucket count (from the next window on)"
    )
    rebucket.add_argument("task_id", metavar="ID")
    rebucket.add_argument("buckets", type=int, metavar="N")
    rebucket.set_defaults(handler=_buckets)

    rm = commands.add_parser("rm", help="delete a task")
    rm.add_argument("task_id", metavar="ID")
    rm.add_argument(
        "--delete-topics", action="store_true", help="also delete its output/late/dlq topics"
    )
    rm.set_defaults(handler=_rm)

    register_lifecycle(commands)
    for sub in commands.choices.values():
        add_api_argument(sub)


def parse_options(pairs: list[str]) -> dict[str, str]:
    """`["buckets=16", "event_time=ts"]` -> `{"buckets": "16", "event_time": "ts"}`."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--option {pair!r}: expected KEY=VALUE")
        options[key.strip()] = value
    return options


def format_error(error: ApiCallError, sql: str | None = None) -> str:
    """The error message; for an SQL position, the offending line with a caret under it."""
    where = f"line {error.line}, column {error.column}: " if error.line is not None else ""
    text = f"error ({error.status}): {where}{error.message}" if error.status else error.message
    if sql is None or error.line is None or error.column is None:
        return text
    lines = sql.splitlines() or [""]
    source_line = lines[min(error.line, len(lines)) - 1]
    caret = " " * (error.column - 1) + "^"
    return f"{text}\n  {source_line}\n  {caret}"


def _client(args: argparse.Namespace) -> MarsApiClient:
    settings = load_settings()
    return MarsApiClient(base_url=api_url(settings, args.api), token=settings.api.token)


def run_api_call(args: argparse.Namespace, call: Any, *, sql: str | None = None) -> int:
    """`call(client)` against the API of `args`: 0, or 1 with the API's error on stderr (for
    an SQL position, the line with a caret under it)."""
    try:
        with _client(args) as client:
            call(client)
    except ApiCallError as error:
        print(f"mars task {args.task_command}: {format_error(error, sql)}", file=sys.stderr)
        return 1
    return 0


def _print_task_line(task: dict[str, Any]) -> None:
    source = task["topics"]["source"]
    print(f"{task['id']:<32} {task['status']:<8} {source:<24} {task['spec']['sql']}")


def _add(args: argparse.Namespace) -> int:
    try:
        options = parse_options(args.option)
    except ValueError as error:
        print(f"mars task add: {error}", file=sys.stderr)
        return 2

    def call(client: MarsApiClient) -> None:
        task = client.create_task(
            args.sql, task_id=args.task_id, options=options or None, paused=args.paused
        )
        print(f"registered {task['id']} ({task['status']})")
        print(f"  results    {task['topics']['output']}")
        print(f"  late       {task['topics']['late']}")
        print(f"  dead letter {task['topics']['dead_letter']}")

    return run_api_call(args, call, sql=args.sql)


def _ls(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        tasks = client.list_tasks()
        print(f"{'ID':<32} {'STATUS':<8} {'SOURCE':<24} SQL")
        for task in tasks:
            _print_task_line(task)

    return run_api_call(args, call)


def _show(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        print(json.dumps(client.get_task(args.task_id), indent=2))

    return run_api_call(args, call)


def _pause(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        print(f"{args.task_id}: {client.pause_task(args.task_id)['status']}")

    return run_api_call(args, call)


def _resume(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        print(f"{args.task_id}: {client.resume_task(args.task_id)['status']}")

    return run_api_call(args, call)


def _preaggregation(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        task = client.set_preaggregation(args.task_id, args.by)
        print(f"{args.task_id}: pre-aggregated by {task['spec']['options']['preaggregation']}")

    return run_api_call(args, call)


def _buckets(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        task = client.set_buckets(args.task_id, args.buckets)
        changes = task["spec"]["options"]["bucket_changes"]
        since = f" from window start {changes[-1]['from_window_ms']} ms" if changes else ""
        print(f"{args.task_id}: {args.buckets} buckets{since}")

    return run_api_call(args, call)


def _rm(args: argparse.Namespace) -> int:
    def call(client: MarsApiClient) -> None:
        client.delete_task(args.task_id, delete_topics=args.delete_topics)
        print(f"deleted {args.task_id}")

    return run_api_call(args, call)
