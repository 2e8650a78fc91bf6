"""How the report writes a number, a measurement and a plot (one home for every section)."""

from __future__ import annotations

import math
from typing import Any


def fmt(value: Any, spec: str = ",.0f") -> str:
    """A number for a table; `—` for missing or NaN."""
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    return format(value, spec)


def med(node: Any, spec: str = ",.0f") -> str:
    """A measurement's median, with its runs' min–max when there was more than one run."""
    if isinstance(node, dict) and "median" in node:
        low, high = node.get("min"), node.get("max")
        spread = f" ({fmt(low, spec)}–{fmt(high, spec)})" if len(node.get("runs", [])) > 1 else ""
        return fmt(node["median"], spec) + spread
    return "—"


def image(images: dict[str, str], name: str, title: str) -> list[str]:
    """The Markdown lines of plot `name` when it was drawn (`images`: name -> path)."""
    return [f"![{title}]({images[name]})", ""] if name in images else []
