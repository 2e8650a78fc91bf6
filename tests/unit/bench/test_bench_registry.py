"""The registry holds every experiment once, each a complete `Experiment`, and every result
type survives its JSON form (what `benchmarks/results/*.json` keep and the report reads)."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

import pytest

from benchmarks.bench_config import BenchConfig
from benchmarks.codec import from_json, to_json
from benchmarks.experiment import Experiment
from benchmarks.registry import BY_NAME, EXPERIMENTS, NAMES

EXPECTED = (
    "batch",
    "processes",
    "e2e",
    "steady",
    "formats",
    "latency",
    "faults",
    "state",
    "pull",
    "balance",
    "tasks",
    "profile",
    "nexmark",
    "statistics",
    "key_watermarks",
    "group_scale",
    "spark_stream",
)


def test_the_registry_has_every_experiment_once_in_run_order() -> None:
    assert NAMES == EXPECTED
    assert len(BY_NAME) == len(EXPERIMENTS)
    assert NAMES[-1] == "spark_stream"  # its Spark cluster stays up until the end
    headings = [s.heading for e in EXPERIMENTS for s in e.sections]
    assert len(headings) == len(set(headings)) and all(h.startswith("## ") for h in headings)


def example(kind: Any, seed: int = 1) -> Any:
    """A value of type `kind` with no NaN and no empty container (so equality is exact)."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return {"figure": [seed, 0.5, "text", None]}
    if origin in (typing.Union, types.UnionType):
        real = [a for a in args if a is not type(None)]
        return example(real[0], seed) if seed < 3 else None  # nested optionals end
    if origin is list:
        return [example(args[0], seed + 1)]
    if origin is tuple and args[-1] is Ellipsis:
        return (example(args[0], seed + 1),)
    if origin is tuple:
        return tuple(example(arg, seed + 1) for arg in args)
    if origin is dict:
        return {str(seed): example(args[1], seed + 1)}
    if dataclasses.is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        return kind(**{f.name: example(hints[f.name], seed + 1) for f in dataclasses.fields(kind)})
    return {int: seed, float: seed + 0.25, str: f"s{seed}", bool: True}[kind]


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=NAMES)
def test_each_result_round_trips_through_json(experiment: Experiment[Any, Any]) -> None:
    result = example(type(experiment).result_type)  # type: ignore[attr-defined]
    text = json.dumps(to_json(result))
    assert experiment.decode(json.loads(text)) == result


@pytest.mark.parametrize("experiment", EXPERIMENTS, ids=NAMES)
def test_each_experiment_reports_its_sections_run_or_not(experiment: Experiment[Any, Any]) -> None:
    assert len(experiment.report(None, {})) == len(experiment.sections)
    settings = experiment.settings(quick=True)
    assert from_json(type(settings), json.loads(json.dumps(to_json(settings)))) == settings


def test_quick_and_full_settings_and_the_overrides() -> None:
    full = BenchConfig.build(quick=False, runs=None, experiments=NAMES, command="x")
    quick = BenchConfig.build(quick=True, runs=5, experiments=NAMES, command="x")
    assert (full.runs, quick.runs) == (3, 5)
    assert full.of("state").runs == 1 and quick.of("state").runs == 5
    assert (full.of("faults").records, quick.of("faults").records) == (200_000, 50_000)
    assert full.of("steady").records == 3_000_000 and quick.of("steady").records == 600_000
