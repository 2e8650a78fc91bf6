"""The one home of a Redis client: `redis.url` carries the credentials
(`redis://user:password@host:port/db`, or `redis://:password@...` for `requirepass`), so every
connection Mars opens authenticates, and the Lua scripts (`mars.store`) run on those same
authenticated connections. `redacted_url` is the URL to show people."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis

from mars.config import RedisSettings


def connect_redis(settings: RedisSettings, **options: Any) -> redis.Redis[bytes]:
    """A client of `redis.url` (lazy: it connects on its first command)."""
    client: redis.Redis[bytes] = redis.Redis.from_url(settings.url, **options)
    return client


def redacted_url(url: str) -> str:
    """`url` with its password replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))
