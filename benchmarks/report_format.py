"""How the report writes a number, a measurement and a plot (one home for every section)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from benchmarks.stats import Summary


def fmt(value: Any, spec: str = ",.0f") -> str:
    """A number for a table; `—` for missing or NaN."""
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    return format(value, spec)


def med(node: Summary | None, spec: str = ",.0f") -> str:
    """A measurement's median, with its runs' min–max when there was more than one run
    (`—` when missing)."""
    if node is None:
        return "—"
    spread = f" ({fmt(node.min, spec)}–{fmt(node.max, spec)})" if len(node.runs) > 1 else ""
    return fmt(node.median, spec) + spread


def image(images: Mapping[str, str], name: str, title: str) -> str:
    """The Markdown of plot `name` when it was drawn (`images`: name -> path), else ``."""
    return f"![{title}]({images[name]})" if name in images else ""


def bullets(items: Iterable[str]) -> str:
    """`- item` lines."""
    return "\n".join(f"- {item}" for item in items)
