"""The local cluster: real Kafka (KRaft), ZooKeeper and Redis servers as child processes."""

from mars.local.cluster import ClusterState, LocalCluster, ServiceError

__all__ = ["ClusterState", "LocalCluster", "ServiceError"]
