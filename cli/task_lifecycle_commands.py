"""`mars task explain | replace | rewind`: what a task does, changing a running task's query,
and recomputing its windows from a time."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mars.clients.api_client import MarsApiClient


def register_lifecycle(commands: Any) -> None:
    explain = commands.add_parser(
        "explain", help="what a task does: fields, windows, buckets, plan, error bounds"
    )
    explain.add_argument("sql", nargs="?", help="a query (not registered) to explain")
    explain.add_argument("--task", dest="task_id", metavar="ID", help="a registered task")
    explain.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="as for `add`"
    )
    explain.set_defaults(handler=_explain)

    swap = commands.add_parser(
        "replace",
        help="replace a running task's query (compatible changes keep the open windows)",
    )
    swap.add_argument("task_id", metavar="ID")
    swap.add_argument("sql", help="the new query")
    swap.add_argument(
        "--restart",
        action="store_true",
        help="when the change is not compatible: delete the task's state and start afresh",
    )
    swap.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="as for `add`"
    )
    swap.set_defaults(handler=_replace)

    rewind = commands.add_parser(
        "rewind",
        help="recompute a running task's windows from a time, or from the event times at "
        "some offsets, and emit them again (their rows carry the rewind's revision)",
    )
    rewind.add_argument("task_id", metavar="ID")
    origin = rewind.add_mutually_exclusive_group(required=True)
    origin.add_argument(
        "time", nargs="?", help="ISO-8601, e.g. 2026-11-26T08:00:00Z (no zone: UTC)"
    )
    origin.add_argument(
        "--offsets",
        type=_partition_offsets,
        metavar="P=OFFSET,...",
        help="from the earliest event time of the records at these offsets, e.g. 0=1200,3=977",
    )
    rewind.set_defaults(handler=_rewind)


def _explain(args: argparse.Namespace) -> int:
    # Imported here: cli.task_commands imports this module to register its commands.
    from cli.task_commands import parse_options, run_api_call

    if (args.sql is None) == (args.task_id is None):
        print("mars task explain: give a query, or --task ID", file=sys.stderr)
        return 2
    try:
        options = parse_options(args.option)
    except ValueError as error:
        print(f"mars task explain: {error}", file=sys.stderr)
        return 2

    def call(client: MarsApiClient) -> None:
        plan = (
            client.explain_task(args.task_id)
            if args.task_id is not None
            else client.explain_query(args.sql, options=options or None)
        )
        print(json.dumps(plan, indent=2))

    code: int = run_api_call(args, call, sql=args.sql)
    return code


def _replace(args: argparse.Namespace) -> int:
    from cli.task_commands import parse_options, run_api_call

    try:
        options = parse_options(args.option)
    except ValueError as error:
        print(f"mars task replace: {error}", file=sys.stderr)
        return 2

    def call(client: MarsApiClient) -> None:
        task = client.replace_task(
            args.task_id, args.sql, options=options or None, restart=args.restart
        )
        revisions = task["spec"].get("revisions") or []
        if args.restart or not revisions:
            print(f"{args.task_id}: registered again with the new query")
        else:
            print(f"{args.task_id}: new query from window start {revisions[-1]['from_window_ms']}")

    code: int = run_api_call(args, call, sql=args.sql)
    return code


def _rewind(args: argparse.Namespace) -> int:
    from cli.task_commands import run_api_call

    def call(client: MarsApiClient) -> None:
        rewind = client.rewind_task(args.task_id, args.time, offsets=args.offsets)
        print(
            f"{args.task_id}: rewind {rewind['generation']} recomputes the windows from "
            f"{rewind['from_window_ms']} (rows at revision {rewind['generation']})"
        )

    code: int = run_api_call(args, call)
    return code


def _partition_offsets(text: str) -> dict[int, int]:
    """`0=1200,3=977` -> {0: 1200, 3: 977}."""
    try:
        pairs = (item.split("=", 1) for item in text.split(",") if item.strip())
        return {int(partition): int(offset) for partition, offset in pairs}
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected PARTITION=OFFSET pairs separated by commas, e.g. 0=1200,3=977"
        ) from None
