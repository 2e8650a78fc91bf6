"""Replacing a running task's query (`PUT /tasks/{id}`): what may change, and the spec after.

Compatible changes, after ksqlDB's [KLIP28] list, keep the open windows:
- a new aggregate is appended to the task's *state* list (`TaskSpec.aggregates`), so data sets
  written before the change are a prefix of those written after and merge with them (the
  reducer pads the missing states, `mars.engine.dataset_revisions`); it holds data from the
  change's first window `W` on, and earlier windows give NULL for it (`null_before`);
- a removed aggregate leaves the outputs at once but stays in the state list under a retired
  name (its fields are still read), so the positions of the others never move; naming it
  again revives it;
- a changed WHERE applies to every window from `W` on; windows open at the change hold the
  records mappers read before it under the old filter and those after under the new one;
- changed outputs, HAVING and ORDER BY ... LIMIT apply at once: reducers evaluate them when a
  window closes, so every window closing after the change uses them.

`W` comes from Redis with the same fence a bucket-count change takes (`SeqStore.change_layout`
with the count unchanged, mars.tasks.bucket_layout): it is after every window written so far,
and a writer still on the old spec is refused for any window from `W` on, so no window from
`W` on holds data pre-aggregated under the old query.

Everything else is incompatible (`incompatibilities`): the source, its format and event time,
the window kind, size, slide and grace, the group keys, the output topic and EMIT mode, and an
aggregate added to a session-window task (its states end with each session's last time).
"""

from __future__ import annotations

from dataclasses import replace

from mars.tasks.spec import AggregateCall, SpecRevision, TaskSpec

RETIRED_PREFIX = "__retired_"

AggregateKey = tuple[str, str | None, tuple[float, ...]]


def aggregate_key(call: AggregateCall) -> AggregateKey:
    """What makes two calls the same aggregate (the alias is only its name)."""
    return (call.func.value, call.argument, call.parameters)


def _window_kind(spec: TaskSpec) -> str:
    window = spec.window
    if window.session:
        return "session"
    if window.cumulate:
        return "cumulative"
    return "tumbling" if window.tumbling else "hopping"


def incompatibilities(old: TaskSpec, new: TaskSpec) -> list[str]:
    """What differs between `old` and `new` that the open windows cannot survive, each as
    `what: old -> new`; empty when `new` may replace `old` in place."""
    found: list[str] = []

    def differ(what: str, before: object, after: object) -> None:
        if before != after:
            found.append(f"{what}: {before} -> {after}")

    differ("source topic", old.source_topic, new.source_topic)
    differ("input format", old.options.input_format.value, new.options.input_format.value)
    differ("csv columns", old.options.csv, new.options.csv)
    differ("schema file", old.options.schema_file, new.options.schema_file)
    differ("protobuf message", old.options.protobuf_message, new.options.protobuf_message)
    differ(
        "event time",
        f"{old.event_time.field} ({old.event_time.format.value})",
        f"{new.event_time.field} ({new.event_time.format.value})",
    )
    differ("window kind", _window_kind(old), _window_kind(new))
    differ("window size (ms)", old.window.size_ms, new.window.size_ms)
    differ("window slide (ms)", old.window.slide_ms, new.window.slide_ms)
    differ("grace (ms)", old.window.grace_ms, new.window.grace_ms)
    differ(
        "group keys",
        ", ".join(f"{k.name} = {k.expression}" for k in old.group_keys) or "none",
        ", ".join(f"{k.name} = {k.expression}" for k in new.group_keys) or "none",
    )
    differ("output topic", old.output_topic, new.output_topic)
    differ("emit interval (ms)", old.options.emit_interval_ms, new.options.emit_interval_ms)
    if old.window.session:
        kept = {aggregate_key(call) for call in old.aggregates}
        added = [call.alias for call in new.aggregates if aggregate_key(call) not in kept]
        if added:
            found.append(
                f"aggregates added to a session-window task: {', '.join(added)} (each "
                "session's state ends with its last time, so none can be appended)"
            )
    return found


def replaced(old: TaskSpec, new: TaskSpec, *, from_window_ms: int) -> TaskSpec:
    """`new`'s query on `old`'s state: `old`'s aggregates keep their positions (renamed as
    `new` names them, retired when it does not), `new`'s other aggregates are appended and
    hold data from `from_window_ms` on. The options stay `old`'s, with the bucket-layout epoch
    the fence made (same count, from `from_window_ms`). `incompatibilities(old, new)` must be
    empty."""
    wanted = {aggregate_key(call): call for call in new.aggregates}
    names = {key.name for key in new.group_keys} | {call.alias for call in new.aggregates}
    aggregates: list[AggregateCall] = []
    for position, call in enumerate(old.aggregates):
        kept = wanted.get(aggregate_key(call))
        alias = kept.alias if kept is not None else _retired(call.alias, position, names)
        aggregates.append(replace(call, alias=alias))
    kept_keys = {aggregate_key(call) for call in old.aggregates}
    added: list[int] = []
    for call in new.aggregates:
        if aggregate_key(call) not in kept_keys:
            added.append(len(aggregates))
            aggregates.append(call)
    layout = old.options.layout.changed(
        from_window_ms=from_window_ms, buckets=old.options.layout.current
    )
    options = replace(old.options, bucket_changes=layout.changes)
    revision = SpecRevision(from_window_ms=from_window_ms, sql=new.sql, added=tuple(added))
    return replace(
        new,
        id=old.id,
        aggregates=tuple(aggregates),
        options=options,
        revisions=(*old.revisions, revision),
    )


def _retired(alias: str, position: int, taken: set[str]) -> str:
    name = alias if alias.startswith(RETIRED_PREFIX) else f"{RETIRED_PREFIX}{position}_{alias}"
    while name in taken:
        name = f"_{name}"
    return name


def null_before(spec: TaskSpec) -> dict[int, int]:
    """Position in `spec.aggregates` -> the first window start whose result it holds, for
    the aggregates a revision added (earlier windows give NULL for them)."""
    return {
        position: revision.from_window_ms
        for revision in spec.revisions
        for position in revision.added
    }
