"""A read-only snapshot of the reducer cluster, for `GET /cluster` and the CLI."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from mars.registry.membership import list_members
from mars.registry.paths import ZkPaths
from mars.registry.unit_assignment import read_assignment


def _leader(client: KazooClient, paths: ZkPaths) -> str | None:
    if client.exists(paths.election) is None:
        return None  # do not create nodes from a read-only view
    try:
        contenders = client.Election(paths.election).contenders()
    except NoNodeError:
        return None
    return str(contenders[0]) if contenders else None


def cluster_view(client: KazooClient, *, root: str = "/mars") -> dict[str, Any]:
    """{"leader": id | None, "members": {id: {host, pid, started_ms, metrics, units}},
    "assignment": {"generation", "leader", "units": {"<task>/<bucket>": member},
                   "moves": {"<task>/<bucket>": member}} | None}  (`moves`: placed by load).

    `members[id]["units"]` counts the units assigned to that member.
    """
    paths = ZkPaths(root=root)
    assignment = read_assignment(client, paths.assignment, lenient=True)
    units = assignment.units if assignment else {}
    members = {
        member_id: {
            "host": info.host,
            "pid": info.pid,
            "started_ms": info.started_ms,
            "metrics": info.metrics,
            "units": sum(1 for owner in units.values() if owner == member_id),
        }
        for member_id, info in list_members(client, paths).items()
    }
    return {
        "leader": _leader(client, paths),
        "members": members,
        "assignment": None
        if assignment is None
        else {
            "generation": assignment.generation,
            "leader": assignment.leader,
            "units": {unit.key: member for unit, member in sorted(units.items())},
            "moves": {unit.key: member for unit, member in sorted(assignment.moves.items())},
        },
    }
