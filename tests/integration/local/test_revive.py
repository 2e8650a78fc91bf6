"""`LocalCluster.revive`: a server that is not running is started again with its command line,
and one that exits while starting (its port still held a moment) is spawned again."""

from __future__ import annotations

import sys
from pathlib import Path

from devtools.local import ClusterState, LocalCluster
from devtools.local.cluster import ProcessRecord
from devtools.local.process_handle import free_port, port_is_open, spawn
from mars.config import load_settings

# Exits at its first start (leaving a marker), then listens: a server whose first restart lost
# the race for its port.
FLAKY_SERVER = """
import pathlib, socket, sys, time
marker, port = pathlib.Path(sys.argv[1]), int(sys.argv[2])
if not marker.exists():
    marker.touch()
    sys.exit(1)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen()
time.sleep(120)
"""


def test_a_dead_server_is_started_again_even_if_its_first_start_exits(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, "-c", FLAKY_SERVER, str(tmp_path / "started-once"), str(port)]
    # A server that ran and died; `true` could exit before spawn reads its start time.
    dead = spawn("worker", ["sleep", "60"], log=tmp_path / "worker.log")
    dead.kill()
    record = ProcessRecord(
        name="worker",
        role="spark-worker",  # a server role whose probe is its port
        pid=dead.pid,
        started=dead.started,
        argv=argv,
        log=str(tmp_path / "worker.log"),
        address=f"127.0.0.1:{port}",
    )
    cluster = LocalCluster(settings=load_settings(), run_dir=tmp_path)
    cluster.state = ClusterState(
        run_dir=str(tmp_path), kafka_bootstrap="", zk_hosts="", redis_url="", processes=[record]
    )
    try:
        assert cluster.revive() == ["worker"]
        assert (tmp_path / "started-once").exists()  # the first spawn exited
        assert record.handle().is_running() and port_is_open(port)
        assert cluster.revive() == []
    finally:
        record.handle().stop()
