"""`mars reducer`: run one reducer process until SIGTERM/SIGINT (any number may run)."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType
from typing import Any

from mars.clients import check_access
from mars.config import Settings, load_settings
from mars.heap import return_arrow_pages, return_freed_heap, return_polars_pages


def set_allocators(settings: Settings) -> None:
    """Before Polars and PyArrow are imported (they read these once, as they load): Polars's
    jemalloc returns freed pages `reducer.freed_pages_decay_ms` after they are freed (its RSS is
    then about its open windows' size), PyArrow, which writes the spill files, allocates from
    the C library's malloc, and that malloc returns large freed buffers (`mars.heap`)."""
    return_polars_pages(settings.reducer.freed_pages_decay_ms)
    return_arrow_pages()
    return_freed_heap()


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "reducer", help="run a reducer: merge partials, close windows, emit results exactly once"
    )
    parser.add_argument(
        "--id", dest="member_id", default=None, help="member id (default reducer-<host>-<pid>)"
    )
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    parser.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s",
    )
    settings = load_settings()
    set_allocators(settings)
    from reducer.reducer_process import ReducerProcess  # imports Polars: after the allocators

    check_access(settings)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    ReducerProcess(settings=settings, member_id=args.member_id).run(stop)
    return 0
