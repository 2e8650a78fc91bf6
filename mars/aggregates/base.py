"""The aggregate abstraction: a commutative monoid plus its vectorised batch form.

Every aggregate is used in three places with the same state type: the mapper and the Spark job
compute a batch's partial state per group with Polars (`partial_exprs` + `states_from_frame`,
no per-record Python), the reducer merges partial states (`merge`) in SEQ order and reads the
final value (`result`). `merge` is associative and commutative and `initial()` is its identity,
so partials can be merged in any grouping and order (AVG is carried as (sum, count) for this).

States are plain Python values and never mutated in place: `add` and `merge` return new states.
`to_wire` / `from_wire` map a state to and from msgpack-encodable values; the versioned envelope
around them lives in `mars.aggregates.encoding` and `mars.engine.dataset`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Generic, TypeVar

import polars as pl

from mars.tasks.spec import AggFunc

S = TypeVar("S")

# The fields of the input of a `by_event_time` aggregate (see `timed_input`).
TIMED_TIME = "time"
TIMED_VALUE = "value"


def timed_input(time: pl.Expr, value: pl.Expr) -> pl.Expr:
    """The argument a `by_event_time` aggregate's `partial_exprs` reads: a struct of each
    record's event time (epoch ms) and value."""
    return pl.struct(time.alias(TIMED_TIME), value.alias(TIMED_VALUE))


class Aggregate(ABC, Generic[S]):
    """One aggregate function over one argument (or none, for COUNT(*))."""

    func: ClassVar[AggFunc]
    # Whether the argument must be numeric (SUM, AVG): other values make a record bad.
    numeric_argument: ClassVar[bool] = False
    # Whether the partial holds the argument's sum (SUM, AVG): the mapper sums an integer
    # argument in Int128, since Polars' Int64 sum wraps silently (see `sum.summed_values`).
    sums_argument: ClassVar[bool] = False
    # Whether the aggregate folds (event time, value) pairs (FIRST, LAST): then `add` takes a
    # `(time_ms, value)` tuple and `partial_exprs` a `timed_input` struct.
    by_event_time: ClassVar[bool] = False

    @classmethod
    def with_parameters(cls, parameters: tuple[float, ...]) -> Aggregate[Any]:
        """The aggregate of a call with these constant arguments (none for most aggregates);
        ValueError names what is wrong with them."""
        if parameters:
            raise ValueError(f"{cls.func.value.upper()} takes no parameters")
        return cls()

    @property
    def parameters(self) -> tuple[float, ...]:
        """The constant arguments this aggregate was made with (see `with_parameters`)."""
        return ()

    @abstractmethod
    def initial(self) -> S:
        """The identity of `merge`: the state of an empty group."""

    @abstractmethod
    def add(self, state: S, value: Any) -> S:
        """Fold one input value into a state (None is SQL NULL)."""

    @abstractmethod
    def merge(self, left: S, right: S) -> S:
        """Combine two partial states."""

    @abstractmethod
    def result(self, state: S) -> Any:
        """The final SQL value of a state."""

    @abstractmethod
    def partial_exprs(self, argument: pl.Expr | None, prefix: str) -> list[pl.Expr]:
        """Polars expressions computing a group's partial state inside `group_by().agg()`.

        Every output column name starts with `prefix`.
        """

    @abstractmethod
    def states_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[S]:
        """Turn the columns made by `partial_exprs` into one state per row of `frame`."""

    def wires_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Any]:
        """`to_wire` of each state of `states_from_frame` (`wire_column`'s values if it has
        them)."""
        column = self.wire_column(frame, prefix)
        if column is not None:
            return column.to_list()
        return [self.to_wire(state) for state in self.states_from_frame(frame, prefix)]

    def wire_column(self, frame: pl.DataFrame, prefix: str) -> pl.Series | None:
        """The wire forms as one column, whose values (`to_list`) are `wires_from_frame`'s,
        where the state is a scalar of the frame (a data set's msgpack is then written from
        the column, with no Python object per group); None otherwise."""
        return None

    def to_wire(self, state: S) -> Any:
        """A msgpack-encodable form of `state` (identity for scalar states)."""
        return state

    def from_wire(self, wire: Any) -> S:
        """Inverse of `to_wire`."""
        state: S = wire
        return state

    def fold(self, values: list[Any]) -> S:
        """Reference semantics: the state of a group holding `values` (used by tests)."""
        state = self.initial()
        for value in values:
            state = self.add(state, value)
        return state


class SketchAggregate(Aggregate[bytes], ABC):
    """An aggregate whose state is a sketch's serialized bytes, which are also its wire form."""

    def wires_from_frame(self, frame: pl.DataFrame, prefix: str) -> list[Any]:
        return list(self.states_from_frame(frame, prefix))

    def to_wire(self, state: bytes) -> Any:
        return state

    def from_wire(self, wire: Any) -> bytes:
        return bytes(wire)
