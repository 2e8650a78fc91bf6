"""`mars mapper`: run one mapper process (start any number; they form one consumer group)."""

from __future__ import annotations

import argparse
import logging
import threading
from typing import Any

from mars.clients import check_access
from mars.config import load_settings


def register(subparsers: Any) -> None:
    mapper = subparsers.add_parser(
        "mapper", help="run a mapper: Kafka source topics -> pre-aggregated partials in Redis"
    )
    mapper.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    mapper.add_argument(
        "--profile",
        metavar="FILE",
        help="profile the run with pyinstrument and write an HTML/text report to FILE",
    )
    mapper.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from mapper.mapper_process import install_signal_handlers, run_mapper

    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    settings = load_settings()
    check_access(settings)
    stop = threading.Event()
    install_signal_handlers(stop)
    if not args.profile:
        return run_mapper(settings, stop=stop)
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.005)
    profiler.start()
    try:
        return run_mapper(settings, stop=stop)
    finally:
        profiler.stop()
        with open(args.profile, "w", encoding="utf-8") as out:
            out.write(profiler.output_text(unicode=False, color=False, show_all=False))
