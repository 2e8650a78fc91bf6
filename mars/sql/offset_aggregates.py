"""ksqlDB's EARLIEST_BY_OFFSET / LATEST_BY_OFFSET, rejected with a pointer to FIRST / LAST.

ksqlDB repartitions a stream by its group key first, so a group's records all sit in one
partition, whose offsets order them. A Mars group spans the partitions of its topic, and
offsets of different partitions say nothing about which record came first; the honest order
across partitions is event time, which FIRST and LAST use (docs/semantics.md).
"""

from __future__ import annotations

from sqlglot import exp

from mars.sql.errors import TaskError
from mars.sql.positions import node_position

_BY_OFFSET = {"earliest_by_offset": "FIRST", "latest_by_offset": "LAST"}


def reject_offset_aggregates(node: exp.Expr) -> None:
    """TaskError at the first EARLIEST_BY_OFFSET / LATEST_BY_OFFSET call in `node`."""
    calls = [call for call in node.find_all(exp.Anonymous) if call.name.lower() in _BY_OFFSET]
    if not calls:
        return
    call = min(calls, key=lambda c: node_position(c) or 0)
    instead = _BY_OFFSET[call.name.lower()]
    raise TaskError(
        f"{call.name.upper()} is not supported: a group's records span partitions, whose "
        f"offsets do not order them; use {instead}(col), the value at the "
        f"{'earliest' if instead == 'FIRST' else 'latest'} event time",
        position=node_position(call),
    )
