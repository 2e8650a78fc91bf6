"""Aggregates as monoids (`initial / add / merge / result`) shared by mapper, Spark and reducer."""

from mars.aggregates.average import Average
from mars.aggregates.base import Aggregate
from mars.aggregates.counting import CountAll, CountNonNull
from mars.aggregates.distinct import CountDistinct
from mars.aggregates.encoding import PartialEncodingError, decode_states, encode_states
from mars.aggregates.extremum import Max, Min
from mars.aggregates.first_last import First, Last
from mars.aggregates.frequent import TopK
from mars.aggregates.hll import ApproxCountDistinct, sketch_of
from mars.aggregates.quantiles import ApproxPercentile, ApproxPercentiles
from mars.aggregates.registry import (
    aggregate_for,
    aggregate_for_call,
    aggregates_for,
    from_wire_name,
    state_aggregates,
    wire_name,
)
from mars.aggregates.spread import StddevPop, StddevSamp, VarPop, VarSamp
from mars.aggregates.sum import Sum

__all__ = [
    "Aggregate",
    "ApproxCountDistinct",
    "ApproxPercentile",
    "ApproxPercentiles",
    "Average",
    "CountAll",
    "CountDistinct",
    "CountNonNull",
    "First",
    "Last",
    "Max",
    "Min",
    "PartialEncodingError",
    "StddevPop",
    "StddevSamp",
    "Sum",
    "TopK",
    "VarPop",
    "VarSamp",
    "aggregate_for",
    "aggregate_for_call",
    "aggregates_for",
    "decode_states",
    "encode_states",
    "from_wire_name",
    "sketch_of",
    "state_aggregates",
    "wire_name",
]
