"""Random tasks and random streams for the differential test, from one seed.

A `Case` is a task over a topic of its own plus the stream to produce into it: the records of
each partition in order. The task is drawn from every clause of the language (window kinds,
GRACE, every aggregate, WHERE with NULLs/CASE/LIKE/IN/BETWEEN/arithmetic, HAVING, top-k, NULL
group keys, EMIT CHANGES, event time in s, ms and ISO-8601); each clause is kept as a small
description (`TaskShape`) that renders both Mars's SQL and the oracle's DuckDB SQL, which are
the same standard SQL for the expressions we draw. The stream has equal timestamps, disorder inside
and beyond grace, bursts and long pauses, idle (empty) partitions, skewed keys and bad
records. One case in `BACKFILL_EVERY` has its whole stream applied by a Spark backfill (the
task registered paused, backfilled, then resumed: idle close must still come).

Records hold `ts` (event time), `k1` (skewed string or NULL), `k2` (small int or NULL),
`v` (int or NULL), `f` (float), `s` (a string for LIKE) and `m`, a nested object read through
the paths `m.u.id`, `m.tags[0]` and `m.w` (`NESTED_PATHS`): sometimes missing or null at any
level, sometimes of the wrong kind (a bad record for the tasks that read the path). Half the
cases that go through the mappers, nested paths or not, give the topic their records in Avro or
Protobuf (tests/differential/binary_records.py: `m` a nested record / message).
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal

import msgspec

from tests.differential import binary_records

TimeUnit = Literal["s", "ms", "iso"]
WindowKind = Literal["tumbling", "hopping", "session", "cumulate"]

_FORMAT = {"s": "epoch_s", "ms": "epoch_ms", "iso": "iso8601"}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_PLUS_TWO = timezone(timedelta(hours=2))
BASE_MS = 1_700_000_000_000  # streams start near here (2023-11-14)
# At most this long (size or gap, plus grace) between a stream's end and its last window's
# close: after the stream, the watermark advances with the wall clock (idle close).
MAX_CLOSE_MS = 12_000
BACKFILL_EVERY = 6  # one case in six goes through `mars spark preagg` instead of the mappers


@dataclass(frozen=True, slots=True)
class Aggregate:
    """One aggregate call: `sql` as both Mars and DuckDB read it, `oracle` the exact DuckDB
    aggregate it is compared with, `approximate` the relative error allowed of an estimate,
    `relative` that of an exact float result (rounding differs with the order of operations)."""

    alias: str
    sql: str
    oracle: str
    approximate: float = 0.0
    relative: float = 1e-9
    # A percentile's fractions: the oracle gives the exact value(s), quantile_disc, and
    # `values`, the group's sorted values, for the rank check of a sketch beyond 200 values.
    fractions: tuple[float, ...] = ()
    values: str | None = None
    top: int = 0  # TOPK's k: the oracle gives the group's histogram, compared exactly

    def oracle_sql(self) -> str:
        """The oracle's columns of this aggregate: its value, then the values if any."""
        values = f", {self.values} AS {self.alias}__values" if self.values else ""
        return f"{self.oracle} AS {self.alias}{values}"

    @property
    def rankable(self) -> bool:
        """Whether a top-k may order by it: an exact single value."""
        return not (self.approximate or self.fractions or self.top)


# A group's non-null values in order, for the rank check of a percentile.
_V = "list(v ORDER BY v) FILTER (WHERE v IS NOT NULL)"
_F = "list(f ORDER BY f) FILTER (WHERE f IS NOT NULL)"


def _at_time(extreme: str, column: str, condition: str = "TRUE") -> str:
    """DuckDB for FIRST (`min`) / LAST (`max`) of `column` over the rows where `condition`."""
    where = f"{column} IS NOT NULL AND ({condition})"
    return f"({extreme}({{'t': ts, 'v': {column}}}) FILTER (WHERE {where})).v"


