"""Pre-aggregation of one batch: the pure core of the mapper and the Spark job.

Steps, all vectorised in Polars: decode -> event time -> stream time before each record ->
WHERE -> group-key and argument expressions -> lateness -> window assignment -> group by
(window, keys) into partial states -> split by bucket -> one encoded data set per bucket.

Event time and lateness follow docs/semantics.md. Stream time advances, in partition order,
with every record that has a valid event time and is not bad, whether WHERE keeps it or not
and whether it is late (late ones cannot raise it): a filter never holds windows open, as
Flink's watermark is its source's. Lateness is decided record by record as if the partition
were read one record at a time: a record is late when the largest event time seen *before it*
in its partition (starting from the partition's stream time before the batch) has reached its
`late_from`: the latest window it belongs to `end + grace`, or for session windows
`time + grace + 1` (only strictly older than GRACE allows is late; equal timestamps are on
time). A shifted cumulative max per partition computes exactly that, so the outcome never
depends on where batch boundaries fall. With hopping windows a record contributes only to its
windows that are still open and is late only when all of them are closed.

Session windows: the batch's on-time records of each group are cut into sessions where
consecutive times are more than the gap apart; each partial session is keyed by its first time,
and carries its last time as an extra MAX state, so the reducer can merge sessions of different
batches.

FIRST and LAST read each record's event time with its value (`timed_input`), so their partial
states hold the time they are at; the reducer and session merges need nothing else.

Cumulative windows: a record is late when its max window is closed; an on-time one is counted
in one step slice, its own or, when that slice's window closed before it came (end + grace at
or below the stream time before it), the first slice still open then: so it counts in exactly
its cumulative windows still open, as a hopping record counts only in its open windows. The
reducer folds closed slices into each max window's running state (reducer/open_cumulative.py).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import polars as pl

from mars.aggregates import Max
from mars.aggregates.base import timed_input
from mars.engine.bucketed_datasets import encode_bucketed_datasets
from mars.engine.compiled_task import CompiledTask, argument_column, key_column
from mars.engine.dataset import encode_key
from mars.engine.decode import ROW, RecordDecoder
from mars.engine.event_time import event_time_ms
from mars.engine.isolate import with_columns_isolating_failures
from mars.engine.key_clocks import decode_clocks, encode_clocks, next_clocks, with_effective_clock
from mars.engine.records import BatchPartials, RejectedRecord, SourceBatch, SourceRecord
from mars.engine.shared_decode import BatchDecoding
from mars.tasks.field_paths import display_path, display_sql, field_path
from mars.tasks.spec import TaskSpec, TimeFormat, WatermarkMode

if TYPE_CHECKING:
    from mars.formats.schema_registry import SchemaSource

_PARTITION = "__p"
_TIME = "__t"
_BEFORE = "__before"
_WINDOW = "__w"
_KEEP = "__keep"
_SESSION_END_PREFIX = "__send_"
_KEY_TIME_PREFIX = "__ktime_"


def bucket_of(key: tuple[Any, ...], buckets: int) -> int:
    """The bucket of a group key: crc32 of its msgpack bytes, identical in every process."""
    return zlib.crc32(encode_key(key)) % buckets


def preaggregate(
    spec: TaskSpec,
    records: Sequence[SourceRecord] | SourceBatch,
    stream_times: Mapping[int, int | None],
    now_ms: int,
) -> BatchPartials:
    """Pre-aggregate one batch (see the module docstring). Compiles `spec` on every call:
    long-lived callers should build a `Preaggregator` once per task instead."""
    return Preaggregator(CompiledTask.build(spec)).run(records, stream_times, now_ms=now_ms)


class Preaggregator:
    """Runs pre-aggregation for one compiled task."""

    def __init__(self, task: CompiledTask) -> None:
        self._task = task

    @classmethod
    def for_spec(cls, spec: TaskSpec, *, schemas: SchemaSource | None = None) -> Preaggregator:
        return cls(CompiledTask.build(spec, schemas=schemas))

    @property
    def decoder(self) -> RecordDecoder:
        return self._task.decoder

    def run(
        self,
        records: Sequence[SourceRecord] | SourceBatch,
        stream_times: Mapping[int, int | None],
        *,
        now_ms: int,
        decoding: BatchDecoding | None = None,
        key_clocks: Mapping[int, bytes | None] | None = None,
    ) -> BatchPartials:
        """Pre-aggregate one batch, given as records or (faster) as a `SourceBatch`;
        `decoding`, the batch decoded once for all tasks over its topic, is used when it is of
        this very batch's values. `key_clocks`: per partition, its stored key clocks
        (`watermark = 'key'` only, `mars.engine.key_clocks`)."""
        task = self._task
        batch = records if isinstance(records, SourceBatch) else SourceBatch.of(records)
        if decoding is not None and decoding.values is batch.values:
            decoded = decoding.for_decoder(task.decoder)
        else:
            decoded = task.decoder.decode(batch.values)
        bad = dict(decoded.bad)
        partitions = pl.Series(_PARTITION, batch.partitions, dtype=pl.Int64)
        if decoded.frame.height < len(batch):  # bad records are not in the frame
            partitions = partitions.gather(decoded.frame.get_column(ROW))
        frame = decoded.frame.with_columns(partitions)

        # Event time before WHERE: stream time moves with every record that has a valid event
        # time and is not bad, whether WHERE keeps it or not (a filter never holds windows
        # open, as Flink's watermark is its source's), late or not (late ones cannot raise it).
        frame = self._with_event_time(frame, now_ms=now_ms)
        timing = frame.select(ROW, _PARTITION, _TIME)

        filtered = 0
        if task.where is not None:
            where = task.where.fill_null(False).cast(pl.Boolean).alias(_KEEP)
            frame, failed = with_columns_isolating_failures(frame, [where], what="WHERE")
            bad.update(failed)
            if frame.height:
                kept = frame.filter(pl.col(_KEEP))
                filtered = frame.height - kept.height
                frame = kept

        frame = self._drop_missing_event_times(frame, bad)
        exprs = [*task.keys, *(arg for arg in task.arguments if arg is not None)]
        frame, failed = with_columns_isolating_failures(frame, exprs, what="an expression")
        bad.update(failed)
        frame = self._drop_non_numeric_arguments(frame, bad)

        if len(bad) > len(decoded.bad):  # bad since decoding: their times do not count
            timing = timing.with_columns(
                pl.when(pl.col(ROW).is_in(list(bad)))
                .then(None)
                .otherwise(pl.col(_TIME))
                .alias(_TIME)
            )
        timed = (
            timing.filter(pl.col(_TIME).is_not_null())
            if timing.get_column(_TIME).null_count()
            else timing
        )
        latest_times = _latest_times(timed) if timed.height else {}
        new_stream_times = {p: t for p, t in stream_times.items() if t is not None}
        for partition, latest in latest_times.items():
            previous = new_stream_times.get(partition)
            new_stream_times[partition] = latest if previous is None else max(previous, latest)
        late: list[RejectedRecord] = []
        datasets: dict[int, bytes] = {}
        last_window: int | None = None
        by_key = task.spec.options.watermark is WatermarkMode.KEY
        clocks = (key_clocks or {}) if by_key else {}
        stored_clocks = {p: decode_clocks(c) for p, c in clocks.items()}
        new_clocks = {p: c for p, c in clocks.items() if c}
        if frame.height:
            frame = self._with_stream_time_before(frame, timing, stream_times, latest_times)
            if by_key:
                frame, new_clocks = self._with_key_clocks(frame, stored_clocks, new_stream_times)
            frame, late_rows = self._split_late(frame)
            late = [
                batch.rejected(row, self._late_reason(t, before))
                for row, t, before in late_rows.select(ROW, _TIME, _BEFORE).iter_rows()
            ]
            if frame.height:
                datasets, last_window = self._datasets(frame)

        return BatchPartials(
            datasets=datasets,
            last_window_start_ms=last_window,
            late=late,
            bad=[batch.rejected(row, bad[row]) for row in sorted(bad)],
            stream_times=new_stream_times,
            key_clocks=new_clocks,
            last_offsets=batch.last_offsets(),
            records_in=len(batch),
            accepted=len(batch) - len(bad) - len(late),
            filtered=filtered,
        )

    def _with_event_time(self, frame: pl.DataFrame, *, now_ms: int) -> pl.DataFrame:
        """`frame` with `_TIME`, the event time in epoch ms (null where missing or invalid)."""
        event_time = self._task.spec.event_time
        if event_time.format is TimeFormat.PROCESSING or not event_time.field:
            return frame.with_columns(pl.lit(now_ms, dtype=pl.Int64).alias(_TIME))
        raw = frame.get_column(event_time.field)
        times = event_time_ms(raw, time_format=event_time.format, now_ms=now_ms).alias(_TIME)
        return frame.with_columns(times)

    def _drop_missing_event_times(self, frame: pl.DataFrame, bad: dict[int, str]) -> pl.DataFrame:
        """Records WHERE kept without a valid event time are bad (a filtered one is not)."""
        if not frame.height or not frame.get_column(_TIME).null_count():
            return frame
        event_time = self._task.spec.event_time
        field = event_time.field
        label = display_path(field_path(field or ""))
        missing = frame.filter(pl.col(_TIME).is_null())
        for row, value in missing.select(ROW, field).iter_rows():
            bad[row] = (
                f"event time field '{label}' is missing"
                if value is None
                else f"event time field '{label}' is not a valid "
                f"{event_time.format.value} timestamp: {value!r:.60}"
            )
        return frame.filter(pl.col(_TIME).is_not_null())

    def _drop_non_numeric_arguments(self, frame: pl.DataFrame, bad: dict[int, str]) -> pl.DataFrame:
        """A numeric aggregate (SUM, AVG, VAR, STDDEV) over an expression that did not give
        numbers: those records are bad."""
        for i, (agg, call) in enumerate(
            zip(self._task.aggregates, self._task.spec.aggregates, strict=True)
        ):
            if not agg.numeric_argument or not frame.height:
                continue
            column = frame.get_column(argument_column(i))
            if column.dtype.is_numeric() or column.dtype == pl.Null:
                continue
            offending = frame.filter(pl.col(argument_column(i)).is_not_null())
            for row, value in offending.select(ROW, argument_column(i)).iter_rows():
                bad[row] = (
                    f"{call.func.value.upper()}({display_sql(call.argument or '')}) needs a "
                    f"number, got {value!r:.60}"
                )
            # What is left is NULL there: give it a numeric type so the aggregate can run.
            frame = frame.filter(pl.col(argument_column(i)).is_null()).with_columns(
                pl.col(argument_column(i)).cast(pl.Int64)
            )
        return frame

    def _late_from(self) -> pl.Expr:
        """Per row, the smallest stream time at which the record is late (mars.windows)."""
        task = self._task
        windows = task.session or task.cumulate or task.window
        return windows.late_from_expr(pl.col(_TIME))

    def _with_stream_time_before(
        self,
        frame: pl.DataFrame,
        timing: pl.DataFrame,
        stream_times: Mapping[int, int | None],
        latest_times: Mapping[int, int],
    ) -> pl.DataFrame:
        """`frame` (rows left to window) with `_BEFORE`: its partition's stream time before each
        record, a running max over `timing` (every decoded row in batch order, `_TIME` null
        where it does not count; `latest_times`: its maxima per partition). Left out for
        tumbling and session windows when nothing in the batch can be late."""
        present = list(latest_times)
        if self._task.window.tumbling or self._task.session is not None:
            # A record is late when the stream time before it reached its `late_from`; that
            # stream time is at most the largest time known before or in the batch: when even
            # the earliest `late_from` is after it, nothing is late, no running max needed.
            known = [t for p in present if (t := stream_times.get(p)) is not None]
            earliest = frame.select(self._late_from().min()).item()
            if earliest is not None and earliest > max([*known, *latest_times.values()]):
                return frame
        # Records whose time does not count leave it where it was: carried over them.
        running = pl.col(_TIME).cum_max().forward_fill().shift(1)
        if timing.get_column(_PARTITION).n_unique() > 1:
            running = running.over(_PARTITION)
        initial: pl.Expr = pl.lit(None, dtype=pl.Int64)
        for partition in present:  # a few partitions: cheaper than a mapping lookup
            if stream_times.get(partition) is not None:
                time = pl.lit(stream_times[partition], dtype=pl.Int64)
                initial = (
                    time
                    if len(present) == 1
                    else pl.when(pl.col(_PARTITION) == partition).then(time).otherwise(initial)
                )
        before = timing.select(pl.max_horizontal(running, initial).alias(_BEFORE)).to_series()
        if timing.height != frame.height:  # both in batch order: `frame`'s rows by position
            rows = frame.get_column(ROW)
            before = before.gather(timing.get_column(ROW).search_sorted(rows))
        return frame.with_columns(before)

    def _with_key_clocks(
        self,
        frame: pl.DataFrame,
        stored: Mapping[int, pl.DataFrame | None],
        stream_times: Mapping[int, int],
    ) -> tuple[pl.DataFrame, dict[int, bytes]]:
        """`watermark = 'key'`: `_BEFORE` becomes each row's effective clock (its key's clock,
        or the stream time less `key_lag`); and the key clocks after the batch, encoded."""
        key_names = [key_column(i) for i in range(len(self._task.keys))]
        lag_ms = self._task.spec.options.key_lag_ms
        groups = self._task.spec.options.key_groups
        frame = with_effective_clock(
            frame,
            key_names=key_names,
            partition_column=_PARTITION,
            time_column=_TIME,
            before_column=_BEFORE,
            clocks=stored,
            lag_ms=lag_ms,
            groups=groups,
        )
        clocks = next_clocks(
            frame,
            key_names=key_names,
            partition_column=_PARTITION,
            time_column=_TIME,
            clocks=stored,
            stream_times=stream_times,
            lag_ms=lag_ms,
            groups=groups,
        )
        return frame, {p: encode_clocks(c) for p, c in clocks.items()}

    def _split_late(self, frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(on-time rows, late rows) by `_BEFORE` (`_with_stream_time_before`; none late
        without it)."""
        if _BEFORE not in frame.columns:
            return frame, frame.clear().with_columns(pl.lit(None, pl.Int64).alias(_BEFORE))
        is_late = frame.select((self._late_from() <= pl.col(_BEFORE)).fill_null(False))
        late_mask = is_late.to_series()
        if not late_mask.any():  # the usual case: no copies
            return frame, frame.clear()
        return frame.filter(~late_mask), frame.filter(late_mask)

    def _late_reason(self, event_time: int, stream_time: int) -> str:
        window, session, cumulate = self._task.window, self._task.session, self._task.cumulate
        if cumulate is not None:
            start = cumulate.max_start(event_time)
            return (
                f"late: event time {event_time} ms falls in cumulative window "
                f"[{start}, {start + cumulate.size_ms}) which closed (grace "
                f"{cumulate.grace_ms} ms) at stream time {stream_time} ms"
            )
        if session is not None:
            return (
                f"late: event time {event_time} ms is more than GRACE ({session.grace_ms} ms) "
                f"behind stream time {stream_time} ms (its session may be closed)"
            )
        start = window.last_start(event_time)
        return (
            f"late: event time {event_time} ms falls in window [{start}, {window.end(start)}) "
            f"which closed (grace {window.grace_ms} ms) at stream time {stream_time} ms"
        )

    def _datasets(self, frame: pl.DataFrame) -> tuple[dict[int, bytes], int | None]:
        """bucket -> encoded data set, and the latest window start among them."""
        task = self._task
        key_names = [key_column(i) for i in range(len(task.keys))]
        aggregates = list(task.aggregates)
        prefixes = [f"__s{i}_" for i in range(len(aggregates))]
        partial_exprs: list[pl.Expr] = []
        for i, agg in enumerate(task.aggregates):
            argument = pl.col(argument_column(i)) if task.arguments[i] is not None else None
            if (
                argument is not None
                and agg.sums_argument
                and frame.schema[argument_column(i)].is_integer()
            ):
                argument = argument.cast(pl.Int128)  # exact: Polars' Int64 sum wraps silently
            if agg.by_event_time and argument is not None:  # FIRST, LAST: value and time
                argument = timed_input(pl.col(_TIME), argument)
            partial_exprs.extend(agg.partial_exprs(argument, prefixes[i]))
        # Only what the windows and the group-by read: a hopping window's explode copies every
        # column once per window of a record, and a session's sort gathers every column; the
        # decoded fields are not needed past here. (120 s windows every 60 s: 1.3-1.4 million
        # CSV records per CPU-second pre-aggregated, against 0.8-1.0 million with the
        # whole frame; `benchmarks/engine_throughput.py --encoding csv --batch 50000`.)
        needed = [
            *key_names,
            *(argument_column(i) for i, arg in enumerate(task.arguments) if arg is not None),
            _TIME,
            *([_BEFORE] if _BEFORE in frame.columns else []),
        ]
        frame = frame.select(needed)
        if task.session is not None:
            frame = _with_session_starts(frame, key_names, gap_ms=task.session.gap_ms)
            session_end = Max()  # the session's last record time: `state_aggregates` order
            aggregates.append(session_end)
            prefixes.append(_SESSION_END_PREFIX)
            partial_exprs.extend(session_end.partial_exprs(pl.col(_TIME), _SESSION_END_PREFIX))
        else:
            frame = self._with_window_starts(frame)
        if task.spec.options.watermark is WatermarkMode.KEY and task.session is None:
            # (a session's end is its key's latest time in the partial already)
            key_time = Max()  # the key's latest time in the partial: the reducer's key clock
            aggregates.append(key_time)
            prefixes.append(_KEY_TIME_PREFIX)
            partial_exprs.extend(key_time.partial_exprs(pl.col(_TIME), _KEY_TIME_PREFIX))
        grouped = frame.group_by([_WINDOW, *key_names]).agg(partial_exprs)
        datasets = encode_bucketed_datasets(
            grouped=grouped,
            window_column=_WINDOW,
            key_columns=key_names,
            aggregates=aggregates,
            state_prefixes=prefixes,
            layout=task.spec.options.layout,
        )
        if not grouped.height:
            return datasets, None
        return datasets, cast(int, grouped.get_column(_WINDOW).max())  # an Int64 column

    def _with_window_starts(self, frame: pl.DataFrame) -> pl.DataFrame:
        """One row per record and window it contributes to, the window's start in `_WINDOW`."""
        window, cumulate = self._task.window, self._task.cumulate
        if cumulate is not None:  # its slice: its own, or the first one still open
            before = pl.col(_BEFORE) if _BEFORE in frame.columns else pl.lit(None, pl.Int64)
            slice_start = cumulate.contribution_slice_expr(pl.col(_TIME), before)
            return frame.with_columns(slice_start.alias(_WINDOW))
        frame = frame.with_columns(window.starts_expr(pl.col(_TIME)).alias(_WINDOW))
        if window.tumbling:
            return frame
        # Contribute only to windows still open at the record's stream time.
        still_open = (
            pl.col(_WINDOW) + (window.size_ms + window.grace_ms) > pl.col(_BEFORE)
        ).fill_null(True)
        return frame.explode(_WINDOW).filter(still_open)


def _with_session_starts(frame: pl.DataFrame, key_names: list[str], *, gap_ms: int) -> pl.DataFrame:
    """`_WINDOW` = the first time of each record's partial session: in time order per group, a
    session ends where the next record is more than `gap_ms` later."""
    frame = frame.sort([*key_names, _TIME])
    time = pl.col(_TIME)
    starts_session = (time - time.shift(1) > gap_ms).fill_null(True)
    for name in key_names:  # the first record of each group starts one too
        starts_session = starts_session | pl.col(name).ne_missing(pl.col(name).shift(1))
    session = starts_session.cum_sum()
    return frame.with_columns(time.min().over(session).alias(_WINDOW))


def _latest_times(frame: pl.DataFrame) -> dict[int, int]:
    """partition -> largest event time, for every partition of `frame` (not empty); one pass
    when it holds a single partition, the usual case."""
    lowest, highest, latest = frame.select(
        pl.col(_PARTITION).min().alias("lowest"),
        pl.col(_PARTITION).max().alias("highest"),
        pl.col(_TIME).max(),
    ).row(0)
    if lowest == highest:
        return {lowest: latest}
    return dict(frame.group_by(_PARTITION).agg(pl.col(_TIME).max()).iter_rows())
