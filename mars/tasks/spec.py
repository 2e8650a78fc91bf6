"""The validated, frozen description of one statistics task.

A `TaskSpec` is what the SQL front end (`mars.sql`) produces and what every other part consumes:
the mapper and the Spark job pre-aggregate with it, the reducer closes windows with it, the
registry stores it as JSON in ZooKeeper. Expressions are kept as SQL text in sqlglot's
canonical form, so the spec is plain data; `mars.sql.expressions` compiles them to Polars.

Column naming inside the engine:
- group keys are exposed to post-aggregation expressions by their output name
  (`GroupKey.name`), aggregates by `AggregateCall.alias`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from mars.tasks.bucket_layout import BucketChange, BucketLayout
from mars.tasks.rewind import TaskRewind


class TimeFormat(StrEnum):
    """How the event-time field is encoded in a record."""

    EPOCH_S = "epoch_s"
    EPOCH_MS = "epoch_ms"
    ISO8601 = "iso8601"
    PROCESSING = "processing"  # no event-time field: the mapper's wall clock at decode


class InputFormat(StrEnum):
    JSON = "json"
    CSV = "csv"
    AVRO = "avro"  # Confluent-framed from a schema registry, or bare with a schema file
    PROTOBUF = "protobuf"


class Preaggregation(StrEnum):
    """Who pre-aggregates a task's live stream: mapper processes, or a Spark Structured
    Streaming job (`mars spark stream`); never both."""

    MAPPERS = "mappers"
    SPARK = "spark"


class WatermarkMode(StrEnum):
    """What a record's lateness and its windows' closing follow (docs/semantics.md, Key
    watermarks): its partition's stream time, or its own group key's clock."""

    PARTITION = "partition"
    KEY = "key"


class AggFunc(StrEnum):
    COUNT = "count"  # COUNT(*) when argument is None, else COUNT(col): non-null values
    SUM = "sum"
    MIN = "min"
    MAX = "max"
    AVG = "avg"  # partial state is (sum, count)
    COUNT_DISTINCT = "count_distinct"  # exact: partial state is the set of values
    APPROX_COUNT_DISTINCT = "approx_count_distinct"  # HyperLogLog sketch (Apache DataSketches)
    # The spread aggregates: partial state is (count, mean, M2); STDDEV / VARIANCE are SAMP.
    VAR_POP = "var_pop"
    VAR_SAMP = "var_samp"
    STDDEV_POP = "stddev_pop"
    STDDEV_SAMP = "stddev_samp"
    # The value at the earliest / latest event time; ties: the smallest / largest value.
    FIRST = "first"
    LAST = "last"
    # The quantile sketch (KLL, Apache DataSketches): one fraction, or a list of them.
    APPROX_PERCENTILE = "approx_percentile"
    APPROX_PERCENTILES = "approx_percentiles"
    TOPK = "topk"  # the k most frequent values: a Misra-Gries summary


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowSpec:
    """Hopping windows of `size_ms` every `slide_ms`; tumbling when they are equal.

    `session`: session windows per group instead (`WINDOWING SESSION <gap>`), with `size_ms`
    and `slide_ms` both the inactivity gap: records at most a gap apart share a session.

    `cumulate`: cumulative windows (`WINDOWING CUMULATE <size> STEP <step>`, Flink's CUMULATE):
    `size_ms` is the max window, `slide_ms` the step; the windows `[s, s + n * step)` of each
    max window `[s, s + size)`.
    """

    size_ms: int
    slide_ms: int
    grace_ms: int = 0
    session: bool = False
    cumulate: bool = False

    @property
    def tumbling(self) -> bool:
        return self.size_ms == self.slide_ms and not self.session and not self.cumulate

    @property
    def gap_ms(self) -> int:
        """The inactivity gap of session windows."""
        assert self.session, "only session windows have a gap"
        return self.size_ms


@dataclass(frozen=True, slots=True, kw_only=True)
class EventTime:
    field: str | None  # None when format is PROCESSING
    format: TimeFormat


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupKey:
    """One GROUP BY key other than the window. `expression` is SQL over input columns."""

    name: str
    expression: str


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateCall:
    """One aggregate; `argument` is SQL over input columns, None for COUNT(*).

    `parameters` are the call's constant arguments after the first, such as the fraction of
    APPROX_PERCENTILE(col, 0.99): they are part of the aggregate's identity.
    """

    func: AggFunc
    argument: str | None
    alias: str
    parameters: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputColumn:
    """One column of the result record, in SELECT order.

    `expression` is SQL over group key names, aggregate aliases and the two window columns
    `window_start` / `window_end` (epoch ms); for a plain group key it is just its name.
    """

    name: str
    expression: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TopK:
    """`ORDER BY <expr> [ASC|DESC] LIMIT k`, applied per window across all buckets."""

    order_by: str  # SQL over output column names / aggregate aliases
    descending: bool
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class CsvFormat:
    """Header spec for CSV input: column names in order, and the delimiter."""

    columns: tuple[str, ...]
    delimiter: str = ","


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskOptions:
    input_format: InputFormat = InputFormat.JSON
    csv: CsvFormat | None = None
    output_topic: str | None = None  # default: mars.results.<task id>
    # At registration; `bucket_changes` (PATCH buckets) change it later. Each bucket is a unit
    # with its own owner, and every unit steps for every batch: 4 lets four reducers share a
    # task while ten tasks cost 25 % less CPU than at 8 (docs/reducer.md, "Units per task").
    buckets: int = 4
    idle_timeout_ms: int = 10_000
    # EMIT CHANGES: the reducers publish the current value of changed groups of open windows,
    # at most once per this interval, to the updates topic. None: final results only.
    emit_interval_ms: int | None = None
    preaggregation: Preaggregation = Preaggregation.MAPPERS
    bucket_changes: tuple[BucketChange, ...] = ()
    # Avro / Protobuf: the writer schema's file (records are then bare payloads, no header);
    # None: records are Confluent-framed and their schemas come from the schema registry.
    schema_file: str | None = None
    protobuf_message: str | None = None  # with a .proto schema_file: which message (default first)
    watermark: WatermarkMode = WatermarkMode.PARTITION
    # watermark = 'key': how far a key's clock may trail its partition's stream time before
    # the partition's rule applies to it (bounds the key clocks kept; docs/semantics.md).
    key_lag_ms: int = 600_000
    # watermark = 'key': N clocks, keys hashed into them (mars.engine.key_groups); None: a
    # clock per key.
    key_groups: int | None = None

    @property
    def layout(self) -> BucketLayout:
        """Which bucket each (window, group) goes to (mars.tasks.bucket_layout)."""
        return BucketLayout(initial=self.buckets, changes=self.bucket_changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpecRevision:
    """A compatible replacement of a running task's query (`PUT /tasks/{id}`,
    mars.tasks.replacement). `added` are the positions in `TaskSpec.aggregates` of the
    aggregates it added: they hold data from window start `from_window_ms` on, and earlier
    windows give NULL for them."""

    from_window_ms: int
    sql: str  # the query as the caller gave it
    added: tuple[int, ...] = ()


def default_output_topic(task_id: str) -> str:
    """Where a task's results go unless its options name a topic: `mars.results.<task id>`.
    Callers that know only the id (a benchmark starting its reader before it registers the
    task) ask here rather than spell the name again."""
    return f"mars.results.{task_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskSpec:
    id: str
    sql: str
    source_topic: str
    event_time: EventTime
    window: WindowSpec
    group_keys: tuple[GroupKey, ...]
    aggregates: tuple[AggregateCall, ...]
    outputs: tuple[OutputColumn, ...]
    where: str | None = None
    having: str | None = None  # SQL over group key names and aggregate aliases
    top_k: TopK | None = None
    options: TaskOptions = field(default_factory=TaskOptions)
    revisions: tuple[SpecRevision, ...] = ()  # compatible replacements, oldest first
    rewinds: tuple[TaskRewind, ...] = ()  # rewinds (mars.tasks.rewind), oldest first

    @property
    def output_topic(self) -> str:
        return self.options.output_topic or default_output_topic(self.id)

    @property
    def late_topic(self) -> str:
        return f"mars.late.{self.id}"

    @property
    def dead_letter_topic(self) -> str:
        return f"mars.dlq.{self.id}"

    @property
    def updates_topic(self) -> str | None:
        """Where EMIT CHANGES publishes current values (None: the task emits final only)."""
        return None if self.options.emit_interval_ms is None else f"mars.updates.{self.id}"

    def to_json_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json_dict(cls, data: dict[str, Any]) -> TaskSpec:
        opts = dict(data.get("options") or {})
        csv = opts.get("csv")
        options = TaskOptions(
            input_format=InputFormat(opts.get("input_format", InputFormat.JSON)),
            csv=CsvFormat(columns=tuple(csv["columns"]), delimiter=csv.get("delimiter", ","))
            if csv
            else None,
            output_topic=opts.get("output_topic"),
            # (a stored spec always has it; 8 was the default before TaskOptions' 4)
            buckets=int(opts.get("buckets", 8)),
            idle_timeout_ms=int(opts.get("idle_timeout_ms", 10_000)),
            emit_interval_ms=opts.get("emit_interval_ms"),
            preaggregation=Preaggregation(opts.get("preaggregation", Preaggregation.MAPPERS)),
            bucket_changes=tuple(BucketChange(**c) for c in opts.get("bucket_changes", ())),
            schema_file=opts.get("schema_file"),
            protobuf_message=opts.get("protobuf_message"),
            watermark=WatermarkMode(opts.get("watermark", WatermarkMode.PARTITION)),
            key_lag_ms=int(opts.get("key_lag_ms", 600_000)),
            key_groups=None if opts.get("key_groups") is None else int(opts["key_groups"]),
        )
        top_k = data.get("top_k")
        return cls(
            id=data["id"],
            sql=data["sql"],
            source_topic=data["source_topic"],
            event_time=EventTime(
                field=data["event_time"]["field"],
                format=TimeFormat(data["event_time"]["format"]),
            ),
            window=WindowSpec(**data["window"]),
            group_keys=tuple(GroupKey(**g) for g in data["group_keys"]),
            aggregates=tuple(
                AggregateCall(
                    func=AggFunc(a["func"]),
                    argument=a["argument"],
                    alias=a["alias"],
                    parameters=tuple(a.get("parameters", ())),
                )
                for a in data["aggregates"]
            ),
            outputs=tuple(OutputColumn(**o) for o in data["outputs"]),
            where=data.get("where"),
            having=data.get("having"),
            top_k=TopK(**top_k) if top_k else None,
            options=options,
            revisions=tuple(
                SpecRevision(
                    from_window_ms=r["from_window_ms"], sql=r["sql"], added=tuple(r["added"])
                )
                for r in data.get("revisions", ())
            ),
            rewinds=tuple(TaskRewind.from_json_dict(r) for r in data.get("rewinds", ())),
        )