AGGREGATES: tuple[Aggregate, ...] = (
    Aggregate("n", "count(*)", "count(*)"),
    Aggregate("nv", "count(v)", "count(v)"),
    Aggregate("sv", "sum(v)", "sum(v)"),
    Aggregate("mnv", "min(v)", "min(v)"),
    Aggregate("mxv", "max(v)", "max(v)"),
    Aggregate("av", "avg(v)", "avg(v)"),
    Aggregate("sf", "sum(f)", "sum(f)"),
    Aggregate("mxf", "max(f)", "max(f)"),
    Aggregate("mns", "min(k1)", "min(k1)"),
    Aggregate("dk2", "count(DISTINCT k2)", "count(DISTINCT k2)"),
    Aggregate("ds", "count(DISTINCT s)", "count(DISTINCT s)"),
    # HyperLogLog at lg_k 12: relative standard error 1.6 %; three of them, at least 1.
    Aggregate("ads", "approx_count_distinct(s)", "count(DISTINCT s)", approximate=0.05),
    # Mars merges (count, mean, M2) partials, DuckDB updates one running state: the error of
    # either grows with mean^2 / variance (values close together), so allow more than a sum.
    Aggregate("vpv", "var_pop(v)", "var_pop(v)", relative=1e-7),
    Aggregate("vsf", "var_samp(f)", "var_samp(f)", relative=1e-7),
    Aggregate("vrv", "variance(v)", "var_samp(v)", relative=1e-7),
    Aggregate("spf", "stddev_pop(f)", "stddev_pop(f)", relative=1e-7),
    Aggregate("ssv", "stddev_samp(v)", "stddev_samp(v)", relative=1e-7),
    Aggregate("sdf", "stddev(f)", "stddev_samp(f)", relative=1e-7),
    # FIRST / LAST by event time, ties to the smallest / largest value, NULLs skipped: the
    # oracle takes the min / max of the struct (time, value) over the non-NULL values.
    Aggregate("fv", "first(v)", _at_time("min", "v")),
    Aggregate("lv", "last(v)", _at_time("max", "v")),
    Aggregate("fk1", "first(k1)", _at_time("min", "k1")),
    Aggregate("lf", "last_value(f)", _at_time("max", "f")),
    # COUNT_IF and FILTER (WHERE ...): Mars rewrites them to CASE, DuckDB runs them as written.
    Aggregate("cia", "count_if(k1 = 'a')", "count(*) FILTER (WHERE k1 = 'a')"),
    # DuckDB's count_if is NULL when every condition is NULL; COUNT_IF counts, so 0 (as Spark)
    Aggregate("cfv", "count(*) FILTER (WHERE v > 10)", "coalesce(count_if(v > 10), 0)"),
    Aggregate("sfv", "sum(v) FILTER (WHERE k2 IN (1, 2))", "sum(v) FILTER (WHERE k2 IN (1, 2))"),
    Aggregate("mfs", "min(s) FILTER (WHERE v > 0)", "min(s) FILTER (WHERE v > 0)"),
    Aggregate("aff", "avg(f) FILTER (WHERE s LIKE 'x%')", "avg(f) FILTER (WHERE s LIKE 'x%')"),
    Aggregate(
        "dfk",
        "count(DISTINCT k1) FILTER (WHERE f < 0.5)",
        "count(DISTINCT k1) FILTER (WHERE f < 0.5)",
    ),
    Aggregate(
        "vff",
        "var_pop(v) FILTER (WHERE k1 <> 'b')",
        "var_pop(v) FILTER (WHERE k1 <> 'b')",
        relative=1e-7,
    ),
    Aggregate("lfv", "last(v) FILTER (WHERE k2 = 1)", _at_time("max", "v", "k2 = 1")),
    # KLL sketches: exact up to 200 values per group, within 1.33 % in rank beyond.
    Aggregate("p50v", "approx_median(v)", "quantile_disc(v, 0.5)", fractions=(0.5,), values=_V),
    Aggregate(
        "p9f", "approx_percentile(f, 0.9)", "quantile_disc(f, 0.9)", fractions=(0.9,), values=_F
    ),
    Aggregate(
        "qsv",
        "approx_percentile(v, [0, 0.25, 0.99])",
        "quantile_disc(v, [0, 0.25, 0.99])",
        fractions=(0.0, 0.25, 0.99),
        values=_V,
    ),
    # Misra-Gries summaries of 256 counters: exact for these few distinct values.
    Aggregate("tk1", "topk(k1, 2)", "histogram(k1)", top=2),
    Aggregate("tk2", "approx_top_k(k2, 3)", "histogram(k2)", top=3),
    Aggregate("smw", "sum(m.w)", "sum(m.w)"),
    Aggregate("mxid", "max(m.u.id)", "max(m.u.id)"),
    Aggregate("dtag", "count(DISTINCT m.tags[0])", "count(DISTINCT m.tags[0])"),
)
# Those a reducer may hold in columns (`reducer.columnar_state`): drawn alone for some cases, as
# few random tasks would be tumbling or hopping windows of these only.
COLUMNAR_AGGREGATES = tuple(
    a for a in AGGREGATES if a.alias in {"n", "nv", "sv", "mnv", "mxv", "av", "sf", "mxf", "mns"}
)

