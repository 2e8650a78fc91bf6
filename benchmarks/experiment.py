"""What an experiment is to the runner and the report: the `Experiment` protocol.

An experiment has a name, its own settings (a frozen dataclass whose defaults are the full
run's and whose `QUICK` class variable holds the `--quick` values), a typed result (a
dataclass, or a mapping of them, that `benchmarks.codec` turns into JSON and back) and the
report sections it renders. Adding one: a module that defines it, plus its line in
`benchmarks.registry`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from benchmarks.bench_config import BenchConfig
from benchmarks.codec import from_json
from benchmarks.harness import BenchCluster
from benchmarks.workload import Dataset, preload

S = TypeVar("S")
R = TypeVar("R")
Log = Callable[[str], None]
TEMPLATES = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True, slots=True)
class Section:
    """A `## ` section of docs/benchmarks.md: where it goes (the report sorts by `order`,
    the number in its heading) and its heading (how a partial run's merge finds it)."""

    order: float
    heading: str


@dataclass(slots=True, kw_only=True)
class Context:
    """What an experiment's run is given: the cluster, the invocation's common settings, the
    topic S preloaded for the experiments that read it, and the results measured so far in
    this invocation (one experiment may take a figure of an earlier one)."""

    bench: BenchCluster
    config: BenchConfig
    log: Log
    loaded: Dataset | None = None
    results: dict[str, object] = field(default_factory=dict)

    def dataset(self) -> Dataset:
        assert self.loaded is not None, "preloaded when an experiment with uses_dataset runs"
        return self.loaded

    def preload(self, *, topic: str = "S", records: int = 0) -> Dataset:
        """`records` (default the config's) of the reference tuples preloaded into `topic`."""
        records = records or self.config.records
        self.log(f"preloading {records:,} records into topic {topic} ...")
        data = preload(
            self.bench.kafka,
            topic=topic,
            records=records,
            partitions=self.config.partitions,
            span_s=self.config.span_s,
        )
        self.log(f"  {data.mbytes:.1f} MB at {data.produce_rate:,.0f} records/s")
        return data

    def work_dir(self, name: str) -> Path:
        """Where an experiment's child processes write logs, checkpoints and state."""
        path = self.config.run_dir / name
        path.mkdir(parents=True, exist_ok=True)
        return path


class Experiment(Protocol[S, R]):
    """One experiment of `mars bench`."""

    @property
    def name(self) -> str:
        """Its `--experiments` name and its key in the results file."""

    @property
    def title(self) -> str:
        """What the runner logs as it starts."""

    @property
    def sections(self) -> tuple[Section, ...]:
        """The report sections `report` renders, in the same order."""

    @property
    def uses_dataset(self) -> bool:
        """Whether it reads the preloaded topic S (`Context.dataset`)."""

    def settings(self, *, quick: bool) -> S:
        """Its settings for a full run or a `--quick` one."""

    def run(self, ctx: Context, settings: S) -> R:
        """Measure; the result is written to the results file in its JSON form."""

    def decode(self, data: Any) -> R:
        """The result from its JSON form."""

    def report(self, result: R | None, images: Mapping[str, str]) -> tuple[str, ...]:
        """Each section's Markdown below its heading; `result` None: not run."""


class Base(Generic[S, R]):
    """The parts every experiment shares: settings from the dataclass and its `QUICK`
    values, the result decoded by its type hints. A subclass sets the class variables and
    writes `run` and `report`."""

    name: ClassVar[str]
    title: ClassVar[str]
    sections: ClassVar[tuple[Section, ...]]
    uses_dataset: ClassVar[bool] = False
    settings_type: ClassVar[type[Any]]
    result_type: ClassVar[type[Any]]

    def settings(self, *, quick: bool) -> S:
        found: Any = self.settings_type()
        quick_values: Mapping[str, Any] = getattr(self.settings_type, "QUICK", {})
        chosen: S = dataclasses.replace(found, **quick_values) if quick else found
        return chosen

    def decode(self, data: Any) -> R:
        found: R = from_json(self.result_type, data)
        return found

    def not_run(self) -> tuple[str, ...]:
        return tuple("Not run." for _ in self.sections)


@dataclass(frozen=True, slots=True)
class NoSettings:
    """For an experiment that has no settings of its own."""


def note(notes: list[str], text: str, log: Log) -> None:
    """`text` logged, and kept in a result's `notes` unless it is there already."""
    log(f"  {text}")
    if text not in notes:
        notes.append(text)


def env_ints(name: str, default: tuple[int, ...]) -> tuple[int, ...]:
    """Opt-in sizes of an experiment from the environment (`NAME=1,10,50`), else `default`."""
    value = os.environ.get(name)
    return tuple(int(v) for v in value.split(",")) if value else default


def render(template: str, **values: object) -> str:
    """`templates/<template>.md` with `$name`s filled in (`string.Template`), the blank
    lines an empty value leaves collapsed."""
    text = Template((TEMPLATES / f"{template}.md").read_text()).substitute(values)
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n")
