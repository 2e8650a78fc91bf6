"""The local cluster: real Kafka (KRaft), ZooKeeper and Redis servers as child processes."""

from devtools.local.cluster import ClusterState, LocalCluster, ServiceError

__all__ = ["ClusterState", "LocalCluster", "ServiceError"]
