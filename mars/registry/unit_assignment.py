"""The assignment node: which reducer owns which (task, bucket), as written by the leader.

`/mars/assignment` holds UTF-8 JSON

    {"generation": 7, "leader": "reducer-a", "units": {"clicks/0": "reducer-b", ...},
     "moves": {"clicks/3": "reducer-c"}}

`moves` are the leader's load moves (docs/reducer.md): units placed away from where consistent
hashing puts them, kept by the next leader as long as their member lives.

`generation` grows by one with every write (a new leader continues from the stored value), so
logs and metrics can tell assignments apart; the ZooKeeper data version is kept too, for the
leader's compare-and-set.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from mars.registry import TaskRecord, TaskStatus
from mars.registry.units import Unit


class UnitAssignmentFormatError(ValueError):
    """The assignment node holds something that is not a valid assignment."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnitAssignment:
    """One generation of the unit -> member map."""

    generation: int
    leader: str
    units: Mapping[Unit, str] = field(default_factory=dict)
    moves: Mapping[Unit, str] = field(default_factory=dict)
    version: int = -1  # ZooKeeper data version it was read at; -1 when not read

    def owned_by(self, member_id: str) -> frozenset[Unit]:
        return frozenset(unit for unit, member in self.units.items() if member == member_id)

    def to_bytes(self) -> bytes:
        doc = {
            "generation": self.generation,
            "leader": self.leader,
            "units": {unit.key: member for unit, member in sorted(self.units.items())},
            "moves": {unit.key: member for unit, member in sorted(self.moves.items())},
        }
        return json.dumps(doc, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, data: bytes, *, version: int = -1) -> UnitAssignment:
        try:
            doc = json.loads(data)
            units = {Unit.parse(key): str(member) for key, member in doc["units"].items()}
            moves = {Unit.parse(key): str(member) for key, member in doc.get("moves", {}).items()}
            return cls(
                generation=int(doc["generation"]),
                leader=str(doc["leader"]),
                units=units,
                moves=moves,
                version=version,
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UnitAssignmentFormatError(f"bad assignment node: {exc}") from exc


def read_assignment(
    client: KazooClient, path: str, *, lenient: bool = False
) -> UnitAssignment | None:
    """The stored assignment, or None before the first leader wrote one.

    An empty node reads as generation 0 with no units; a malformed one raises
    `UnitAssignmentFormatError` unless `lenient`, which reads it as empty too (the leader uses
    that to overwrite it).
    """
    try:
        data, stat = client.get(path)
    except NoNodeError:
        return None
    if data:
        try:
            return UnitAssignment.from_bytes(data, version=stat.version)
        except UnitAssignmentFormatError:
            if not lenient:
                raise
    return UnitAssignment(generation=0, leader="", units={}, version=stat.version)


def units_of(tasks: Iterable[TaskRecord]) -> set[Unit]:
    """Every (task, bucket) reducers must own: all buckets of the RUNNING tasks."""
    return {
        Unit(record.task_id, bucket)
        for record in tasks
        if record.status is TaskStatus.RUNNING
        for bucket in range(record.spec.options.layout.unit_count)
    }
