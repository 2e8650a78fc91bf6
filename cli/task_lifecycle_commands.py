"""`mars task explain`: what a task does, for a registered task or a query not registered."""

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


def _explain(args: argparse.Namespace) -> int:
    # Imported here: cli.task_commands imports this module to register its commands.
    from cli.task_commands import _run, parse_options

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

    code: int = _run(args, call, sql=args.sql)
    return code
