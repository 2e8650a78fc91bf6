"""Durations of the task language (`60 s`, `5 minutes`, `250 ms`) as integer milliseconds."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

UNIT_MS: dict[str, int] = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1_000),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}

UNIT_HELP = "use ms, s, m, h or d"

# Durations end up added to epoch milliseconds in int64; ten years is far more than any task
# needs and keeps every sum far from overflow.
MAX_DURATION_MS = 10 * 365 * 86_400_000

_DURATION_TEXT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


class DurationError(ValueError):
    """A duration that cannot be read; the message says why (no position: callers add it)."""


def is_unit(word: str) -> bool:
    return word.lower() in UNIT_MS


def duration_ms(number: str, unit: str) -> int:
    """Milliseconds of `number unit`, e.g. ("60", "s") -> 60000; must be a whole number of ms."""
    factor = UNIT_MS.get(unit.lower())
    if factor is None:
        raise DurationError(f"unknown time unit '{unit}'; {UNIT_HELP}")
    try:
        value = Decimal(number) * factor
    except InvalidOperation:
        raise DurationError(f"'{number}' is not a number") from None
    if value != value.to_integral_value():
        raise DurationError(f"'{number} {unit}' is not a whole number of milliseconds")
    if abs(value) > MAX_DURATION_MS:
        raise DurationError(f"'{number} {unit}' is longer than the maximum of 10 years")
    return int(value)


def parse_duration_text(text: str) -> int:
    """Milliseconds of a duration written as text: '30 s', '1.5m', or a bare number of ms."""
    match = _DURATION_TEXT.match(text)
    if match is None:
        raise DurationError(f"'{text}' is not a duration like '30 s'; {UNIT_HELP}")
    number, unit = match.groups()
    return duration_ms(number, unit or "ms")
