"""Apache ZooKeeper from the Maven Central jars fetched by `make setup`: one standalone server,
or an ensemble of N servers on loopback (a quorum with an elected leader).

An ensemble node `zookeeper-<myid>` lives in `<run_dir>/zookeeper-<myid>/` (its `zoo.cfg`, and
`data/myid`) and logs to `<run_dir>/logs/zookeeper-<myid>.log`; the standalone server keeps
`<run_dir>/zookeeper/` and `logs/zookeeper.log`. Each node's `zoo.cfg` is the last argument of
its command line, so a restart with the same command line is the same node: same ports, same
`myid`, same data folder.
"""

from __future__ import annotations

import re
import shutil
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devtools.local.process_handle import ProcessHandle, ServiceError, free_port, spawn, wait_until

_FOUR_LETTER_WORDS = "ruok,srvr,mntr,cons"
_TICK_MS = 500  # fast: session timeouts from 1 s, elections within about a second
_INIT_LIMIT_TICKS = 10  # a follower connects and syncs with the leader within 5 s
_SYNC_LIMIT_TICKS = 5  # a follower more than 2.5 s behind the leader is dropped


def java_binary() -> str:
    path = shutil.which("java")
    if path is None:
        raise ServiceError("java is missing: install a JDK 17 (Debian's openjdk-17-jre-headless)")
    return path


def jar_classpath(jars_dir: Path, service: str) -> str:
    folder = jars_dir / service
    if not folder.is_dir() or not any(folder.glob("*.jar")):
        raise ServiceError(f"{service}: no jars in {folder}; run `make setup` to fetch them")
    return str(folder / "*")


@dataclass(frozen=True, slots=True, kw_only=True)
class EnsembleNode:
    """One server of an ensemble: its `myid` and its three loopback ports."""

    myid: int
    client_port: int
    peer_port: int  # followers talk to the leader here
    election_port: int  # leader election

    @property
    def name(self) -> str:
        return f"zookeeper-{self.myid}"

    @property
    def server_line(self) -> str:
        return f"server.{self.myid}=127.0.0.1:{self.peer_port}:{self.election_port}"


def zoo_cfg(*, data_dir: Path, client_port: int, ensemble: Sequence[EnsembleNode] = ()) -> str:
    """The text of a `zoo.cfg`: standalone without `ensemble`, else one quorum peer of it."""
    lines = [
        f"tickTime={_TICK_MS}",
        "minSessionTimeout=1000",
        "maxSessionTimeout=60000",
        f"dataDir={data_dir}",
        f"clientPort={client_port}",
        "clientPortAddress=127.0.0.1",
        "admin.enableServer=false",
        f"4lw.commands.whitelist={_FOUR_LETTER_WORDS}",
    ]
    if ensemble:
        lines += [f"initLimit={_INIT_LIMIT_TICKS}", f"syncLimit={_SYNC_LIMIT_TICKS}"]
        lines += [node.server_line for node in ensemble]
    return "\n".join([*lines, ""])


def client_port(handle: ProcessHandle) -> int:
    """The client port of a started node, from its `zoo.cfg` (its last argument)."""
    for line in Path(handle.argv[-1]).read_text().splitlines():
        if line.startswith("clientPort="):
            return int(line.split("=", 1)[1])
    raise ServiceError(f"{handle.name}: no clientPort in {handle.argv[-1]}")


def start_zookeeper(
    run_dir: Path, *, jars_dir: Path, port: int | None = None, timeout_s: float
) -> ProcessHandle:
    """One standalone server (`ZooKeeperServerMain`); returns once it serves."""
    port = port or free_port()
    home = run_dir / "zookeeper"
    (home / "data").mkdir(parents=True, exist_ok=True)
    config = home / "zoo.cfg"
    config.write_text(zoo_cfg(data_dir=home / "data", client_port=port))
    argv = _argv(jars_dir, "org.apache.zookeeper.server.ZooKeeperServerMain", config)
    handle = spawn("zookeeper", argv, log=run_dir / "logs" / "zookeeper.log")
    _wait_serving(handle, port, timeout_s=timeout_s)
    return handle


