"""`mars bench --experiments` knows exactly the experiments of the registry."""

from __future__ import annotations

import pytest

from benchmarks.registry import NAMES
from benchmarks.runner import BenchConfig
from cli.main import main


def test_an_unknown_experiment_is_refused_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "--experiments", "e2e", "no_such_experiment"]) == 2
    error = capsys.readouterr().err
    assert "no_such_experiment" in error and all(name in error for name in NAMES)


def test_every_registered_experiment_can_be_chosen() -> None:
    config = BenchConfig.build(quick=True, runs=None, experiments=NAMES, command="mars bench")
    assert config.experiments == NAMES and set(config.settings) == set(NAMES)
