"""Restarting one particular ZooKeeper node of a role by its name, with stand-in `sleep`
processes (no JVM, no cluster of the session); its `zoo.cfg`: tests/unit/local/."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devtools.local import ClusterState, LocalCluster, ServiceError
from devtools.local.cluster import ProcessRecord
from devtools.local.process_handle import spawn
from mars.config import load_settings


def test_restart_by_name_restarts_that_node_only(tmp_path: Path) -> None:
    cluster = LocalCluster(settings=load_settings(), run_dir=tmp_path)
    argv = [sys.executable, "-c", "import time; time.sleep(60)"]
    records = []
    for name in ("zookeeper-1", "zookeeper-2", "zookeeper-3"):
        handle = spawn(name, argv, log=tmp_path / "logs" / f"{name}.log")
        records.append(
            ProcessRecord(
                name=name,
                role="zookeeper",
                pid=handle.pid,
                started=handle.started,
                argv=argv,
                log=str(handle.log),
                address=None,  # no probe: a stand-in process counts as healthy
            )
        )
    before = {r.name: r.handle() for r in records}
    cluster.state = ClusterState(
        run_dir=str(tmp_path), kafka_bootstrap="", zk_hosts="", redis_url="", processes=records
    )
    try:
        again = cluster.restart("zookeeper", name="zookeeper-2")
        assert not before["zookeeper-2"].is_running()
        assert again.is_running() and again.name == "zookeeper-2"
        assert before["zookeeper-1"].is_running() and before["zookeeper-3"].is_running()
        saved = ClusterState.load(tmp_path)
        assert saved is not None
        assert {p.name: p.pid for p in saved.processes}["zookeeper-2"] == again.pid
        with pytest.raises(ServiceError, match="zookeeper-1, zookeeper-2, zookeeper-3"):
            cluster.restart("zookeeper", name="zookeeper-9")
    finally:
        assert sorted(cluster.down()) == ["zookeeper-1", "zookeeper-2", "zookeeper-3"]
    assert not any(handle.is_running() for handle in before.values())
