"""Reducer cluster coordination in ZooKeeper: membership, election, assignment, placement."""

from reducer.coordination.assignment import Assignment, AssignmentFormatError, units_of
from reducer.coordination.balance import balance_load
from reducer.coordination.cluster_view import cluster_view
from reducer.coordination.coordinator import (
    AssignmentCallback,
    ReducerCoordinator,
    SuspendCallback,
)
from reducer.coordination.leader import AssignmentLeader, LeadershipLostError, Refinement
from reducer.coordination.membership import MemberIdInUseError, MemberInfo, list_members
from reducer.coordination.placement import HashRing, place
from reducer.coordination.units import Unit

__all__ = [
    "Assignment",
    "AssignmentCallback",
    "AssignmentFormatError",
    "AssignmentLeader",
    "HashRing",
    "LeadershipLostError",
    "MemberIdInUseError",
    "MemberInfo",
    "ReducerCoordinator",
    "Refinement",
    "SuspendCallback",
    "Unit",
    "balance_load",
    "cluster_view",
    "list_members",
    "place",
    "units_of",
]
