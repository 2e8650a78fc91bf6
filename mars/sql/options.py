"""Task options: from the SQL's `WITH (...)` clause and the caller's mapping (which wins).

Options: event_time, event_time_format, format, csv_columns, csv_delimiter, output_topic,
buckets, idle_timeout, emit ('final' or 'changes'; the SQL's `EMIT` clause sets it too),
emit_interval and preaggregation ('mappers' or 'spark': who pre-aggregates the live stream);
watermark ('partition' or 'key'), key_lag and key_groups (`mars.sql.key_watermark`);
schema_file and protobuf_message for format = avro / protobuf (`mars.sql.schema_options`).
Every value is validated here; an unknown name is an error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mars.sql.clauses import OptionValue
from mars.sql.durations import MAX_DURATION_MS, DurationError, parse_duration_text
from mars.sql.errors import TaskError
from mars.sql.schema_options import SchemaOptionError, SchemaOptions, read_schema_options
from mars.tasks.bucket_layout import MAX_BUCKETS
from mars.tasks.field_paths import FieldPathError, path_name, read_path_text
from mars.tasks.spec import (
    CsvFormat,
    EventTime,
    InputFormat,
    Preaggregation,
    TaskOptions,
    TimeFormat,
    WatermarkMode,
)

KNOWN_OPTIONS = (
    "event_time",
    "event_time_format",
    "format",
    "csv_columns",
    "csv_delimiter",
    "output_topic",
    "buckets",
    "idle_timeout",
    "emit",
    "emit_interval",
    "preaggregation",
    "schema_file",
    "protobuf_message",
    "watermark",
    "key_lag",
    "key_groups",
)
DEFAULT_EVENT_TIME_FIELD = "timestamp"
MAX_KEY_GROUPS = 1 << 20  # a bound on the clocks' state, not on the keys
PROCESSING_TIME = "processing"
DEFAULT_EMIT_INTERVAL_MS = 1_000
MIN_EMIT_INTERVAL_MS = 100

_FIELD_NAME = re.compile(r"^[^\s,]+$")
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedOptions:
    event_time: EventTime
    task_options: TaskOptions


def resolve_options(
    clause: Mapping[str, OptionValue], given: Mapping[str, Any] | None
) -> ResolvedOptions:
    """Merge the WITH clause with the mapping (mapping wins) and validate every value."""
    merged: dict[str, OptionValue] = dict(clause)
    for key, value in (given or {}).items():
        merged[str(key).lower()] = OptionValue(value=value, position=-1)
    for key, option in merged.items():
        if key not in KNOWN_OPTIONS:
            raise TaskError(
                f"unknown option '{key}'; known options: {', '.join(KNOWN_OPTIONS)}",
                position=_where(option),
            )
    reader = _OptionReader(merged)
    return ResolvedOptions(event_time=reader.event_time(), task_options=reader.task_options())


def _where(option: OptionValue) -> int | None:
    return option.position if option.position >= 0 else None


class _OptionReader:
    """Reads typed values out of the merged options, raising TaskError at the value."""

    def __init__(self, options: Mapping[str, OptionValue]):
        self._options = options

    def _fail(self, key: str, message: str) -> TaskError:
        return TaskError(f"option {key}: {message}", position=_where(self._options[key]))

    def _text(self, key: str) -> str | None:
        option = self._options.get(key)
        if option is None:
            return None
        if not isinstance(option.value, str) or not option.value.strip():
            raise self._fail(key, f"expected a non-empty text value, got {option.value!r}")
        return option.value.strip()

    def _choice(self, key: str, choices: tuple[str, ...]) -> str | None:
        text = self._text(key)
        if text is not None and text.lower() not in choices:
            raise self._fail(key, f"'{text}' is not one of {', '.join(choices)}")
        return text.lower() if text is not None else None

    def event_time(self) -> EventTime:
        field = self._text("event_time") or DEFAULT_EVENT_TIME_FIELD
        choices = tuple(f.value for f in TimeFormat if f is not TimeFormat.PROCESSING)
        time_format = self._choice("event_time_format", choices)
        if field.lower() == PROCESSING_TIME:
            if time_format is not None:
                raise self._fail("event_time_format", "has no meaning with processing time")
            return EventTime(field=None, format=TimeFormat.PROCESSING)
        if "[" not in field and not _FIELD_NAME.match(field):
            raise self._fail("event_time", f"'{field}' is not a field name")
        try:  # a nested field as in the SQL: `meta.ts`, `meta['a key']`, `meta.ts[0]`
            field = path_name(read_path_text(field))
        except FieldPathError as error:
            raise self._fail("event_time", str(error)) from None
        return EventTime(field=field, format=TimeFormat(time_format or TimeFormat.EPOCH_S))

    def task_options(self) -> TaskOptions:
        input_format = InputFormat(
            self._choice("format", tuple(f.value for f in InputFormat)) or "json"
        )
        csv = self._csv(input_format)
        schema = self._schema(input_format)
        output_topic = self._text("output_topic")
        if output_topic is not None and not _TOPIC_NAME.match(output_topic):
            raise self._fail("output_topic", f"'{output_topic}' is not a valid Kafka topic name")
        return TaskOptions(
            input_format=input_format,
            csv=csv,
            output_topic=output_topic,
            buckets=self._buckets(),
            idle_timeout_ms=self._idle_timeout_ms(),
            emit_interval_ms=self._emit_interval_ms(),
            preaggregation=Preaggregation(
                self._choice("preaggregation", tuple(p.value for p in Preaggregation))
                or Preaggregation.MAPPERS
            ),
            schema_file=schema.schema_file,
            protobuf_message=schema.protobuf_message,
            watermark=WatermarkMode(
                self._choice("watermark", tuple(m.value for m in WatermarkMode))
                or WatermarkMode.PARTITION
            ),
            key_lag_ms=self._key_lag_ms(),
            key_groups=self._key_groups(),
        )

    def _key_lag_ms(self) -> int:
        if "key_lag" not in self._options:
            return TaskOptions().key_lag_ms
        if self._choice("watermark", tuple(m.value for m in WatermarkMode)) != "key":
            raise self._fail("key_lag", "needs watermark = 'key'")
        return self._duration_ms("key_lag", minimum_ms=0)

    def _key_groups(self) -> int | None:
        option = self._options.get("key_groups")
        if option is None:
            return None
        if self._choice("watermark", tuple(m.value for m in WatermarkMode)) != "key":
            raise self._fail("key_groups", "needs watermark = 'key'")
        value = option.value
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not 1 <= value <= MAX_KEY_GROUPS
        ):
            raise self._fail(
                "key_groups", f"expected an integer from 1 to {MAX_KEY_GROUPS}, got {value!r}"
            )
        return value

    def _schema(self, input_format: InputFormat) -> SchemaOptions:
        for key in ("schema_file", "protobuf_message"):
            if key in self._options:
                self._text(key)  # a non-empty text, or the error says so
        try:
            return read_schema_options(
                input_format,
                schema_file=self._text("schema_file"),
                protobuf_message=self._text("protobuf_message"),
            )
        except SchemaOptionError as error:
            raise self._fail(error.key, str(error)) from None

    def _csv(self, input_format: InputFormat) -> CsvFormat | None:
        has_columns = "csv_columns" in self._options
        has_delimiter = "csv_delimiter" in self._options
        if input_format is not InputFormat.CSV:
            for key in ("csv_columns", "csv_delimiter"):
                if key in self._options:
                    raise self._fail(key, "needs format = csv")
            return None
        if not has_columns:
            raise TaskError("format = csv needs the option csv_columns (a comma list of names)")
        raw = self._options["csv_columns"].value
        columns = raw if isinstance(raw, list | tuple) else str(raw).split(",")
        names = tuple(str(c).strip() for c in columns)
        if not names or any(not n for n in names):
            raise self._fail("csv_columns", f"{raw!r} is not a comma list of column names")
        if len(set(names)) != len(names):
            raise self._fail("csv_columns", "a column name is repeated")
        delimiter = "," if not has_delimiter else self._options["csv_delimiter"].value
        if not isinstance(delimiter, str) or len(delimiter) != 1:
            raise self._fail("csv_delimiter", f"expected one character, got {delimiter!r}")
        return CsvFormat(columns=names, delimiter=delimiter)

    def _buckets(self) -> int:
        option = self._options.get("buckets")
        if option is None:
            return TaskOptions().buckets
        value = option.value
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_BUCKETS:
            raise self._fail(
                "buckets", f"expected an integer from 1 to {MAX_BUCKETS}, got {value!r}"
            )
        return value

    def _idle_timeout_ms(self) -> int:
        if "idle_timeout" not in self._options:
            return TaskOptions().idle_timeout_ms
        return self._duration_ms("idle_timeout", minimum_ms=1)

    def _emit_interval_ms(self) -> int | None:
        """None: final results only; else at most one update per window and group per this
        many ms (EMIT CHANGES)."""
        changes = self._choice("emit", ("final", "changes")) == "changes"
        if "emit_interval" in self._options:
            if not changes:
                raise self._fail("emit_interval", "needs EMIT CHANGES (or emit = 'changes')")
            return self._duration_ms("emit_interval", minimum_ms=MIN_EMIT_INTERVAL_MS)
        return DEFAULT_EMIT_INTERVAL_MS if changes else None

    def _duration_ms(self, key: str, *, minimum_ms: int) -> int:
        value = self._options[key].value
        try:
            if isinstance(value, bool):
                raise DurationError(f"expected a duration, got {value!r}")
            ms = value if isinstance(value, int) else parse_duration_text(str(value))
        except DurationError as err:
            raise self._fail(key, str(err)) from None
        if not minimum_ms <= ms <= MAX_DURATION_MS:
            least = "positive" if minimum_ms == 1 else f"at least {minimum_ms} ms"
            raise self._fail(key, f"must be {least} and at most 10 years, got {value!r}")
        return ms
