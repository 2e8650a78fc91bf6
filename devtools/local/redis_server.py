"""Redis server (Debian's `redis-server`): AOF on so a restart keeps every applied batch;
`maxmemory` with `noeviction`, so running out of memory is an error, never lost data.

`start_redis_cluster` starts a Redis Cluster of such servers instead: `masters` primaries
(`redis-1` ..), the 16,384 slots split between them by `redis-cli --cluster create`. No
replicas: a replica is promoted with whatever asynchronous replication had copied, so a
failover can lose acknowledged batches (docs/deployment.md); a killed master is restarted and
replays its AOF, as a single Redis does."""

from __future__ import annotations

import shutil
import subprocess
from functools import partial
from pathlib import Path

import redis

from devtools.local.credentials import LocalCredentials
from devtools.local.process_handle import ProcessHandle, ServiceError, free_port, spawn, wait_until
from mars.clients.redis_connection import CLUSTER_SCHEME, connect_redis
from mars.config import RedisSettings


def redis_binary(name: str = "redis-server") -> str:
    """The path of Debian's `redis-server` (or another binary of it, e.g. `redis-cli`)."""
    path = shutil.which(name)
    if path is None:
        raise ServiceError(
            f"redis: the {name} binary is missing; run `make setup` "
            "(it installs Debian's redis-server package, which brings redis-tools)"
        )
    return path


def start_redis(
    run_dir: Path,
    *,
    port: int | None = None,
    maxmemory_mb: int,
    timeout_s: float,
    credentials: LocalCredentials | None = None,
    name: str = "redis",
    cluster_node_timeout_ms: int | None = None,
) -> ProcessHandle:
    """Start Redis on `port` (a free one if None) over `run_dir/<name>`, reusing its AOF; with
    `credentials`, the default user needs their password (`requirepass`). With
    `cluster_node_timeout_ms`, as a Redis Cluster node (not yet in a cluster)."""
    port = port or free_port()
    data = run_dir / name
    data.mkdir(parents=True, exist_ok=True)
    cluster = (
        []
        if cluster_node_timeout_ms is None
        else [
            "--cluster-enabled", "yes",
            "--cluster-config-file", "nodes.conf",  # in --dir: a restart rejoins the cluster
            "--cluster-node-timeout", str(cluster_node_timeout_ms),
            # The bus port defaults to port + 10,000, neither free nor valid above 55,535.
            "--cluster-port", str(free_port()),
        ]
    )  # fmt: skip
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
        *cluster,
    ]  # fmt: skip
    handle = spawn(name, argv, log=run_dir / "logs" / f"{name}.log")
    wait_until(
        name,
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


def start_redis_cluster(
    run_dir: Path,
    *,
    masters: int,
    maxmemory_mb: int,
    timeout_s: float,
    credentials: LocalCredentials | None = None,
    node_timeout_ms: int = 5_000,
) -> list[ProcessHandle]:
    """Start `masters` Redis Cluster nodes (`redis-1` ..) and join them into one cluster that
    covers every slot; return once every node reports `cluster_state:ok`."""
    handles: list[ProcessHandle] = []
    try:
        for number in range(1, masters + 1):
            handles.append(
                start_redis(
                    run_dir,
                    maxmemory_mb=maxmemory_mb,
                    timeout_s=timeout_s,
                    credentials=credentials,
                    name=f"redis-{number}",
                    cluster_node_timeout_ms=node_timeout_ms,
                )
            )
        ports = [handle.port("--port") for handle in handles]
        auth = ["-a", credentials.password, "--no-auth-warning"] if credentials else []
        created = subprocess.run(
            [
                redis_binary("redis-cli"),
                *auth,
                "--cluster", "create",
                *(f"127.0.0.1:{port}" for port in ports),
                "--cluster-replicas", "0",
                "--cluster-yes",
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )  # fmt: skip
        if created.returncode != 0:
            output = created.stdout + created.stderr
            raise ServiceError(f"redis-cli --cluster create failed:\n{output}")
        for handle, port in zip(handles, ports, strict=True):
            wait_until(
                handle.name,
                partial(probe_redis_cluster_node, redis_url(port, credentials)),
                handle=handle,
                timeout_s=timeout_s,
                what=f"cluster_state:ok on 127.0.0.1:{port}",
            )
    except BaseException:
        for handle in handles:
            handle.stop()
        raise
    return handles


def redis_cluster_url(ports: list[int], credentials: LocalCredentials | None = None) -> str:
    """`redis+cluster://` naming every node (`mars.clients.redis_connection`)."""
    nodes = ",".join(f"127.0.0.1:{port}" for port in ports)
    login = "" if credentials is None else credentials.redis_login()
    return f"{CLUSTER_SCHEME}://{login}{nodes}"


def probe_redis_cluster_node(url: str) -> bool:
    """The node at `url` (a plain `redis://` URL) answers and sees the whole cluster up."""
    client = connect_redis(RedisSettings(url=url), socket_timeout=1, socket_connect_timeout=1)
    assert isinstance(client, redis.Redis), "a node's own URL, not the cluster's"
    try:
        info = client.cluster("INFO")  # parsed into a dict by redis-py
        return bool(info.get("cluster_state") == "ok")
    finally:
        client.close()
