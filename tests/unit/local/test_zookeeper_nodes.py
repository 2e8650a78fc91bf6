"""A ZooKeeper node's `zoo.cfg`, standalone or one peer of an ensemble (restarting one node
of a role by its name, with processes: tests/integration/local/test_zookeeper_nodes.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.local import LocalCluster
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
