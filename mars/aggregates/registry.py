"""Which `Aggregate` implements an `AggregateCall` of a task."""

from __future__ import annotations

from typing import Any

from mars.aggregates.average import Average
from mars.aggregates.base import Aggregate
from mars.aggregates.counting import CountAll, CountNonNull
from mars.aggregates.distinct import CountDistinct
from mars.aggregates.extremum import Max, Min
from mars.aggregates.first_last import First, Last
from mars.aggregates.frequent import TopK
from mars.aggregates.hll import ApproxCountDistinct
from mars.aggregates.quantiles import ApproxPercentile, ApproxPercentiles
from mars.aggregates.spread import StddevPop, StddevSamp, VarPop, VarSamp
from mars.aggregates.sum import Sum
from mars.tasks.spec import AggFunc, AggregateCall, TaskSpec, WatermarkMode

_BY_FUNC: dict[AggFunc, type[Aggregate[Any]]] = {
    AggFunc.SUM: Sum,
    AggFunc.MIN: Min,
    AggFunc.MAX: Max,
    AggFunc.AVG: Average,
    AggFunc.COUNT_DISTINCT: CountDistinct,
    AggFunc.APPROX_COUNT_DISTINCT: ApproxCountDistinct,
    AggFunc.VAR_POP: VarPop,
    AggFunc.VAR_SAMP: VarSamp,
    AggFunc.STDDEV_POP: StddevPop,
    AggFunc.STDDEV_SAMP: StddevSamp,
    AggFunc.FIRST: First,
    AggFunc.LAST: Last,
    AggFunc.APPROX_PERCENTILE: ApproxPercentile,
    AggFunc.APPROX_PERCENTILES: ApproxPercentiles,
    AggFunc.TOPK: TopK,
}

# Wire name of COUNT(*), distinct from COUNT(expr): both share AggFunc.COUNT but differ in state
# semantics only at add() time, so the wire form (an int) is the same.
COUNT_ALL_WIRE_NAME = "count_all"


def aggregate_for(
    func: AggFunc, *, has_argument: bool, parameters: tuple[float, ...] = ()
) -> Aggregate[Any]:
    """The aggregate implementing `func`; COUNT without argument is COUNT(*).

    ValueError when the call is not one the aggregate accepts.
    """
    if func is AggFunc.COUNT:
        return CountNonNull() if has_argument else CountAll()
    if not has_argument:
        raise ValueError(f"{func.value} needs an argument")
    return _BY_FUNC[func].with_parameters(parameters)


def aggregate_for_call(call: AggregateCall) -> Aggregate[Any]:
    return aggregate_for(
        call.func, has_argument=call.argument is not None, parameters=call.parameters
    )


def aggregates_for(calls: tuple[AggregateCall, ...]) -> tuple[Aggregate[Any], ...]:
    """One aggregate per call, in the task's order."""
    return tuple(aggregate_for_call(call) for call in calls)


def state_aggregates(spec: TaskSpec) -> tuple[Aggregate[Any], ...]:
    """The aggregates whose states a task's partials carry: one per call, then, for session
    windows, a MAX over event time holding each session's last record time, and for
    `watermark = 'key'` one holding the key's latest time (its clock at the reducer)."""
    calls = aggregates_for(spec.aggregates)
    if spec.window.session or spec.options.watermark is WatermarkMode.KEY:
        return (*calls, Max())
    return calls


def wire_name(aggregate: Aggregate[Any]) -> str:
    """The name recorded in encoded partials, from which `from_wire_name` rebuilds it:
    the function, then its parameters if any (`approx_percentile:0.5,0.99`)."""
    if isinstance(aggregate, CountAll):
        return COUNT_ALL_WIRE_NAME
    if not aggregate.parameters:
        return aggregate.func.value
    return f"{aggregate.func.value}:{','.join(repr(p) for p in aggregate.parameters)}"


def from_wire_name(name: str) -> Aggregate[Any]:
    if name == COUNT_ALL_WIRE_NAME:
        return CountAll()
    func, _, parameters = name.partition(":")
    return aggregate_for(
        AggFunc(func),
        has_argument=True,
        parameters=tuple(float(p) for p in parameters.split(",")) if parameters else (),
    )
