"""The KRaft cluster id handed to `StorageTool format -t` must never look like an option."""

from __future__ import annotations

import base64

from devtools.local.kafka_server import new_cluster_id


def test_cluster_ids_are_valid_and_never_start_with_a_dash() -> None:
    ids = {new_cluster_id() for _ in range(5000)}
    assert len(ids) == 5000
    for cluster_id in ids:
        assert not cluster_id.startswith("-")
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
