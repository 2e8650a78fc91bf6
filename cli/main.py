"""`mars` entry point: one sub-command module per area, each with `register(subparsers)`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from cli import (
    api_command,
    bench_command,
    demo_command,
    gen_command,
    local_commands,
    mapper_command,
    reducer_command,
    results_command,
    spark_command,
    task_commands,
    top_command,
)
from mars.config import ConfigError

Handler = Callable[[argparse.Namespace], int]

# Each module adds its sub-commands and sets `handler` on its parsers.
COMMAND_MODULES = [
    local_commands,
    gen_command,
    demo_command,
    api_command,
    task_commands,
    results_command,
    top_command,
    mapper_command,
    reducer_command,
    bench_command,
    spark_command,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mars", description="Mars: continuous windowed GROUP BY statistics over Kafka."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except ConfigError as error:
        print(f"mars: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def entry_point_names() -> frozenset[str]:
    """Top-level sub-commands (`mars <name>`), for the compose consistency test."""
    parser = build_parser()
    for action in parser._subparsers._group_actions if parser._subparsers else []:
        if isinstance(action, argparse._SubParsersAction):
            return frozenset(action.choices)
    return frozenset()


if __name__ == "__main__":
    sys.exit(main())
