"""How the report writes a number (one home for every section)."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any, spec: str = ",.0f") -> str:
    """A number for a table; `—` for missing or NaN."""
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    return format(value, spec)
