"""A task compiled once for the batch engine: Polars expressions, aggregates, decoder."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from mars.aggregates import Aggregate, aggregates_for
from mars.engine.decode import FieldPlan, RecordDecoder, decoder_for
from mars.sql.expressions import to_polars
from mars.tasks.spec import TaskSpec, TimeFormat
from mars.windows import CumulativeWindows, SessionWindows, WindowAssigner

if TYPE_CHECKING:
    from mars.formats.schema_registry import SchemaSource

KEY_PREFIX = "__k"
ARG_PREFIX = "__a"


def key_column(index: int) -> str:
    return f"{KEY_PREFIX}{index}"


def argument_column(index: int) -> str:
    return f"{ARG_PREFIX}{index}"


@dataclass(frozen=True, slots=True, kw_only=True)
class CompiledTask:
    """Everything the engine derives from a `TaskSpec`; build once per task, reuse per batch."""

    spec: TaskSpec
    window: WindowAssigner  # for session windows: tumbling windows of the gap, never used
    session: SessionWindows | None  # session windows (`WINDOWING SESSION <gap>`)
    cumulate: CumulativeWindows | None  # cumulative windows (`WINDOWING CUMULATE ... STEP`)
    aggregates: tuple[Aggregate[Any], ...]
    where: pl.Expr | None
    keys: tuple[pl.Expr, ...]  # aliased key_column(i)
    arguments: tuple[pl.Expr | None, ...]  # aliased argument_column(i); None for COUNT(*)
    plan: FieldPlan
    decoder: RecordDecoder

    @classmethod
    def build(cls, spec: TaskSpec, *, schemas: SchemaSource | None = None) -> CompiledTask:
        """`schemas`: where Avro / Protobuf writer schemas come from by id (the registry)."""
        # Imported here: mars.formats builds on mars.engine.decode, which imports this package.
        from mars.formats.decoders import BINARY_FORMATS, binary_decoder_for

        where = to_polars(spec.where) if spec.where else None
        keys = tuple(
            to_polars(key.expression).alias(key_column(i)) for i, key in enumerate(spec.group_keys)
        )
        aggregates = aggregates_for(spec.aggregates)
        raw_arguments = [
            to_polars(call.argument) if call.argument is not None else None
            for call in spec.aggregates
        ]
        plan = _field_plan(spec, where, keys, raw_arguments, aggregates)
        return cls(
            spec=spec,
            window=WindowAssigner.from_spec(spec.window),
            session=SessionWindows.from_spec(spec.window) if spec.window.session else None,
            cumulate=CumulativeWindows.from_spec(spec.window) if spec.window.cumulate else None,
            aggregates=aggregates,
            where=where,
            keys=keys,
            arguments=tuple(
                arg.alias(argument_column(i)) if arg is not None else None
                for i, arg in enumerate(raw_arguments)
            ),
            plan=plan,
            decoder=binary_decoder_for(plan=plan, options=spec.options, schemas=schemas)
            if spec.options.input_format in BINARY_FORMATS
            else decoder_for(
                plan=plan,
                input_format=spec.options.input_format,
                csv_format=spec.options.csv,
            ),
        )


def field_plan(spec: TaskSpec) -> FieldPlan:
    """The input fields `spec` reads, and which must hold numbers (what its decoder reads)."""
    return _field_plan(
        spec,
        to_polars(spec.where) if spec.where else None,
        [to_polars(key.expression) for key in spec.group_keys],
        [to_polars(c.argument) if c.argument is not None else None for c in spec.aggregates],
        aggregates_for(spec.aggregates),
    )


def _field_plan(
    spec: TaskSpec,
    where: pl.Expr | None,
    keys: Sequence[pl.Expr],
    raw_arguments: Sequence[pl.Expr | None],
    aggregates: Sequence[Aggregate[Any]],
) -> FieldPlan:
    fields: list[str] = []
    for expr in [where, *keys, *raw_arguments]:
        if expr is not None:
            fields.extend(expr.meta.root_names())
    if spec.event_time.format is not TimeFormat.PROCESSING and spec.event_time.field:
        fields.append(spec.event_time.field)
    numeric_fields = frozenset(
        arg.meta.output_name()
        for agg, arg in zip(aggregates, raw_arguments, strict=True)
        if arg is not None and agg.numeric_argument and arg.meta.is_column()
    )
    return FieldPlan(fields=tuple(dict.fromkeys(fields)), numeric_fields=numeric_fields)