def start_zookeeper_ensemble(
    run_dir: Path, *, jars_dir: Path, nodes: int, timeout_s: float
) -> list[ProcessHandle]:
    """`nodes` quorum peers (`QuorumPeerMain`), `zookeeper-1` .. `zookeeper-<nodes>`; returns
    once every one serves, i.e. once the quorum has elected a leader and each node has joined
    it. If one fails, the others are stopped too."""
    if nodes < 2:
        raise ServiceError(f"a ZooKeeper ensemble needs at least 2 nodes, not {nodes}")
    ports = _distinct_free_ports(3 * nodes)
    ensemble = [
        EnsembleNode(
            myid=myid,
            client_port=ports[3 * myid - 3],
            peer_port=ports[3 * myid - 2],
            election_port=ports[3 * myid - 1],
        )
        for myid in range(1, nodes + 1)
    ]
    handles: list[ProcessHandle] = []
    try:
        for node in ensemble:  # all first: no node serves before a quorum is up
            home = run_dir / node.name
            (home / "data").mkdir(parents=True, exist_ok=True)
            (home / "data" / "myid").write_text(f"{node.myid}\n")
            config = home / "zoo.cfg"
            config.write_text(
                zoo_cfg(data_dir=home / "data", client_port=node.client_port, ensemble=ensemble)
            )
            argv = _argv(jars_dir, "org.apache.zookeeper.server.quorum.QuorumPeerMain", config)
            handles.append(spawn(node.name, argv, log=run_dir / "logs" / f"{node.name}.log"))
        for node, handle in zip(ensemble, handles, strict=True):
            _wait_serving(handle, node.client_port, timeout_s=timeout_s)
    except ServiceError:
        for handle in handles:
            handle.stop()
        raise
    return handles


def respawn_zookeeper(handle: ProcessHandle, *, timeout_s: float) -> ProcessHandle:
    """Start a stopped (or killed) node again with its command line; return once it serves
    again (an ensemble node: once it has rejoined the quorum)."""
    again = spawn(handle.name, handle.argv, log=handle.log)
    _wait_serving(again, client_port(handle), timeout_s=timeout_s)
    return again


def probe_zookeeper(port: int) -> bool:
    """`ruok` must say imok *and* `srvr` must show a serving server (ruok alone answers even
    when the server thread died, or while an ensemble node has no quorum)."""
    return _four_letter(port, b"ruok") == b"imok" and b"Mode: " in _four_letter(port, b"srvr")


def zookeeper_mode(port: int) -> str | None:
    """`leader`, `follower` or `standalone` as `srvr` says; None while the node does not serve
    (down, starting, or without a quorum)."""
    try:
        answer = _four_letter(port, b"srvr").decode(errors="replace")
    except OSError:
        return None
    found = re.search(r"^Mode: (\w+)", answer, re.MULTILINE)
    return found.group(1) if found else None


def session_ids(port: int) -> set[int]:
    """The ids of the client sessions connected to this node (`cons`); empty if it is down."""
    try:
        answer = _four_letter(port, b"cons").decode(errors="replace")
    except OSError:
        return set()
    return {int(sid, 16) for sid in re.findall(r"sid=0x([0-9a-f]+)", answer)}


def _distinct_free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        if (port := free_port()) not in ports:
            ports.append(port)
    return ports


def _argv(jars_dir: Path, main_class: str, config: Path) -> list[str]:
    return [
        java_binary(),
        "-Xmx256m",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp", jar_classpath(jars_dir, "zookeeper"),
        main_class,
        str(config),
    ]  # fmt: skip


def _wait_serving(handle: ProcessHandle, port: int, *, timeout_s: float) -> None:
    wait_until(
        handle.name,
        lambda: probe_zookeeper(port),
        handle=handle,
        timeout_s=timeout_s,
        what=f"`ruok` and `srvr` on 127.0.0.1:{port}",
    )


def _four_letter(port: int, command: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(command)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)
