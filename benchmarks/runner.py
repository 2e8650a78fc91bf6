"""`mars bench`: run the experiments on a fresh local cluster, write JSON, plots and the report.

BenchConfig.build(quick=False, runs=3, experiments=NAMES, command=...) -> run_benchmarks(config)
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.bench_config import PROJECT_ROOT, BenchConfig
from benchmarks.codec import to_json
from benchmarks.experiment import Context, Log
from benchmarks.harness import BenchCluster
from benchmarks.machine import code_version, load_average, machine_info
from benchmarks.registry import EXPERIMENTS, NAMES
from benchmarks.report import write_report

__all__ = ["NAMES", "BenchConfig", "rewrite_report", "run_benchmarks", "write_report"]


def run_benchmarks(config: BenchConfig, *, log: Log = print) -> dict[str, Any]:
    """Run the chosen experiments; returns the results' JSON form (also written to disk)."""
    results: dict[str, Any] = {
        "machine": machine_info(),
        "code": code_version(PROJECT_ROOT),
        "command": config.command,
        "quick": config.quick,
        "config": config.to_json(),
        "notes": [],
    }
    started = time.monotonic()
    log(f"starting a fresh local cluster in {config.run_dir} ...")
    bench = BenchCluster(run_dir=config.run_dir)
    chosen = [e for e in EXPERIMENTS if e.name in config.experiments]
    try:
        ctx = Context(bench=bench, config=config, log=log)
        if any(e.uses_dataset for e in chosen):
            ctx.loaded = ctx.preload()
            results["dataset"] = {**asdict(ctx.loaded), "mbytes": ctx.loaded.mbytes}
        for experiment in chosen:
            log(f"{experiment.name}: {experiment.title}")
            try:
                found = experiment.run(ctx, config.of(experiment.name))
            except Exception as error:  # one failed experiment must not lose the others
                log(f"  {experiment.name} failed: {error!r}")
                results["notes"].append(f"experiment `{experiment.name}` failed: {error!r:.300}")
                continue
            ctx.results[experiment.name] = found
            results[experiment.name] = to_json(found)
    finally:
        bench.close()
    results["load_average_end"] = [round(v, 2) for v in load_average()]
    results["elapsed_s"] = time.monotonic() - started
    write_outputs(results, config, log)
    return results


def write_outputs(results: dict[str, Any], config: BenchConfig, log: Log) -> None:
    config.results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    body = json.dumps(results, indent=2, default=str)
    (config.results_dir / f"bench-{stamp}.json").write_text(body)
    (config.results_dir / "latest.json").write_text(body)
    images = write_report(results, config)
    log(f"wrote {config.results_dir / 'latest.json'}, {config.docs_path} and {images} plots")


def rewrite_report(results_file: Path, config: BenchConfig, log: Log = print) -> None:
    """Plots and report again from a saved results file (no measurement)."""
    images = write_report(json.loads(results_file.read_text()), config)
    log(f"wrote {config.docs_path} and {images} plots from {results_file}")
