"""`mars bench --experiments` offers exactly the experiments the runner knows."""

from __future__ import annotations

from benchmarks.runner import EXPERIMENTS
from cli.bench_command import EXPERIMENT_NAMES


def test_the_cli_lists_every_experiment_of_the_runner() -> None:
    assert EXPERIMENT_NAMES == EXPERIMENTS
