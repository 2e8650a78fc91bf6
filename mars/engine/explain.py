"""`explain`: what a task does, derived from its spec and the code that will run it.

Every fact comes from where the pipeline itself takes it, so the plan cannot drift from what
runs: the fields from the decoder's `FieldPlan`, the mapper's partial states from each
aggregate's `partial_exprs`, the close rule from the window assigner's `closes_at`, the error
bounds from `mars.aggregates.accuracy`, the topics from the spec. The answer is plain data
(`TaskPlan.to_json_dict`) for the API, the CLI and the dashboard.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from mars.aggregates import Aggregate, aggregates_for, wire_name
from mars.aggregates.accuracy import accuracy
from mars.engine.compiled_task import field_plan
from mars.engine.decode import FieldPlan
from mars.sql.expressions import to_polars
from mars.tasks.replacement import RETIRED_PREFIX, null_before
from mars.tasks.spec import AggregateCall, InputFormat, TaskSpec, TimeFormat, WindowSpec
from mars.windows import CumulativeWindows, SessionWindows, WindowAssigner

_TIME_TYPES = {
    TimeFormat.EPOCH_S: "number: epoch seconds",
    TimeFormat.EPOCH_MS: "number: epoch milliseconds",
    TimeFormat.ISO8601: "string: ISO 8601 time",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldRead:
    """One input field the decoder reads: its type as the task needs it, and who reads it."""

    name: str
    type: str
    read_by: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowPlan:
    kind: str  # tumbling | hopping | session | cumulative
    size_ms: int
    slide_ms: int
    grace_ms: int
    assignment: str
    close_rule: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregatePlan:
    """One aggregate call: the mapper's partial state, the reducer's merge, its accuracy."""

    alias: str
    call: str
    state: str  # the wire name recorded with each partial
    partial_exprs: tuple[str, ...]  # the Polars expressions of the mapper's group_by().agg()
    merge: str
    approximate: bool
    error_bound: str
    # Added by a replacement (mars.tasks.replacement): NULL in windows starting before this.
    from_window_ms: int | None = None
    retired: bool = False  # removed by a replacement: computed, not shown


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskPlan:
    task: str
    sql: str
    source_topic: str
    input_format: str
    fields: tuple[FieldRead, ...]
    event_time: str
    filter: str | None
    window: WindowPlan
    group_keys: tuple[str, ...]
    buckets: dict[str, Any]
    preaggregation: dict[str, Any]
    aggregates: tuple[AggregatePlan, ...]
    reducer: dict[str, Any]
    output_topics: dict[str, str | None]

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)


def explain(spec: TaskSpec) -> TaskPlan:
    """The plan of `spec` (registered or not)."""
    aggregates = aggregates_for(spec.aggregates)
    return TaskPlan(
        task=spec.id,
        sql=spec.sql,
        source_topic=spec.source_topic,
        input_format=spec.options.input_format.value,
        fields=_fields(spec),
        event_time=_event_time(spec),
        filter=spec.where,
        window=_window(spec.window),
        group_keys=tuple(f"{key.name} = {key.expression}" for key in spec.group_keys),
        buckets=_buckets(spec),
        preaggregation={
            "by": spec.options.preaggregation.value,
            "step": "decode the fields above, drop records failing the filter, assign windows, "
            "then group by (window, group keys) and compute each aggregate's partial state; "
            "one data set per (window, bucket) goes to Redis with its offsets",
        },
        aggregates=tuple(
            replace(
                _aggregate(call, agg),
                from_window_ms=null_before(spec).get(position),
                retired=call.alias.startswith(RETIRED_PREFIX),
            )
            for position, (call, agg) in enumerate(zip(spec.aggregates, aggregates, strict=True))
        ),
        reducer=_reducer(spec),
        output_topics={
            "results": spec.output_topic,
            "late": spec.late_topic,
            "dead_letter": spec.dead_letter_topic,
            "updates": spec.updates_topic,
        },
    )


def _fields(spec: TaskSpec) -> tuple[FieldRead, ...]:
    plan = field_plan(spec)
    readers: dict[str, list[str]] = {name: [] for name in plan.fields}

    def note(expression: str | None, reader: str) -> None:
        if expression is not None:
            for name in to_polars(expression).meta.root_names():
                readers.setdefault(name, []).append(reader)

    note(spec.where, "filter")
    for key in spec.group_keys:
        note(key.expression, f"group key {key.name}")
    for call in spec.aggregates:
        note(call.argument, f"aggregate {call.alias}")
    time_field = spec.event_time.field
    if spec.event_time.format is not TimeFormat.PROCESSING and time_field:
        readers.setdefault(time_field, []).append("event time")

    return tuple(
        FieldRead(
            name=name,
            type=_field_type(spec, name, plan),
            read_by=tuple(dict.fromkeys(readers[name])),
        )
        for name in plan.fields
    )


def _field_type(spec: TaskSpec, name: str, plan: FieldPlan) -> str:
    if name == spec.event_time.field and spec.event_time.format in _TIME_TYPES:
        return _TIME_TYPES[spec.event_time.format]
    if name in plan.numeric_fields:
        return "number (other values make the record bad: dead-letter topic)"
    if spec.options.input_format is InputFormat.CSV:
        return "string (CSV text)"
    if spec.options.input_format is InputFormat.JSON:
        return "any JSON scalar (missing: NULL)"
    return "as in the writer schema"


def _event_time(spec: TaskSpec) -> str:
    if spec.event_time.format is TimeFormat.PROCESSING:
        return "processing time: the mapper's clock when it decodes the record"
    return f"field {spec.event_time.field} ({spec.event_time.format.value})"


def _window(window: WindowSpec) -> WindowPlan:
    size, slide, grace = window.size_ms, window.slide_ms, window.grace_ms
    if window.session:
        sessions = SessionWindows.from_spec(window)
        kind = "session"
        assignment = (
            f"per group: records at most {size} ms apart share a session [first, last]; "
            "partial sessions of a batch merge in the reducer when they touch"
        )
        close = f"a session closes when the watermark reaches last + {sessions.closes_at(0)} ms"
    elif window.cumulate:
        cumulative = CumulativeWindows.from_spec(window)
        kind = "cumulative"
        assignment = (
            f"max windows [s, s + {size}) at multiples of {size} ms; a record at t is in every "
            f"window [s, s + n * {slide}) ending after t (pre-aggregated per {slide} ms slice)"
        )
        close = (
            f"the window ending at e closes when the watermark reaches e + {cumulative.grace_ms} ms"
        )
    else:
        assigner = WindowAssigner.from_spec(window)
        kind = "tumbling" if window.tumbling else "hopping"
        assignment = (
            f"each record in the one window [s, s + {size}) with s = floor(t / {size}) * {size}"
            if window.tumbling
            else f"each record in every window [s, s + {size}) with s a multiple of {slide} "
            f"and s <= t < s + {size} (up to {-(-size // slide)} windows)"
        )
        close = (
            f"a window [s, e) closes when the watermark reaches s + {assigner.closes_at(0)} ms "
            f"(its end + {grace} ms grace)"
        )
    late = f"a record more than {grace} ms behind its partition's stream time is late"
    return WindowPlan(
        kind=kind,
        size_ms=size,
        slide_ms=slide,
        grace_ms=grace,
        assignment=assignment,
        close_rule=f"{close}; {late} (late topic)",
    )


def _buckets(spec: TaskSpec) -> dict[str, Any]:
    layout = spec.options.layout
    return {
        "count": layout.current,
        "units": layout.unit_count,
        "rule": "a (window, group) goes to bucket crc32(group key) % count; each bucket is "
        "one reducer unit, merged by one reducer at a time",
        "changes": [
            {"from_window_ms": c.from_window_ms, "buckets": c.buckets} for c in layout.changes
        ],
    }


def _aggregate(call: AggregateCall, aggregate: Aggregate[Any]) -> AggregatePlan:
    alias = call.alias
    argument = to_polars(call.argument) if call.argument is not None else None
    kind = type(aggregate)
    bound = accuracy(aggregate)
    parameters = ", ".join(f"{p:g}" for p in call.parameters)
    shown = call.argument or "*"
    return AggregatePlan(
        alias=alias,
        call=f"{call.func.value}({shown}{', ' + parameters if parameters else ''})",
        state=wire_name(aggregate),
        partial_exprs=tuple(str(e) for e in aggregate.partial_exprs(argument, f"{alias}.")),
        merge=f"{kind.__module__}.{kind.__name__}.merge, in SEQ order (associative and "
        "commutative: any grouping gives the same state)",
        approximate=bound.approximate,
        error_bound=bound.bound,
    )


def _reducer(spec: TaskSpec) -> dict[str, Any]:
    emit = (
        "final rows once per window and group when it closes"
        if spec.options.emit_interval_ms is None
        else f"final rows when a window closes, and changed groups of open windows every "
        f"{spec.options.emit_interval_ms} ms (EMIT CHANGES, updates topic)"
    )
    return {
        "merge": "each bucket's owner merges the data sets in SEQ order into its open windows' "
        "per-group states (one state list per group, in the aggregates' order)",
        "having": spec.having,
        "top_k": None
        if spec.top_k is None
        else {
            "order_by": spec.top_k.order_by,
            "descending": spec.top_k.descending,
            "limit": spec.top_k.limit,
        },
        "outputs": [f"{o.name} = {o.expression}" for o in spec.outputs],
        "emit": emit,
    }
