"""Mars's own processes (mapper, reducer, api) started beside the local servers.

They are ordinary `mars <role>` child processes with the cluster's `MARS_...` variables, so a
test can SIGKILL one and start another exactly as an operator would. Each one's address (the
API's port; a mapper's or reducer's Prometheus `/metrics` on a free port) is recorded for
`mars local status`, and a start waits until it answers there.
"""

from __future__ import annotations

import grp
import os
import sys
from pathlib import Path

from devtools.local.cluster import ClusterState, LocalCluster, ProcessRecord
from devtools.local.process_handle import ProcessHandle, free_port, port_is_open, spawn, wait_until

ROLES = ("mapper", "reducer", "api")


def start_role(
    cluster: LocalCluster,
    role: str,
    *,
    name: str | None = None,
    extra_env: dict[str, str] | None = None,
    api_port: int | None = None,
    timeout_s: float = 30.0,
    group: str | None = None,
) -> ProcessHandle:
    """Start `mars <role>` against the cluster and remember it for `down`. `group`: the
    process's group (`setpriv`, as root; the user stays), so a firewall rule can single out
    its traffic (`-m owner --gid-owner`, the network-partition test)."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
    state = cluster.state
    assert state is not None, "the cluster is not up"
    name = name or _next_name(state, role)
    env = {**os.environ, **state.env(), **(extra_env or {})}
    if role == "api":
        port = api_port or int(env.get("MARS_API__PORT", "8640"))
        env["MARS_API__PORT"] = str(port)
    else:  # its Prometheus /metrics, on a free port the status lists
        port = free_port()
        env["MARS_METRICS__HOST"] = "127.0.0.1"
        env["MARS_METRICS__PORT"] = str(port)
    address = f"127.0.0.1:{port}"
    argv = [sys.executable, "-m", "cli.main", role]
    if group is not None:
        argv = ["setpriv", f"--regid={grp.getgrnam(group).gr_gid}", "--clear-groups", *argv]
    handle = spawn(name, argv, log=Path(state.run_dir) / "logs" / f"{name}.log", env=env)
    wait_until(
        name,
        lambda: port_is_open(port),
        handle=handle,
        timeout_s=timeout_s,
        what=f"HTTP on {address}",
    )
    cluster.add_process(
        ProcessRecord(
            name=name,
            role=role,
            pid=handle.pid,
            started=handle.started,
            argv=list(argv),
            log=str(handle.log),
            address=address,
        )
    )
    return handle


def scale_role(cluster: LocalCluster, role: str, count: int) -> tuple[list[str], list[str]]:
    """Run exactly `count` processes of `role` (mapper or reducer): start the missing ones,
    stop the newest extra ones with SIGTERM (a mapper leaves its group and a reducer hands its
    units over). Records of processes that died are dropped. Returns (started, stopped)."""
    if role not in ("mapper", "reducer"):
        raise ValueError(f"only mappers and reducers scale, not {role!r}")
    state = cluster.state
    assert state is not None, "the cluster is not up"
    running = []
    for record in [p for p in state.processes if p.role == role]:
        if record.handle().is_running():
            running.append(record)
        else:
            cluster.remove_process(record.name)
    started = [start_role(cluster, role).name for _ in range(count - len(running))]
    stopped = []
    for record in sorted(running, key=lambda r: r.started)[count:][::-1]:
        record.handle().stop()
        cluster.remove_process(record.name)
        stopped.append(record.name)
    return started, stopped


def _next_name(state: ClusterState, role: str) -> str:
    taken = {p.name for p in state.processes}
    index = 1
    while f"{role}-{index}" in taken:
        index += 1
    return f"{role}-{index}"


def process_url(role: str, address: str | None) -> str:
    """Where to reach a process, for people: a mapper's or reducer's address is its Prometheus
    `/metrics`; the API serves the dashboard at `/ui`; Spark's master and workers their web
    UI; a server's address as it is."""
    if address is None:
        return ""
    if role in ("mapper", "reducer"):
        return f"http://{address}/metrics"
    if role == "api":
        return f"http://{address}/ui"
    if role in ("spark-master", "spark-worker"):
        return f"http://{address}/"  # its web UI
    return address
