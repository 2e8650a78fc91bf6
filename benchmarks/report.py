"""`docs/benchmarks.md` from a results file's JSON form: the run's header and targets, then
every experiment's sections (`Experiment.report`) in the order of their numbers."""

from __future__ import annotations

import os
import re
from typing import Any

from benchmarks.bench_config import BenchConfig
from benchmarks.experiment import Section, render
from benchmarks.plots import plot_all
from benchmarks.registry import EXPERIMENTS, NAMES
from benchmarks.report_format import bullets, fmt
from benchmarks.report_merge import merge_report
from benchmarks.targets import check_targets

# The sections each experiment renders: a run of some experiments replaces only these in an
# earlier report (benchmarks.report_merge).
SECTIONS: dict[str, tuple[str, ...]] = {
    e.name: tuple(section.heading for section in e.sections) for e in EXPERIMENTS
}


def render_report(results: dict[str, Any], *, images: dict[str, str]) -> str:
    """The whole report. `images` maps a plot name to its path relative to docs/."""
    sections: list[tuple[Section, str]] = []
    for experiment in EXPERIMENTS:
        found = results.get(experiment.name)
        result = experiment.decode(found) if found else None
        bodies = experiment.report(result, images)
        sections += zip(experiment.sections, bodies, strict=True)
    sections.sort(key=lambda pair: pair[0].order)
    text = "\n".join(
        [
            _header(results),
            *(f"{s.heading}\n\n{_tidy(body)}" for s, body in sections),
            render("method") + "\n",
        ]
    )
    return text.rstrip() + "\n"


def _tidy(body: str) -> str:
    """A section's body with single blank lines between its parts and one newline after."""
    return re.sub(r"\n{3,}", "\n\n", body).strip("\n") + "\n"


def _header(results: dict[str, Any]) -> str:
    machine = results.get("machine", {})
    data = results.get("dataset", {})
    targets = [
        f"| {row.name} | {row.target} | {row.measured} | {row.verdict} "
        f"| {fmt(row.of_goal, '.0%')} |"
        for row in check_targets(results)
    ]
    text = render(
        "header",
        command=results.get("command", "mars bench"),
        date=machine.get("date", "?"),
        code=_code_text(results.get("code", {})),
        nproc=machine.get("nproc", "?"),
        cpu_model=machine.get("cpu_model", "?"),
        ram_gib=machine.get("ram_gib", "?"),
        kernel=machine.get("kernel", "?"),
        python=machine.get("python", "?"),
        load_start=machine.get("load_average", "?"),
        load_end=results.get("load_average_end", "?"),
        runs=results.get("config", {}).get("runs", "?"),
        quick=" (`--quick`: a smoke check, not a measurement)" if results.get("quick") else "",
        records=fmt(data.get("records")),
        mean_bytes=fmt(data.get("mean_bytes"), ".0f"),
        mbytes=fmt(data.get("mbytes"), ".1f"),
        partitions=data.get("partitions", "?"),
        span_s=data.get("span_s", "?"),
        targets="\n".join(targets),
        notes=bullets(results.get("notes", [])),
    )
    return _tidy(text)


def _code_text(code: dict[str, Any]) -> str:
    uncommitted = code.get("uncommitted")
    changes = f" plus uncommitted changes in {', '.join(uncommitted)}" if uncommitted else ""
    return f"commit `{code.get('commit', '?')}`{changes}"


def run_note(results: dict[str, Any]) -> str:
    """The line that opens a section merged into an earlier report: which run measured it."""
    machine = results.get("machine", {})
    return (
        f"*Measured by `{results.get('command', 'mars bench')}` on {machine.get('date', '?')}, "
        f"{_code_text(results.get('code', {}))}, load average at start "
        f"{machine.get('load_average', '?')}, at the end {results.get('load_average_end', '?')}"
        ': not the run of "Machine and run" above.*'
    )


def write_report(results: dict[str, Any], config: BenchConfig) -> int:
    """The plots the results allow, and the report: whole after a run of every experiment
    (or when there is none yet), else only the sections of the experiments this run
    measured, merged into the report there, each saying which run it comes from. Returns
    how many plots were written."""
    images = plot_all(results, config.img_dir)
    docs_dir = config.docs_path.parent
    relative = {name: os.path.relpath(path, docs_dir) for name, path in images.items()}
    report = render_report(results, images=relative)
    chosen = set(results.get("config", {}).get("experiments", NAMES))
    if not set(NAMES) <= chosen and config.docs_path.exists():
        measured = [name for name in NAMES if name in chosen and results.get(name)]
        report = merge_report(
            config.docs_path.read_text(),
            report,
            headings=[heading for name in measured for heading in SECTIONS[name]],
            provenance=run_note(results),
        )
    config.docs_path.write_text(report)
    return len(images)
