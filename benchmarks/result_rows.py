"""Every row of a result topic, read live (read_committed), with the wall time each arrived.

`ResultReader` sums a count per window, which is all the reference query needs; the Nexmark
check compares whole rows with the oracle's, so `RowCollector` keeps them instead (it counts
nothing per window; it is read as its parent is, one `TopicsReader` for its topics).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from benchmarks.results_reader import ResultReader, decode_row
from mars.engine.joined_values import JoinedValues


@dataclass(slots=True)
class RowCollector(ResultReader):
    """The rows of `topic` in arrival order: (row, wall time it arrived)."""

    rows: list[tuple[dict[str, Any], float]] = field(default_factory=list)

    def add_values(self, values: JoinedValues, arrival: float) -> None:
        rows = [(decode_row(value), arrival) for value in values if value]
        with self._lock:
            self.rows += rows

    def taken(self) -> list[tuple[dict[str, Any], float]]:
        with self._lock:
            return list(self.rows)
