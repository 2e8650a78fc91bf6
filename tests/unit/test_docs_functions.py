"""docs/semantics.md's table of aggregate functions names every aggregate the language has, and
every name it gives parses."""

from __future__ import annotations

import re
from pathlib import Path

from mars.sql import parse_task
from mars.sql.errors import TaskError
from mars.tasks.spec import AggFunc

SEMANTICS = Path(__file__).resolve().parents[2] / "docs" / "semantics.md"
HEADING = "## Every aggregate function"


def _table() -> str:
    text = SEMANTICS.read_text()
    start = text.index(HEADING)
    return text[start : text.index("\n## ", start + 1)]


def _first_cells() -> list[str]:
    return [line.split("|")[1] for line in _table().splitlines() if line.startswith("| `")]


def test_the_table_names_every_aggregate() -> None:
    named = " ".join(_first_cells()).upper()
    # APPROX_PERCENTILES is the state of APPROX_PERCENTILE over a list, which has its own row.
    listed = [f for f in AggFunc if f is not AggFunc.APPROX_PERCENTILES]
    missing = [f for f in listed if f.value.upper().replace("_DISTINCT", "") not in named]
    assert missing == []
    assert "COUNT(DISTINCT" in named


def test_every_function_the_table_names_parses() -> None:
    calls = re.findall(r"`([A-Z_]+)\(([^`]*)\)`", " ".join(_first_cells()))
    aliases = re.findall(r"`([A-Z_]+)`", " ".join(_first_cells()))
    assert len(calls) >= len(AggFunc)
    for name, argument in calls:
        argument = {"col": "v", "cond": "v > 1", "col, p": "v, 0.9", "col, k": "v, 3"}.get(
            argument, argument.replace("col", "v").replace("[p, ...]", "[0.5, 0.9]")
        )
        sql = f"SELECT k, {name}({argument}) FROM s GROUP BY k WINDOWING 1 m"
        parse_task(sql, task_id="docs")
    assert {"VARIANCE", "STDDEV", "PERCENTILE_APPROX", "APPROX_TOP_K"} <= set(aliases)
    for alias in aliases:  # one argument, or the column and a parameter
        _parses_with_one_of(alias, ["v", "v, 0.9", "v, 3"])


def _parses_with_one_of(name: str, arguments: list[str]) -> None:
    errors = []
    for argument in arguments:
        try:
            parse_task(f"SELECT k, {name}({argument}) FROM s GROUP BY k WINDOWING 1 m", task_id="d")
            return
        except TaskError as error:
            errors.append(str(error))
    raise AssertionError(f"{name}: {errors}")
