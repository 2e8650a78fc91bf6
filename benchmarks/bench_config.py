"""What one `mars bench` invocation runs and where it writes: the settings every experiment
shares, and every experiment's own (`Experiment.settings`; the chosen ones use theirs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.codec import to_json

PROJECT_ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True, kw_only=True)
class BenchConfig:
    """The invocation: common settings, and `settings` per experiment name."""

    quick: bool
    runs: int
    experiments: tuple[str, ...]
    records: int  # in the preloaded topic S
    partitions: int = 4
    span_s: int = 600
    mappers: int = 2  # the Mars processes of every end-to-end and live run ...
    reducers: int = 1  # ... unless an experiment's settings say otherwise
    timeout_s: float = 900.0
    settings: Mapping[str, Any] = field(default_factory=dict)
    run_dir: Path = PROJECT_ROOT / ".mars" / "bench"
    results_dir: Path = PROJECT_ROOT / "benchmarks" / "results"
    docs_path: Path = PROJECT_ROOT / "docs" / "benchmarks.md"
    img_dir: Path = PROJECT_ROOT / "docs" / "img"
    command: str = "mars bench"

    @classmethod
    def build(
        cls,
        *,
        quick: bool,
        runs: int | None,
        experiments: tuple[str, ...],
        command: str,
        nexmark_records: int | None = None,
    ) -> BenchConfig:
        """`runs` (None: 3, `--quick` 1) also replaces the `runs` of an experiment's settings
        that has its own default; `nexmark_records` the nexmark experiment's `records`."""
        from benchmarks.registry import BY_NAME, NAMES  # it imports this module

        unknown = set(experiments) - set(NAMES)
        if unknown:
            raise ValueError(f"unknown experiments {sorted(unknown)}; known: {NAMES}")
        overrides: dict[str, dict[str, Any]] = {"nexmark": {"records": nexmark_records}}
        settings = {}
        for name, experiment in BY_NAME.items():
            found = experiment.settings(quick=quick)
            changes = {k: v for k, v in overrides.get(name, {}).items() if v}
            if runs and "runs" in {f.name for f in dataclasses.fields(found)}:
                changes["runs"] = runs
            settings[name] = dataclasses.replace(found, **changes) if changes else found
        return cls(
            quick=quick,
            runs=runs or (1 if quick else 3),
            experiments=experiments,
            records=100_000 if quick else 300_000,
            settings=settings,
            command=command,
        )

    def of(self, name: str) -> Any:
        """The settings of experiment `name`."""
        return self.settings[name]

    def to_json(self) -> dict[str, Any]:
        """The config as the results file keeps it (paths left out)."""
        return {
            f.name: to_json(getattr(self, f.name))
            for f in dataclasses.fields(self)
            if not isinstance(getattr(self, f.name), Path)
        }
