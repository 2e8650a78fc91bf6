"""The one home of a Redis client: `redis.url` carries the credentials
(`redis://user:password@host:port/db`, or `redis://:password@...` for `requirepass`), so every
connection Mars opens authenticates, and the Lua scripts (`mars.store`) run on those same
authenticated connections. `redacted_url` is the URL to show people.

A Redis Cluster is named by `redis+cluster://[user:password@]host:port[,host:port...]`: any
reachable node will do, the client discovers the rest. Every key of a task carries the task's
hash tag (`mars:{task}:`) and every script declares the keys it touches, so each script, and
each multi-key command Mars sends, lands on the one node serving that task's slot.

Connections come from a blocking pool of `POOL_CONNECTIONS` per server: a reducer runs one
owner thread per unit (hundreds with dozens of tasks), and a thread that finds every connection
busy waits for one instead of failing (redis-py's default pool raises `MaxConnectionsError` at
100, which kept busy units recovering for good).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import unquote, urlsplit, urlunsplit

import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.exceptions import RedisClusterException

from mars.config import RedisSettings

RedisClient: TypeAlias = "redis.Redis | RedisCluster"
CLUSTER_SCHEME = "redis+cluster"
# What a Redis call can raise when the server (or a cluster node) fails: redis-py's cluster
# errors about slots and nodes are not `RedisError`s.
REDIS_ERRORS: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)
# What redis-py's RedisClusterException says when the startup nodes refused the login.
_LOGIN_REFUSED = ("username-password", "NOAUTH", "HELLO must be called", "WRONGPASS")
# Connections per Redis server and process: a reducer thread per unit, up to this many at once
# without waiting (32 tasks of 8 buckets); threads beyond it wait their turn.
POOL_CONNECTIONS = 256
POOL_WAIT_S = 30.0  # then redis.ConnectionError, retried like any lost connection


class RedisUrlError(ValueError):
    """`redis.url` cannot be read; the message says what is wrong with it."""


@dataclass(frozen=True, slots=True)
class ClusterUrl:
    """The parts of a `redis+cluster://` URL."""

    nodes: tuple[tuple[str, int], ...]
    username: str | None = None
    password: str | None = None

    @classmethod
    def parse(cls, url: str) -> ClusterUrl:
        prefix = f"{CLUSTER_SCHEME}://"
        if not url.startswith(prefix):
            raise RedisUrlError(f"redis.url {url!r}: a cluster URL starts with {prefix}")
        rest = url[len(prefix) :].split("/", 1)[0]
        credentials, _, hosts = rest.rpartition("@")
        username, password = None, None
        if credentials:
            user, has_password, secret = credentials.partition(":")
            username = unquote(user) or None
            password = unquote(secret) if has_password else None
        nodes = tuple(_host_port(url, node) for node in hosts.split(",") if node)
        if not nodes:
            raise RedisUrlError(f"redis.url {redacted_url(url)!r}: names no host:port")
        return cls(nodes=nodes, username=username, password=password)


def is_cluster_url(url: str) -> bool:
    return url.startswith(f"{CLUSTER_SCHEME}://")


def connect_redis(settings: RedisSettings, **options: Any) -> RedisClient:
    """A client of `redis.url` (lazy for a single server: it connects on its first command; a
    cluster client reads the cluster's slots when it is made, and raises
    `redis.AuthenticationError` or `redis.ConnectionError` when it cannot)."""
    if not is_cluster_url(settings.url):
        pool = redis.BlockingConnectionPool.from_url(
            settings.url, max_connections=POOL_CONNECTIONS, timeout=POOL_WAIT_S, **options
        )
        return redis.Redis(connection_pool=pool)
    parsed = ClusterUrl.parse(settings.url)
    nodes = [
        ClusterNode(host, port)  # type: ignore[no-untyped-call]  # redis-py leaves it untyped
        for host, port in parsed.nodes
    ]
    try:
        return RedisCluster(
            startup_nodes=nodes,
            username=parsed.username,
            password=parsed.password,
            connection_pool_class=redis.BlockingConnectionPool,
            max_connections=POOL_CONNECTIONS,
            **options,
        )
    except RedisClusterException as exc:  # not a RedisError: say which kind it is
        where = f"Redis Cluster at {redacted_url(settings.url)}"
        if any(sign in str(exc) for sign in _LOGIN_REFUSED):
            raise redis.AuthenticationError(f"{where}: {exc}") from exc
        raise redis.ConnectionError(f"{where}: {exc}") from exc


def redacted_url(url: str) -> str:
    """`url` with its password replaced by `***`."""
    if is_cluster_url(url):
        credentials, at, hosts = url[len(CLUSTER_SCHEME) + 3 :].rpartition("@")
        if not at or ":" not in credentials:
            return url
        user = credentials.partition(":")[0]
        return f"{CLUSTER_SCHEME}://{user}:***@{hosts}"
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port is not None else ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}{port}"))


def _host_port(url: str, node: str) -> tuple[str, int]:
    host, _, port = node.rpartition(":")
    if not host or not port.isdigit():
        raise RedisUrlError(f"redis.url {redacted_url(url)!r}: {node!r} is not host:port")
    return host, int(port)
