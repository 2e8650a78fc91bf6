"""Reducer cluster coordination in ZooKeeper: election, the leader's assignment, placement.

What the reducers write into ZooKeeper and others read (members, the assignment and its units,
the cluster view) is `mars.registry`'s: the API and the CLI read it without the reducer."""

from reducer.coordination.balance import balance_load
from reducer.coordination.coordinator import (
    AssignmentCallback,
    ReducerCoordinator,
    SuspendCallback,
)
from reducer.coordination.leader import AssignmentLeader, LeadershipLostError, Refinement
from reducer.coordination.placement import HashRing, place

__all__ = [
    "AssignmentCallback",
    "AssignmentLeader",
    "HashRing",
    "LeadershipLostError",
    "ReducerCoordinator",
    "Refinement",
    "SuspendCallback",
    "balance_load",
    "place",
]
