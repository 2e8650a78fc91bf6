"""`mars api`: run the REST API (uvicorn) on settings.api.host:port."""

from __future__ import annotations

import argparse
from typing import Any

from mars.config import load_settings


def register(subparsers: Any) -> None:
    api = subparsers.add_parser("api", help="run the REST API service")
    api.add_argument("--host", help="listen address (default: settings api.host)")
    api.add_argument("--port", type=int, help="listen port (default: settings api.port)")
    api.add_argument("--log-level", default="info", help="uvicorn log level")
    api.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from api.server import serve  # FastAPI/uvicorn only for this command

    overrides: dict[str, Any] = {}
    if args.host or args.port:
        base = load_settings().api.model_dump()
        overrides["api"] = {
            **base,
            **({"host": args.host} if args.host else {}),
            **({"port": args.port} if args.port else {}),
        }
    serve(load_settings(**overrides), log_level=args.log_level)
    return 0
