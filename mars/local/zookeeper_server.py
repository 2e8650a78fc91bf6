"""Apache ZooKeeper standalone server from the Maven Central jars fetched by `make setup`."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

from mars.local.process import ProcessHandle, ServiceError, free_port, spawn, wait_until


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


def start_zookeeper(
    run_dir: Path, *, jars_dir: Path, port: int | None = None, timeout_s: float
) -> ProcessHandle:
    port = port or free_port()
    home = run_dir / "zookeeper"
    (home / "data").mkdir(parents=True, exist_ok=True)
    config = home / "zoo.cfg"
    config.write_text(
        "\n".join(
            [
                "tickTime=500",
                "minSessionTimeout=1000",
                "maxSessionTimeout=60000",
                f"dataDir={home / 'data'}",
                f"clientPort={port}",
                "clientPortAddress=127.0.0.1",
                "admin.enableServer=false",
                "4lw.commands.whitelist=ruok,srvr,mntr",
                "",
            ]
        )
    )
    argv = [
        java_binary(),
        "-Xmx256m",
        "-Dzookeeper.jmx.log4j.disable=true",
        "-cp", jar_classpath(jars_dir, "zookeeper"),
        "org.apache.zookeeper.server.ZooKeeperServerMain",
        str(config),
    ]  # fmt: skip
    handle = spawn("zookeeper", argv, log=run_dir / "logs" / "zookeeper.log")
    wait_until(
        "zookeeper",
        lambda: probe_zookeeper(port),
        handle=handle,
        timeout_s=timeout_s,
        what=f"`ruok` and `srvr` on 127.0.0.1:{port}",
    )
    return handle


def probe_zookeeper(port: int) -> bool:
    """`ruok` must say imok *and* `srvr` must show a serving server (ruok alone answers even
    when the server thread died)."""
    return _four_letter(port, b"ruok") == b"imok" and b"Mode: " in _four_letter(port, b"srvr")


def _four_letter(port: int, command: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
        sock.sendall(command)
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
        return b"".join(chunks)
