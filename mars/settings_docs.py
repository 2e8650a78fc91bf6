"""`configs/mars.toml` and the README's settings table, generated from the models in `mars.config`.

Each field's default and `description` in `mars.config` is the one source; both files are its
output, and `tests/unit/test_settings_defaults.py` fails when either differs from it:

    python -m mars.settings_docs            # print the TOML, then the README table
    python -m mars.settings_docs --write    # rewrite configs/mars.toml and the README's table
"""

from __future__ import annotations

import argparse
import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from mars.config import DEFAULT_CONFIG_FILE, PROJECT_ROOT, Settings, setting_env_name

README = PROJECT_ROOT / "README.md"
TABLE_START = (
    "<!-- settings table, generated from mars/config.py: python -m mars.settings_docs --write -->"
)
TABLE_END = "<!-- end of settings table -->"

# The only settings the TOML leaves out, each with the reason written into the TOML in its place.
# The test reads this: a key outside it missing from the TOML fails, and so does one inside it
# that the TOML has.
TOML_OMITTED: Mapping[str, str] = {
    "local.run_dir": "a path under the checkout (.mars/local): not written here, because a "
    "relative path in this file would be read from the working directory",
    "local.jars_dir": "likewise under the checkout (.cache/jars)",
    "schema_registry.url": 'unset by default (TOML has no null); `url = "http://..."` here, '
    "or MARS_SCHEMA_REGISTRY__URL",
    "reducer.state_budget_bytes": "unset by default (TOML has no null): no spilling; "
    "`state_budget_bytes = 268435456` here, or MARS_REDUCER__STATE_BUDGET_BYTES",
    "reducer.spill_dir": "a path under the checkout (.mars/spill), like local.run_dir",
}

TOML_HEADER = """\
# Mars default settings, generated from mars/config.py by `python -m mars.settings_docs --write`:
# change a default there, not here (tests/unit/test_settings_defaults.py compares the two).
# Every value can be overridden by an environment variable MARS_<SECTION>__<NAME>, e.g.
# MARS_MAPPER__BATCH_SIZE=10000; MARS_CONFIG_FILE points at another file. See README
# "Configuration".
"""


@dataclass(frozen=True, slots=True)
class Setting:
    """One field of one section of `Settings`, with its default and description."""

    section: str
    name: str
    default: object
    description: str

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def env_name(self) -> str:
        return setting_env_name((self.section, self.name))


def all_settings() -> list[Setting]:
    """Every setting in declaration order; a field without a description is an error."""
    found: list[Setting] = []
    for section, section_field in Settings.model_fields.items():
        model = section_field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for name, field in model.model_fields.items():
            if not field.description:
                raise ValueError(f"{section}.{name} has no description (Field(description=...))")
            default = field.get_default(call_default_factory=True)
            found.append(Setting(section, name, default, field.description))
    return found


def readme_default(value: object) -> str:
    """A default as the README shows it: paths relative to the checkout, strings as they are,
    JSON for the rest."""
    if isinstance(value, Path):
        return value.relative_to(PROJECT_ROOT).as_posix() if value.is_absolute() else str(value)
    if isinstance(value, str):
        return value
    if value is None:
        return "(unset)"
    return json.dumps(value)


def toml_value(value: object) -> str:
    """A default as a TOML value (settings hold bool, int, float, str and dict[str, str])."""
    if isinstance(value, bool | int | float | str):
        # JSON's literals and string escapes are valid TOML; a float keeps its `.0`.
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_value(k)} = {toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    raise TypeError(f"no TOML form for {value!r}")


def _comment(text: str) -> list[str]:
    return textwrap.wrap(text, width=98, initial_indent="# ", subsequent_indent="# ")


def toml_text(settings: Sequence[Setting]) -> str:
    """`configs/mars.toml`: every setting but `TOML_OMITTED`, each under its description."""
    lines = TOML_HEADER.splitlines()
    section = ""
    for setting in settings:
        if setting.section != section:
            section = setting.section
            lines += ["", f"[{section}]"]
        if setting.key in TOML_OMITTED:
            lines += _comment(f"{setting.name}: {TOML_OMITTED[setting.key]}")
            continue
        lines += _comment(setting.description)
        lines.append(f"{setting.name} = {toml_value(setting.default)}")
    return "\n".join(lines) + "\n"


def readme_table(settings: Sequence[Setting]) -> str:
    """The README's table between its markers: one row per setting."""
    rows = [TABLE_START, "| setting | default | meaning |", "|---|---|---|"]
    for setting in settings:
        assert "|" not in setting.description, f"{setting.key}: a `|` would split the row"
        default = readme_default(setting.default)
        rows.append(f"| `{setting.env_name}` | `{default}` | {setting.description} |")
    rows.append(TABLE_END)
    return "\n".join(rows)


def readme_table_span(readme: str) -> tuple[int, int]:
    """Where the generated table is in the README's text, from its start marker to its end marker's
    end (`ValueError` without them)."""
    start = readme.index(TABLE_START)
    return start, readme.index(TABLE_END, start) + len(TABLE_END)


def write(config_file: Path = DEFAULT_CONFIG_FILE, readme_file: Path = README) -> None:
    """Rewrite the whole TOML file and the README between the table's markers."""
    settings = all_settings()
    config_file.write_text(toml_text(settings), encoding="utf-8")
    readme = readme_file.read_text(encoding="utf-8")
    start, end = readme_table_span(readme)
    readme_file.write_text(readme[:start] + readme_table(settings) + readme[end:], encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mars.settings_docs", description=__doc__)
    parser.add_argument("--write", action="store_true", help="rewrite both files in place")
    args = parser.parse_args(argv)
    if args.write:
        write()
    else:
        settings = all_settings()
        print(toml_text(settings))
        print(readme_table(settings))


if __name__ == "__main__":
    main()
