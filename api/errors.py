"""The API's one error shape and the handlers that turn every failure into it.

Every non-2xx answer has the body

    {"error": {"message": str, "position": int | null, "line": int | null, "column": int | null}}

`position` (0-based offset), `line` and `column` (1-based) point into the task's SQL when the
error is about one place in it. User input never causes a 5xx: bad bodies and bad SQL are 422,
unknown tasks 404, duplicates 409; a 503 means a backing service (ZooKeeper, Kafka, Redis) did
not answer, and only a bug in Mars itself gives a 500.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException

from mars.sql import TaskError

log = logging.getLogger(__name__)


class ApiError(Exception):
    """An error answer: HTTP status, message and optional SQL location."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        position: int | None = None,
        line: int | None = None,
        column: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.position = position
        self.line = line
        self.column = column
        self.headers = headers

    @classmethod
    def from_task_error(cls, error: TaskError) -> ApiError:
        return cls(
            422, error.message, position=error.position, line=error.line, column=error.column
        )

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "message": self.message,
                "position": self.position,
                "line": self.line,
                "column": self.column,
            }
        }

    def response(self) -> JSONResponse:
        return JSONResponse(self.body(), status_code=self.status, headers=self.headers)


def _validation_message(error: RequestValidationError) -> str:
    """`body.sql: Field required; body.options: ...` from pydantic's error list."""
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ()))
        parts.append(f"{where}: {item.get('msg', 'invalid')}" if where else item.get("msg", ""))
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    """Route every exception type the API can meet to the one error shape."""

    async def on_api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return exc.response()

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        return ApiError(422, _validation_message(exc)).response()

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        headers = dict(exc.headers) if exc.headers else None
        return ApiError(exc.status_code, str(exc.detail), headers=headers).response()

    async def on_backend(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: backing service failed: %r", request.method, request.url.path, exc)
        message = f"a backing service is unavailable: {type(exc).__name__}: {exc}"
        return ApiError(503, message).response()

    async def on_bug(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path, exc_info=exc)
        return ApiError(500, f"internal error: {type(exc).__name__}").response()

    app.add_exception_handler(ApiError, on_api_error)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    for backend_error in (KazooException, KazooTimeoutError, RedisError, BackendUnavailableError):
        app.add_exception_handler(backend_error, on_backend)
    app.add_exception_handler(Exception, on_bug)


class BackendUnavailableError(RuntimeError):
    """Kafka (or another service) did not answer an admin request in time."""
