"""Turns a checked SELECT into the grouping part of a TaskSpec.

Two name spaces matter:
- *input*: WHERE, group key expressions and aggregate arguments read record fields;
- *result*: HAVING, ORDER BY and output expressions read group keys (by `GroupKey.name`),
  aggregates (by `AggregateCall.alias`) and `window_start` / `window_end`.
The event-time field (e.g. `timestamp`) in GROUP BY or SELECT stands for the window; in
results its value is the window start. Any other column in a result expression must be a
group key, or the query is rejected ("neither grouped nor aggregated").
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from mars.aggregates import aggregate_for
from mars.sql.aggregate_calls import (
    AggregateRead,
    read_aggregate,
    sanitized_name,
    unique_name,
)
from mars.sql.conditional_aggregates import call_alias, without_aggregate_filters
from mars.sql.errors import TaskError
from mars.sql.field_references import column_label, default_name
from mars.sql.offset_aggregates import reject_offset_aggregates
from mars.sql.polars_compiler import check_functions, compile_node
from mars.sql.positions import node_position
from mars.sql.sketch_calls import LIST_FUNCS, reject_list_operations, reject_list_ordering
from mars.sql.statement import SelectStatement
from mars.tasks.spec import AggFunc, AggregateCall, GroupKey, OutputColumn, TopK

WINDOW_START = "window_start"
WINDOW_END = "window_end"


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregationPlan:
    where: str | None
    group_keys: tuple[GroupKey, ...]
    aggregates: tuple[AggregateCall, ...]
    outputs: tuple[OutputColumn, ...]
    having: str | None
    top_k: TopK | None
    input_columns: tuple[exp.Column, ...]  # every record field read (for CSV checks)


def plan_aggregation(
    statement: SelectStatement, *, event_time_field: str | None
) -> AggregationPlan:
    """Resolve group keys, aggregates, outputs, HAVING and top-k; TaskError on misuse."""
    return _Planner(statement, event_time_field).plan()


AggKey = tuple[AggFunc, str | None, tuple[float, ...]]  # function, argument SQL, parameters


class _Planner:
    def __init__(self, statement: SelectStatement, event_time_field: str | None):
        statement = without_aggregate_filters(statement)  # COUNT_IF, FILTER: plain aggregates
        self._statement = statement
        self._window_columns = {WINDOW_START: WINDOW_START, WINDOW_END: WINDOW_END}
        if event_time_field is not None:
            self._window_columns.setdefault(event_time_field, WINDOW_START)
        self._items = [_split_alias(item) for item in statement.select]
        self._select_aliases = {alias: expr for alias, expr in self._items if alias}
        self._keys_by_sql: dict[str, GroupKey] = {}
        self._aggregates: dict[AggKey, AggregateCall] = {}
        self._input_columns: list[exp.Column] = []
        self._user_aliases: set[str] = set()

    def plan(self) -> AggregationPlan:
        statement = self._statement
        for node in (*statement.select, statement.where, *statement.group_by, statement.having):
            if node is not None:
                reject_offset_aggregates(node)
                check_functions(node)
        for ordered in statement.order_by:
            reject_offset_aggregates(ordered)
            check_functions(ordered)
        where = self._where()
        self._group_keys()
        self._aggregate_calls()
        outputs = self._outputs()
        having = self._statement.having
        having_sql = self._result_sql(having) if having is not None else None
        return AggregationPlan(
            where=where,
            group_keys=tuple(self._keys_by_sql.values()),
            aggregates=tuple(self._aggregates.values()),
            outputs=outputs,
            having=having_sql,
            top_k=self._top_k(),
            input_columns=tuple(self._input_columns),
        )

    # --- input side -------------------------------------------------------------------

    def _input_sql(self, node: exp.Expr, *, clause: str) -> str:
        aggregate = node.find(exp.AggFunc)
        if aggregate is not None:
            hint = "; use HAVING" if clause == "WHERE" else ""
            raise TaskError(
                f"aggregate functions are not allowed in {clause}{hint}",
                position=node_position(aggregate),
            )
        compile_node(node)
        self._input_columns.extend(node.find_all(exp.Column))
        return node.sql()

    def _where(self) -> str | None:
        where = self._statement.where
        return self._input_sql(where, clause="WHERE") if where is not None else None

    def _group_keys(self) -> None:
        for item in self._statement.group_by:
            alias, expr = self._resolve_reference(item, clause="GROUP BY")
            if isinstance(expr, exp.Column) and expr.name in self._window_columns:
                continue  # the window itself: always part of the grouping
            sql = self._input_sql(expr, clause="GROUP BY")
            if sql in self._keys_by_sql:
                continue
            # A plain column keeps its name; an expression takes its select alias if any.
            name = alias
            if name is None and isinstance(expr, exp.Column):
                name = default_name(expr.name)
            name = name or self._select_alias_of(sql)
            if name is None:
                name = unique_name(sanitized_name(sql), self._taken_names())
            elif name in self._taken_names():
                raise TaskError(
                    f"group key name '{name}' is used twice", position=node_position(item)
                )
            self._keys_by_sql[sql] = GroupKey(name=name, expression=sql)

    def _resolve_reference(self, node: exp.Expr, *, clause: str) -> tuple[str | None, exp.Expr]:
        """A GROUP BY / ORDER BY item: a position (`1`), a select alias, or an expression."""
        if isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit():
            index = int(node.this)
            if not 1 <= index <= len(self._items):
                raise TaskError(
                    f"{clause} position {index} is not in the select list",
                    position=node_position(node),
                )
            return self._items[index - 1]
        if isinstance(node, exp.Column) and node.name in self._select_aliases:
            expr = self._select_aliases[node.name]
            same_column = isinstance(expr, exp.Column) and expr.name == node.name
            # An alias of an aggregate cannot be a group key: `a` is then the input column.
            grouping_an_aggregate = clause == "GROUP BY" and expr.find(exp.AggFunc) is not None
            if not same_column and not grouping_an_aggregate:
                return node.name, expr
        return None, node

    def _select_alias_of(self, sql: str) -> str | None:
        for alias, expr in self._items:
            if alias and expr.find(exp.AggFunc) is None and expr.sql() == sql:
                return alias
        return None

    def _taken_names(self) -> set[str]:
        names = {k.name for k in self._keys_by_sql.values()}
        names.update(a.alias for a in self._aggregates.values())
        names.update(self._window_columns.values())
        return names

    # --- aggregates -----------------------------------------------------------------------

    def _aggregate_calls(self) -> None:
        nodes: list[exp.Expr] = [expr for _, expr in self._items]
        nodes += [n for n in (self._statement.having,) if n is not None]
        nodes += [o.this for o in self._statement.order_by]
        calls: list[tuple[AggKey, exp.AggFunc, str | None]] = []
        arguments: dict[AggKey, exp.Expr | None] = {}
        for node in nodes:
            for call in node.find_all(exp.AggFunc):
                inner = next((n for n in call.find_all(exp.AggFunc) if n is not call), None)
                if inner is not None:
                    raise TaskError(
                        "aggregate functions cannot be nested", position=node_position(inner)
                    )
                read = read_aggregate(call)
                _check_parameters(read, call)
                argument_sql = (
                    self._input_sql(read.argument, clause=f"{read.func.value.upper()}'s argument")
                    if read.argument is not None
                    else None
                )
                user_alias = call.parent.alias if isinstance(call.parent, exp.Alias) else None
                calls.append(((read.func, argument_sql, read.parameters), call, user_alias))
                arguments[(read.func, argument_sql, read.parameters)] = read.argument
        # User aliases are taken first, so a generated name never takes one a user chose
        # later in the query; the aggregates keep their order of first appearance.
        aliases: dict[AggKey, str] = {}
        for key, call, alias in calls:
            if alias and key not in aliases:
                if alias in self._taken_names() or alias in aliases.values():
                    raise TaskError(
                        f"the name '{alias}' is already a group key or aggregate; choose another",
                        position=node_position(call),
                    )
                aliases[key] = alias
        self._user_aliases = set(aliases.values())
        for key, _, _ in calls:
            if key in self._aggregates:
                continue
            func, argument_sql, parameters = key
            alias = aliases.get(key) or unique_name(
                call_alias(func, arguments[key], parameters),
                self._taken_names() | set(aliases.values()),
            )
            self._aggregates[key] = AggregateCall(
                func=func, argument=argument_sql, alias=alias, parameters=parameters
            )

    # --- result side ------------------------------------------------------------------------

    def _to_result(self, node: exp.Expr, *, use_aliases: bool) -> exp.Expr:
        def replace(n: exp.Expr) -> exp.Expr:
            if isinstance(n, exp.AggFunc):
                return exp.column(self._aggregates[_agg_key(read_aggregate(n))].alias)
            if use_aliases and isinstance(n, exp.Column) and n.name in self._select_aliases:
                target = self._select_aliases[n.name]
                if not (isinstance(target, exp.Column) and target.name == n.name):
                    return self._to_result(target, use_aliases=False)
            key_of_expr = self._keys_by_sql.get(n.sql())
            if key_of_expr is not None:
                return exp.column(key_of_expr.name)
            if isinstance(n, exp.Column):
                window_column = self._window_columns.get(n.name)
                if window_column is not None:
                    return exp.column(window_column)
                raise TaskError(
                    f"column '{column_label(n.name)}' must appear in GROUP BY or be used in an "
                    "aggregate",
                    position=node_position(n),
                )
            return n

        return node.transform(replace)

    def _result_sql(
        self, node: exp.Expr, *, use_aliases: bool = True, bare_list: bool = False
    ) -> str:
        result = self._to_result(node, use_aliases=use_aliases)
        lists = {c.alias for key, c in self._aggregates.items() if key[0] in LIST_FUNCS}
        if lists:
            reject_list_operations(
                result, lists, bare_allowed=bare_list, position=node_position(node)
            )
        compile_node(result)
        return result.sql()

    def _outputs(self) -> tuple[OutputColumn, ...]:
        outputs: dict[str, OutputColumn] = {}
        for (alias, expr), item in zip(self._items, self._statement.select, strict=True):
            sql = self._result_sql(expr, use_aliases=False, bare_list=True)
            name = alias or self._output_name(expr, sql)
            if name in outputs:
                raise TaskError(
                    f"the result has two columns named '{name}'; give one an alias",
                    position=node_position(item),
                )
            outputs[name] = OutputColumn(name=name, expression=sql)
        return tuple(outputs.values())

    def _output_name(self, expr: exp.Expr, result_sql: str) -> str:
        if isinstance(expr, exp.Column):
            return default_name(expr.name)
        if isinstance(expr, exp.AggFunc):
            if result_sql not in self._user_aliases:
                return result_sql  # the aggregate's generated alias
            read = read_aggregate(expr)
            return call_alias(read.func, read.argument, read.parameters)  # shares a user's alias
        return sanitized_name(expr.sql())

    def _top_k(self) -> TopK | None:
        order_by, limit = self._statement.order_by, self._statement.limit
        if not order_by and limit is None:
            return None
        if limit is None:
            raise TaskError(
                "ORDER BY needs LIMIT k (it keeps the top k groups of each window)",
                position=node_position(order_by[0]),
            )
        if not order_by:
            raise TaskError(
                "LIMIT needs ORDER BY (it keeps the top k groups of each window)",
                position=node_position(limit),
            )
        if len(order_by) > 1:
            raise TaskError("ORDER BY takes one expression", position=node_position(order_by[1]))
        if not (isinstance(limit, exp.Literal) and not limit.is_string and limit.this.isdigit()):
            raise TaskError("LIMIT needs a whole number", position=node_position(limit))
        count = int(limit.this)
        if count <= 0:
            raise TaskError("LIMIT must be at least 1", position=node_position(limit))
        ordered = order_by[0]
        _, target = self._resolve_reference(ordered.this, clause="ORDER BY")
        reject_list_ordering(target)
        return TopK(
            order_by=self._result_sql(target),
            descending=bool(ordered.args.get("desc")),
            limit=count,
        )


def _agg_key(read: AggregateRead) -> AggKey:
    argument_sql = read.argument.sql() if read.argument is not None else None
    return (read.func, argument_sql, read.parameters)


def _check_parameters(read: AggregateRead, call: exp.AggFunc) -> None:
    try:
        aggregate_for(read.func, has_argument=read.argument is not None, parameters=read.parameters)
    except ValueError as error:
        raise TaskError(str(error), position=node_position(call)) from None


def _split_alias(item: exp.Expr) -> tuple[str | None, exp.Expr]:
    if isinstance(item, exp.Alias):
        return item.alias, item.this
    return None, item
