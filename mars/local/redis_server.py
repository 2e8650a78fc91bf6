"""Redis server (Debian's `redis-server`): AOF on so a restart keeps every applied batch;
`maxmemory` with `noeviction`, so running out of memory is an error, never lost data."""

from __future__ import annotations

import shutil
from pathlib import Path

from mars.clients.redis_connection import connect_redis
from mars.config import RedisSettings
from mars.local.credentials import LocalCredentials
from mars.local.process import ProcessHandle, ServiceError, free_port, spawn, wait_until


def redis_binary() -> str:
    path = shutil.which("redis-server")
    if path is None:
        raise ServiceError(
            "redis: the redis-server binary is missing; run `make setup` "
            "(it installs Debian's redis-server package)"
        )
    return path


def start_redis(
    run_dir: Path,
    *,
    port: int | None = None,
    maxmemory_mb: int,
    timeout_s: float,
    credentials: LocalCredentials | None = None,
) -> ProcessHandle:
    """Start Redis on `port` (a free one if None) over `run_dir/redis`, reusing its AOF; with
    `credentials`, the default user needs their password (`requirepass`)."""
    port = port or free_port()
    data = run_dir / "redis"
    data.mkdir(parents=True, exist_ok=True)
    argv = [
        redis_binary(),
        "--bind", "127.0.0.1",
        "--port", str(port),
        "--dir", str(data),
        "--appendonly", "yes",
        "--appendfsync", "everysec",
        "--save", "",
        "--protected-mode", "no",
        "--maxmemory", f"{maxmemory_mb}mb",
        "--maxmemory-policy", "noeviction",
        *(["--requirepass", credentials.password] if credentials else []),
    ]  # fmt: skip
    handle = spawn("redis", argv, log=run_dir / "logs" / "redis.log")
    wait_until(
        "redis",
        lambda: probe_redis(redis_url(port, credentials)),
        handle=handle,
        timeout_s=timeout_s,
        what=f"PING on 127.0.0.1:{port}",
    )
    return handle


def redis_url(port: int, credentials: LocalCredentials | None = None) -> str:
    if credentials is not None:
        return credentials.redis_url(port)
    return f"redis://127.0.0.1:{port}/0"


def probe_redis(url: str) -> bool:
    client = connect_redis(RedisSettings(url=url), socket_timeout=1, socket_connect_timeout=1)
    try:
        return bool(client.ping())
    finally:
        client.close()
