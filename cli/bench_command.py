"""`mars bench`: [Mars]'s experiments on a fresh local cluster (docs/benchmarks.md)."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType
from typing import Any


def register(subparsers: Any) -> None:
    bench = subparsers.add_parser(
        "bench", help="run the benchmarks and write docs/benchmarks.md (takes a while)"
    )
    bench.add_argument(
        "--quick", action="store_true", help="smoke check: 1 run, smaller data, shorter runs"
    )
    # No `choices`: the names live in benchmarks.registry, whose import (every experiment's
    # module) would slow down every `mars` command; BenchConfig.build checks them.
    bench.add_argument(
        "--experiments",
        nargs="+",
        metavar="NAME",
        help="which experiments (default: all; `benchmarks/registry.py` lists them)",
    )
    bench.add_argument("--runs", type=int, default=None, help="runs per measurement (default 3)")
    bench.add_argument(
        "--nexmark-records",
        type=int,
        default=None,
        help="bids in the nexmark experiment (default 1,000,000; --quick 100,000)",
    )
    bench.add_argument(
        "--report-from",
        metavar="RESULTS_JSON",
        help="only rewrite docs/benchmarks.md and the plots from a saved results file",
    )
    bench.set_defaults(handler=_bench)


def _bench(args: argparse.Namespace) -> int:
    # The benchmarks package lives beside the project's packages, not inside them.
    from mars.config import PROJECT_ROOT

    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    from pathlib import Path

    from benchmarks.runner import NAMES, BenchConfig, rewrite_report, run_benchmarks

    command = "mars bench " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "mars bench"
    try:
        config = BenchConfig.build(
            quick=args.quick,
            runs=args.runs,
            experiments=tuple(args.experiments or NAMES),
            command=command.strip(),
            nexmark_records=args.nexmark_records,
        )
    except ValueError as error:  # an unknown experiment name
        print(f"mars bench: {error}", file=sys.stderr)
        return 2
    if args.report_from:
        rewrite_report(Path(args.report_from), config)
        return 0
    # SIGTERM unwinds like Ctrl-C, so the cluster's processes are stopped on the way out.
    signal.signal(signal.SIGTERM, _interrupt)
    run_benchmarks(config, log=lambda line: print(line, flush=True))
    return 0


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")
