"""A ZooKeeper node's `zoo.cfg`, standalone or one peer of an ensemble, and restarting one
particular node of a role by its name (with stand-in `sleep` processes, no JVM)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devtools.local import ClusterState, LocalCluster, ServiceError
from devtools.local.cluster import ProcessRecord
from devtools.local.process_handle import spawn
from devtools.local.zookeeper_server import EnsembleNode, zoo_cfg
from mars.config import load_settings

NODES = [
    EnsembleNode(myid=1, client_port=2181, peer_port=2888, election_port=3888),
    EnsembleNode(myid=2, client_port=2182, peer_port=2889, election_port=3889),
    EnsembleNode(myid=3, client_port=2183, peer_port=2890, election_port=3890),
]


def _settings(text: str) -> dict[str, str]:
    assert text.endswith("\n")
    return dict(line.split("=", 1) for line in text.splitlines())


def test_a_standalone_config_names_no_peers() -> None:
    config = _settings(zoo_cfg(data_dir=Path("/run/zookeeper/data"), client_port=2181))
    assert config["clientPort"] == "2181"
    assert config["clientPortAddress"] == "127.0.0.1"
    assert config["dataDir"] == "/run/zookeeper/data"
    assert config["tickTime"] == "500"
    assert not any(key.startswith("server.") for key in config)
    assert "initLimit" not in config and "syncLimit" not in config


def test_an_ensemble_config_lists_every_peer_with_its_two_ports() -> None:
    text = zoo_cfg(data_dir=Path("/run/zookeeper-2/data"), client_port=2182, ensemble=NODES)
    config = _settings(text)
    assert config["clientPort"] == "2182"
    assert config["server.1"] == "127.0.0.1:2888:3888"
    assert config["server.2"] == "127.0.0.1:2889:3889"
    assert config["server.3"] == "127.0.0.1:2890:3890"
    assert int(config["initLimit"]) * int(config["tickTime"]) >= 5000
    assert int(config["syncLimit"]) >= 2
    assert {"srvr", "cons"} <= set(config["4lw.commands.whitelist"].split(","))
    assert [node.name for node in NODES] == ["zookeeper-1", "zookeeper-2", "zookeeper-3"]


def test_a_cluster_needs_at_least_one_zookeeper_node(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        LocalCluster(settings=load_settings(), run_dir=tmp_path, zookeeper_nodes=0)


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