# Paths into `m`, and the result name Mars gives each as an unaliased group key.
NESTED_PATHS = {"m.u.id": "id", "m.tags[0]": "tags_0", "m.w": "w"}
PATH_KEYS = ("m.u.id", "m.tags[0]")


def result_name(key: str) -> str:
    """The result column of group key `key` (a path's is its last name)."""
    return NESTED_PATHS.get(key, key)


# Conditions WHERE is built from: each is type-correct for the fields' JSON types, so Mars and
# DuckDB read it alike; NULLs flow through (a NULL condition drops the record).
_CONDITIONS = (
    "v > {small}",
    "v <= {small}",
    "v IS NULL",
    "v IS NOT NULL",
    "k1 = 'a'",
    "k1 <> 'b'",
    "k1 IS NULL",
    "k1 IN ('a', 'c', 'e')",
    "k2 IN (1, 2)",
    "k2 NOT IN (0, 3)",
    "s LIKE 'x%'",
    "s LIKE '%7'",
    "s NOT LIKE 'y_'",
    "v BETWEEN {small} AND {large}",
    "v * 2 - k2 > {small}",
    "v + k2 * 3 < {large}",
    "f < 0.5",
    "coalesce(v, 0) >= {small}",
    "length(k1) > 1",
    "upper(k1) = 'B'",
    "CASE WHEN v > {small} THEN 1 WHEN k1 = 'a' THEN 1 ELSE 0 END = 1",
    "abs(v) > {small}",
    "-v < {small}",
    "v % 3 = 1",
    "-k2 % 2 = 0",
    "v > 90",  # drops nearly every record
    "k1 = 'ccc' AND v IS NOT NULL",  # so does this one (a rare key)
    "m.u.id > {tiny}",
    "m.tags[0] = 'a'",
    "m.w IS NULL",
    "m.w + m.u.id < {small}",
)
# Thresholds of a float result end in .37: no stddev of these values lands on one exactly.
_HAVING = (
    "n > {few}",
    "n >= 2 AND n < {many}",
    "sv > {small}",
    "n > 1 OR nv = 0",
    "ssv > {small}.37",
    "p50v > {small}.37",
)


