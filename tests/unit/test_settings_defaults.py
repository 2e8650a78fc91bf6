"""Every setting's default has one source, the models in `mars.config`: `configs/mars.toml` and the
README's table must say the same (`mars.settings_docs` writes both; rerun it after a change)."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from mars.config import DEFAULT_CONFIG_FILE, Settings
from mars.settings_docs import (
    README,
    TOML_OMITTED,
    Setting,
    all_settings,
    readme_default,
    readme_table,
    readme_table_span,
    toml_text,
)

REGENERATE = "run `.venv/bin/python -m mars.settings_docs --write`"
README_ROW = re.compile(r"^\| `(MARS_\w+)` \| `([^`]*)` \|", re.MULTILINE)


def toml_drift(parsed: Mapping[str, Any], settings: Sequence[Setting]) -> list[str]:
    """How a parsed TOML file differs from the defaults: missing, unknown and unequal keys."""
    expected = {s.key: s.default for s in settings if s.key not in TOML_OMITTED}
    found: dict[str, object] = {}
    for section, table in parsed.items():
        if not isinstance(table, dict):
            found[section] = table
            continue
        found.update({f"{section}.{name}": value for name, value in table.items()})
    problems = [f"{key}: missing" for key in expected.keys() - found.keys()]
    problems += [
        f"{key}: unknown" + (" (TOML_OMITTED leaves it out)" if key in TOML_OMITTED else "")
        for key in found.keys() - expected.keys()
    ]
    for key in expected.keys() & found.keys():
        want, got = expected[key], found[key]
        # type too: `true` must not pass for 1, nor 10 for 10.0
        if got != want or type(got) is not type(want):
            problems.append(f"{key}: {got!r} in the TOML, {want!r} in mars/config.py")
    return sorted(problems)


def readme_drift(readme: str, settings: Sequence[Setting]) -> list[str]:
    """How the README's table rows (variable -> default) differ from the defaults."""
    rows = README_ROW.findall(readme)
    found = dict(rows)
    problems = [f"{name}: {count} rows" for name, count in _duplicates(rows).items()]
    expected = {s.env_name: readme_default(s.default) for s in settings}
    problems += [f"{name}: no row" for name in expected.keys() - found.keys()]
    problems += [f"{name}: a row, but no such setting" for name in found.keys() - expected.keys()]
    problems += [
        f"{name}: `{found[name]}` in the README, `{want}` in mars/config.py"
        for name, want in expected.items()
        if name in found and found[name] != want
    ]
    return sorted(problems)


def _duplicates(rows: Sequence[tuple[str, str]]) -> dict[str, int]:
    counts = Counter(name for name, _ in rows)
    return {name: count for name, count in counts.items() if count > 1}


def test_the_toml_holds_every_default() -> None:
    with DEFAULT_CONFIG_FILE.open("rb") as file:
        parsed = tomllib.load(file)
    problems = toml_drift(parsed, all_settings())
    assert not problems, "\n".join([f"{DEFAULT_CONFIG_FILE}: {REGENERATE}", *problems])


def test_the_toml_loads_to_the_defaults() -> None:
    """What the program reads from the TOML, validated, equals each section's defaults."""
    with DEFAULT_CONFIG_FILE.open("rb") as file:
        parsed = tomllib.load(file)
    for section, field in Settings.model_fields.items():
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        assert model.model_validate(parsed[section]) == model(), section


def test_the_readme_table_holds_every_default() -> None:
    readme = README.read_text(encoding="utf-8")
    problems = readme_drift(readme, all_settings())
    assert not problems, "\n".join([f"{README}: {REGENERATE}", *problems])


def test_the_generated_files_are_up_to_date() -> None:
    """Descriptions too: the whole TOML and the whole table are the generator's output."""
    settings = all_settings()
    assert DEFAULT_CONFIG_FILE.read_text(encoding="utf-8") == toml_text(settings), REGENERATE
    readme = README.read_text(encoding="utf-8")
    start, end = readme_table_span(readme)
    assert readme[start:end] == readme_table(settings), REGENERATE


def test_every_omission_from_the_toml_names_a_setting() -> None:
    assert TOML_OMITTED.keys() <= {s.key for s in all_settings()}


def test_the_checks_see_each_kind_of_drift() -> None:
    settings = all_settings()
    toml = toml_text(settings)
    assert toml_drift(tomllib.loads(toml), settings) == []
    drifted = (
        toml.replace("batch_size = 50000", "batch_size = 5000")  # another value
        .replace("interval_s = 10.0", "interval_s = 10")  # another type
        .replace("min_insync_replicas = 1\n", "")  # a key missing
        .replace("[redis]\n", '[redis]\npassword = "x"\nurl2 = "y"\n')  # unknown keys
        .replace("[local]\n", '[local]\nrun_dir = ".mars/local"\n')  # an omitted one present
    )
    assert len(toml_drift(tomllib.loads(drifted), settings)) == 6

    table = readme_table(settings)
    assert readme_drift(table, settings) == []
    drifted = (
        table.replace("| `50000` |", "| `5000` |")  # another default
        .replace("| `MARS_MAPPER__CONSUMER` |", "| `MARS_MAPPER__CONSUMERS` |")  # gone + unknown
        .replace("| `MARS_API__TOKEN` |", "| `MARS_API__PORT` |")  # a duplicate and a wrong port
    )
    assert len(readme_drift(drifted, settings)) == 6