@dataclass(frozen=True, slots=True)
class TaskShape:
    """The clauses of one random task (rendered by `mars_sql`, read by the oracle)."""

    keys: tuple[str, ...]  # group key columns (NULLs group together)
    aggregates: tuple[Aggregate, ...]
    window: WindowKind
    size_ms: int  # window size, or the session gap
    slide_ms: int  # = size_ms unless hopping; the step of cumulative windows
    grace_ms: int
    unit: TimeUnit
    where: str | None = None
    having: str | None = None
    top_k: tuple[str, int] | None = None  # (alias, k): ORDER BY alias DESC LIMIT k
    window_column: bool = False  # `ts` in GROUP BY: the window start as a column
    emit_changes: bool = False  # EMIT CHANGES: the updates topic's final rows = the results
    key_lag_ms: int | None = None  # WITH (watermark = 'key', key_lag = ...); None: partition
    key_groups: int | None = None  # and key_groups = N (a clock per group of keys)

    @property
    def paths(self) -> tuple[str, ...]:
        """The nested paths (`NESTED_PATHS`) the task reads."""
        read = " ".join([*self.keys, self.where or "", *(a.sql for a in self.aggregates)])
        return tuple(path for path in NESTED_PATHS if path in read)

    def mars_sql(self, topic: str) -> str:
        select = [*self.keys, *(["ts"] if self.window_column else [])]
        select += [f"{a.sql} AS {a.alias}" for a in self.aggregates]
        group = [*self.keys, *(["ts"] if self.window_column else [])]
        parts = [f"SELECT {', '.join(select)} FROM {topic}"]
        if self.where:
            parts.append(f"WHERE {self.where}")
        if group:
            parts.append(f"GROUP BY {', '.join(group)}")
        if self.having:
            parts.append(f"HAVING {self.having}")
        if self.top_k:
            parts.append(f"ORDER BY {self.top_k[0]} DESC LIMIT {self.top_k[1]}")
        if self.window == "session":
            parts.append(f"WINDOWING SESSION {self.size_ms} ms")
        elif self.window == "cumulate":
            parts.append(f"WINDOWING CUMULATE {self.size_ms} ms STEP {self.slide_ms} ms")
        else:
            parts.append(f"WINDOWING {self.size_ms} ms")
            if self.window == "hopping":
                parts.append(f"SLIDE {self.slide_ms} ms")
        if self.grace_ms:
            parts.append(f"GRACE {self.grace_ms} ms")
        if self.emit_changes:
            parts.append("EMIT CHANGES EVERY 1 s")
        parts.append(self._with_clause())
        return " ".join(parts)

    def _with_clause(self) -> str:
        watermark = ""
        if self.key_lag_ms is not None:
            watermark = f", watermark = 'key', key_lag = '{self.key_lag_ms} ms'"
        if self.key_groups is not None:
            watermark += f", key_groups = {self.key_groups}"
        return f"WITH (event_time = 'ts', event_time_format = '{_FORMAT[self.unit]}'{watermark})"

    def window_of(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        """The window part of a result key: `(window_start,)`, or for cumulative windows,
        which share their start, `(window_start, window_end)`."""
        return key[:2] if self.window == "cumulate" else key[:1]


@dataclass(frozen=True, slots=True)
class Case:
    """One task and the stream it reads: `partitions[p]` = the values of partition `p`."""

    seed: int
    shape: TaskShape
    partitions: tuple[tuple[bytes, ...], ...]
    via_backfill: bool = False  # the whole stream applied by a Spark backfill, not mappers
    # json, or avro / protobuf: `partitions` stay JSON (the oracle reads them), the topic gets
    # them encoded with a schema file (tests/differential/binary_records.py)
    input_format: str = "json"

    @property
    def records(self) -> int:
        return sum(len(values) for values in self.partitions)

    def with_partitions(self, partitions: tuple[tuple[bytes, ...], ...]) -> Case:
        return replace(self, partitions=partitions)

    def task_sql(self, topic: str) -> str:
        """Mars's SQL: the shape's, with the format options when not JSON."""
        sql = self.shape.mars_sql(topic)
        if self.input_format == "json":
            return sql
        path = binary_records.schema_file(self.input_format, self.shape.unit)
        return f"{sql[:-1]}, format = '{self.input_format}', schema_file = '{path}')"

    def encoded(self) -> tuple[tuple[bytes, ...], ...]:
        """`partitions` as the topic holds them."""
        if self.input_format == "json":
            return self.partitions
        unit = self.shape.unit
        return tuple(
            tuple(binary_records.encode(v, self.input_format, unit) for v in values)
            for values in self.partitions
        )

    def describe(self, topic: str = "S") -> str:
        how = " (through a Spark backfill)" if self.via_backfill else ""
        how += "" if self.input_format == "json" else f" ({self.input_format} records)"
        lines = [f"seed {self.seed}{how}", self.task_sql(topic)]
        for p, values in enumerate(self.partitions):
            lines.append(f"partition {p} ({len(values)} records):")
            lines.extend(f"  {value.decode('utf-8', 'replace')}" for value in values)
        return "\n".join(lines)


def random_shape(rng: random.Random) -> TaskShape:
    unit: TimeUnit = rng.choice(["s", "ms", "ms", "iso"])
    step = 1000 if unit == "s" else 1  # the smallest time step the unit can express
    window: WindowKind = rng.choice(["tumbling", "tumbling", "hopping", "session", "cumulate"])
    size = (
        rng.choice([1, 2, 5, 10]) * 1000 if unit == "s" else rng.choice([50, 100, 250, 1000, 5000])
    )
    slide = size
    if window == "hopping":
        slide = max(step, size // rng.choice([2, 3, 4, 5]) // step * step)
    if window == "cumulate":  # a step of at least 10 ms dividing the size
        steps = [n for n in (2, 4, 5, 10) if size % (n * step) == 0 and size // n >= 10]
        slide = size // rng.choice(steps) if steps else size
    grace = rng.choice([0, 0, 0, size // 4, size, 3 * size]) // step * step
    if size + grace > MAX_CLOSE_MS:  # the last windows close by idle close, in wall-clock time
        grace = 0
    keys = tuple(k for k in ("k1", "k2") if rng.random() < 0.55)
    keys += tuple(k for k in PATH_KEYS if rng.random() < 0.2)
    pool = COLUMNAR_AGGREGATES if rng.random() < 0.5 else AGGREGATES
    aggregates = tuple(rng.sample(pool, rng.randint(1, 4)))
    if all(a.alias != "n" for a in aggregates) and rng.random() < 0.7:
        aggregates = (AGGREGATES[0], *aggregates)
    aliases = {a.alias for a in aggregates}
    values = {
        "small": rng.randint(-10, 40),
        "large": rng.randint(40, 120),
        "tiny": rng.randint(0, 4),
    }
    where = None
    if rng.random() < 0.6:
        picked = [c.format(**values) for c in rng.sample(_CONDITIONS, rng.randint(1, 3))]
        joiners = [rng.choice([" AND ", " OR "]) for _ in picked[1:]]
        where = picked[0] + "".join(j + c for j, c in zip(joiners, picked[1:], strict=True))
        if rng.random() < 0.2:
            where = f"NOT ({where})"
    having = None
    candidates = [
        h
        for h in _HAVING
        if all(name in aliases for name in ("n", "sv", "nv", "ssv", "p50v") if name in h)
    ]
    if candidates and rng.random() < 0.3:
        having = rng.choice(candidates).format(
            few=rng.randint(1, 4), many=rng.randint(5, 30), **values
        )
    top_k = None
    if window != "session" and rng.random() < 0.25:
        rankable = [a.alias for a in aggregates if a.rankable]
        if rankable:
            top_k = (rng.choice(rankable), rng.randint(1, 3))
    return TaskShape(
        keys=keys,
        aggregates=aggregates,
        window=window,
        size_ms=size,
        slide_ms=slide,
        grace_ms=grace,
        unit=unit,
        where=where,
        having=having,
        top_k=top_k,
        window_column=window == "tumbling" and rng.random() < 0.2,
        emit_changes=window != "cumulate" and rng.random() < 0.2,  # refused with CUMULATE
    )


@dataclass
class _StreamStyle:
    """How one case's stream misbehaves (drawn once per case)."""

    equal: float  # chance a record repeats the previous timestamp
    disorder: float  # chance a record goes back in time
    bad: float  # chance a record is bad
    pause: float  # chance of a pause longer than any window or session gap
    omit: float  # chance a field is left out of a record (reads as NULL)
    v_null: float  # chance `v` is NULL (1: a column of NULLs in every batch)
    keys: list[str | None] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)


def random_case(seed: int) -> Case:
    """The case of `seed`: a task shape and a stream over 1-4 partitions."""
    rng = random.Random(seed)
    shape = random_shape(rng)
    step = 1000 if shape.unit == "s" else 1
    names: list[str | None] = [None, "a", "b", "c", "d", "e", "bb", "ccc", "", "é", 'q"t']
    style = _StreamStyle(
        equal=rng.choice([0.0, 0.3, 0.7]),
        disorder=rng.choice([0.0, 0.05, 0.2]),
        bad=rng.choice([0.0, 0.0, 0.03]),
        pause=rng.choice([0.0, 0.02]),
        omit=rng.choice([0.0, 0.0, 0.1]),
        v_null=rng.choice([0.15, 0.15, 0.15, 1.0]),
        keys=names,
        weights=[1.0 / (i + 1) ** rng.choice([0.5, 1.2]) for i in range(len(names))],
    )
    count = rng.choice([20, 60, 150, 400])
    partitions = rng.randint(1, 4)
    streams: list[list[bytes]] = [[] for _ in range(partitions)]
    idle = {p for p in range(partitions) if partitions > 1 and rng.random() < 0.15}
    scale = max(step, shape.size_ms // rng.choice([2, 5, 20])) // step * step
    # Some streams start just before 1970: negative epoch times floor into their windows.
    base = BASE_MS if rng.random() < 0.9 else -rng.randint(0, 20) * scale
    for p in range(partitions):
        if p in idle:
            continue
        now = base + rng.randint(0, 3) * scale
        share = rng.randint(count // (2 * partitions) + 1, 2 * count // partitions + 1)
        for _ in range(share):
            if rng.random() < style.pause:
                now += shape.size_ms * 3 + shape.grace_ms + step
            elif rng.random() >= style.equal:
                now += rng.randint(0, 2) * scale // 2 // step * step + step * rng.randint(0, 2)
            ts = now
            if rng.random() < style.disorder:  # within grace or beyond
                ts = (
                    now
                    - rng.choice([step, shape.grace_ms, shape.grace_ms + step, 2 * shape.size_ms])
                    // step
                    * step
                )
            streams[p].append(_record(rng, style, ts, shape.unit))
    shape, streams = _key_watermark(seed, shape, streams)
    input_format = _input_format(seed)
    return Case(
        seed=seed,
        shape=shape,
        partitions=tuple(
            tuple(binary_records.carried(v, input_format, shape.unit, shape.paths) for v in s)
            for s in streams
        ),
        via_backfill=seed % BACKFILL_EVERY == 0,
        input_format=input_format,
    )


KEY_WATERMARK_SHARE = 0.35  # of the cases that may have it (no cumulate, no top-k)


def _key_watermark(
    seed: int, shape: TaskShape, streams: list[list[bytes]]
) -> tuple[TaskShape, list[list[bytes]]]:
    """A share of the tumbling, hopping and session cases without top-k get
    `watermark = 'key'` and a keyed stream: the partitions' records interleaved, each routed
    to the partition of its group key (so each key is in one partition, and keys of the
    former partitions, at their own pace, meet out of order), and each key's clock set back
    by 0 to 1.5 window sizes (session gaps) of its own (a device whose clock is behind). Half
    of them hash their keys into 1 to 4 key groups, each routed to the partition of its
    group instead. Drawn from a generator of its own, so every other draw of a seed stays as
    it was."""
    rng = random.Random(f"watermark {seed}")
    if (
        shape.window not in ("tumbling", "hopping", "session")
        or shape.top_k is not None
        or rng.random() >= KEY_WATERMARK_SHARE
    ):
        return shape, streams
    lag = min(rng.choice([0, shape.size_ms, 2 * shape.size_ms, 4 * shape.size_ms]), 6_000)
    groups = rng.choice([None, None, None, None, 1, 2, 3, 4])
    keyed: list[list[bytes]] = [[] for _ in streams]
    for row in range(max((len(s) for s in streams), default=0)):
        for stream in streams:
            if row < len(stream):
                value = _skewed(stream[row], shape)
                keyed[_key_partition(value, shape.keys, len(streams), groups)].append(value)
    return replace(shape, key_lag_ms=lag, key_groups=groups), keyed


def _skewed(value: bytes, shape: TaskShape) -> bytes:
    """`value` with its event time set back by its group key's skew (epoch units only; bad
    and ISO-8601 times as they are)."""
    try:
        record = json.loads(value)
    except ValueError:
        return value
    if not isinstance(record, dict) or not isinstance(record.get("ts"), int):
        return value
    key = json.dumps([_path_value(record, name) for name in shape.keys]).encode()
    skew_ms = zlib.crc32(key) % 4 * shape.size_ms // 2
    record["ts"] -= skew_ms // 1000 if shape.unit == "s" else skew_ms
    return json.dumps(record).encode()


def _key_partition(
    value: bytes, keys: tuple[str, ...], partitions: int, groups: int | None = None
) -> int:
    """The partition of a record's group key, or of its key group (of its bytes when it is not
    a JSON object)."""
    try:
        record = json.loads(value)
    except ValueError:
        record = None
    if not isinstance(record, dict):
        return zlib.crc32(value) % partitions
    key = [_path_value(record, name) for name in keys]
    if groups is not None:
        return key_group(key, groups) % partitions
    return zlib.crc32(json.dumps(key).encode()) % partitions


def key_group(key: list[Any], groups: int) -> int:
    """The key group of a group key's values (docs/semantics.md, "Key watermarks", written
    again here): `((crc32(msgpack(key)) * 0x9E3779B1) mod 2**32) >> 8`, modulo `groups`."""
    mixed = (zlib.crc32(msgspec.msgpack.encode(key)) * 0x9E3779B1) & 0xFFFFFFFF
    return (mixed >> 8) % groups


def _path_value(record: dict[str, Any], name: str) -> Any:
    value: Any = record
    for part in name.replace("[0]", ".0").split("."):
        if isinstance(value, dict):
            value = value.get(part)
        elif isinstance(value, list) and part == "0":
            value = value[0] if value else None
        else:
            return None
    return value


def _input_format(seed: int) -> str:
    """Half the cases that go through the mappers read Avro or Protobuf, nested paths or not;
    drawn from a generator of its own, so every other draw of a seed stays as it was (and a
    case that reads no nested path draws the format it drew when only those could)."""
    if seed % BACKFILL_EVERY == 0:
        return "json"
    return random.Random(f"format {seed}").choice(["json", "json", *binary_records.BINARY_FORMATS])


def _record(rng: random.Random, style: _StreamStyle, ts_ms: int, unit: TimeUnit) -> bytes:
    if rng.random() < style.bad:
        kind = rng.randrange(4)
        if kind == 0:
            return b'{"ts": 1, "k1": '  # not JSON
        if kind == 1:
            return b"[1, 2, 3]"  # JSON, not an object
        body = _fields(rng, style)
        if kind == 2:
            return json.dumps(body).encode()  # no event time
        body["ts"] = "yesterday"  # an unreadable event time
        return json.dumps(body).encode()
    body = {"ts": _time_value(ts_ms, unit, rng), **_fields(rng, style)}
    return json.dumps(body).encode()


def _fields(rng: random.Random, style: _StreamStyle) -> dict[str, object]:
    fields = {
        "k1": rng.choices(style.keys, weights=style.weights)[0],
        "k2": None if rng.random() < 0.1 else rng.randint(0, 3),
        "v": None if rng.random() < style.v_null else rng.randint(-20, 100),
        "f": round(rng.random(), 3) + 0.0001,
        "s": rng.choice(["x1", "x7", "y7", "yy", "z", "x", "q17"]),
        "m": nested_object(rng),
    }
    return {name: value for name, value in fields.items() if rng.random() >= style.omit}


def _time_value(ts_ms: int, unit: TimeUnit, rng: random.Random) -> int | str:
    if unit == "s":
        return ts_ms // 1000
    if unit == "ms":
        return ts_ms
    moment = _EPOCH + timedelta(milliseconds=ts_ms)
    if rng.random() < 0.3:  # the same instant with an offset
        local = moment.astimezone(_PLUS_TWO)
        return local.strftime("%Y-%m-%dT%H:%M:%S.") + f"{local.microsecond // 1000:03d}+02:00"
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def nested_object(rng: random.Random) -> object:
    """`m`: mostly `{"u": {"id": ..}, "tags": [..], "w": ..}`, with NULLs and missing keys at
    every level and now and then a value of the wrong kind."""
    if rng.random() < 0.08:
        return None
    if rng.random() < 0.02:
        return rng.choice(["m", [1, 2], 5])  # not an object
    nested: dict[str, object] = {"other": {"skipped": [1, {"x": 2}]}}
    if rng.random() < 0.9:
        nested["u"] = _user(rng)
    if rng.random() < 0.9:
        nested["tags"] = _tags(rng)
    if rng.random() < 0.85:
        nested["w"] = None if rng.random() < 0.15 else rng.randint(-5, 20)
    return nested


def _user(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.1:
        return None
    if roll < 0.12:
        return rng.choice([7, "u", [{"id": 1}]])  # not an object
    user: dict[str, object] = {"name": "n"}
    if rng.random() < 0.9:
        user["id"] = rng.choice([None, rng.randint(0, 6), rng.randint(0, 6)])
        if rng.random() < 0.02:
            user["id"] = {"id": 1}  # not a scalar
    return user


def _tags(rng: random.Random) -> object:
    roll = rng.random()
    if roll < 0.06:
        return None
    if roll < 0.08:
        return rng.choice([{"0": "a"}, "a"])  # not an array
    tags: list[str | None] = list(rng.sample(["a", "b", "c", "dd"], rng.randint(0, 3)))
    if roll < 0.13:
        tags = [None, *tags]
    return tags
