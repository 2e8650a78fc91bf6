"""Experiment 9's pure parts (load moves under skew): figures from looks at the assignment and
the units' loads, a phase summed up, the balanced over the unbalanced variant, the salting
verdict, window latencies, the tasks' SQL, and the report's section."""

from __future__ import annotations

import math
from typing import Any

import pytest

from benchmarks.balance_figures import (
    LatencyPhase,
    PlacementLook,
    ThroughputPhase,
    Variant,
    balance_ratios,
    median_figures,
    move_times,
    phase_placement,
    placement_figures,
    salting_pays,
)
from benchmarks.codec import from_json
from benchmarks.exp_balance import BALANCE_TASKS, VARIANTS, paced_rate, task_sql
from benchmarks.report import SECTIONS, render_report, run_note
from benchmarks.report_balance import BALANCE_HEADING
from benchmarks.report_merge import merge_report, split_sections
from benchmarks.watermark_times import window_latencies
from mars.registry.units import Unit
from mars.sql import parse_task

LABELS = {"t-big": "siptype", "t-small": "type"}


def _look(
    t: float,
    *,
    moves: dict[Unit, str] | None = None,
    generation: int = 1,
    loads: dict[Unit, float] | None = None,
) -> PlacementLook:
    units = {
        Unit("t-big", 0): "r1",
        Unit("t-big", 1): "r1",
        Unit("t-big", 2): "r2",
        Unit("t-small", 0): "r3",
    }
    found = {
        Unit("t-big", 0): 300.0,
        Unit("t-big", 1): 100.0,
        Unit("t-big", 2): 150.0,
        Unit("t-small", 0): 50.0,
    }
    if loads is not None:
        found = loads
    return PlacementLook(
        t=t,
        units={**units, **(moves or {})},
        moves=moves or {},
        generation=generation,
        members=("r1", "r2", "r3"),
        loads=found,
    )


def test_placement_figures_sum_units_per_reducer_and_weigh_the_largest_unit() -> None:
    found = placement_figures(_look(0.0), labels=LABELS)
    assert found["reducer_load_max"] == 400.0 and found["reducer_load_min"] == 50.0
    assert found["max_over_min"] == pytest.approx(8.0)
    assert found["largest_unit_load"] == 300.0
    assert found["mean_unit_load"] == pytest.approx(150.0)
    assert found["largest_over_mean"] == pytest.approx(2.0)
    assert found["largest_over_fair_share"] == pytest.approx(300 / 200)
    assert found["imbalance"] > 0.5 and found["moves"] == 0
    assert found["by_task"]["siptype"] == {
        "units": 3,
        "load_max": 300.0,
        "load_mean": pytest.approx(550 / 3),
        "load_total": 550.0,
    }
    assert found["by_task"]["type"]["load_total"] == 50.0


def test_a_reducer_owning_nothing_has_no_load_and_max_over_min_is_unknown() -> None:
    look = _look(0.0)
    empty = PlacementLook(
        t=0.0,
        units=look.units,
        moves={},
        generation=1,
        members=("r1", "r2", "r3", "r4"),
        loads=look.loads,
    )
    found = placement_figures(empty, labels=LABELS)
    assert found["reducer_load_min"] == 0.0 and math.isnan(found["max_over_min"])


def test_a_look_is_complete_once_every_unit_published_a_load_on_a_live_member() -> None:
    assert _look(0.0).complete
    assert not _look(0.0, loads={Unit("t-big", 0): 1.0}).complete
    gone = _look(0.0, moves={Unit("t-big", 0): "r9"})
    assert not gone.complete
    assert not PlacementLook(t=0, units={}, moves={}, generation=0, members=(), loads={}).complete


def test_phase_placement_takes_medians_of_the_complete_looks_inside_the_phase() -> None:
    moved = {Unit("t-big", 0): "r3"}
    looks = [
        _look(0.0),  # before the phase
        _look(10.0),
        _look(11.0, loads={Unit("t-big", 0): 1.0}),  # incomplete: left out
        _look(12.0, moves=moved, generation=2),
        _look(13.0, moves=moved, generation=2),
        _look(99.0, generation=3),  # after the phase
    ]
    found = phase_placement(looks, labels=LABELS, since=5.0, until=20.0)
    assert found["looks"] == 3
    assert found["moves_at_end"] == 1
    assert found["assignment_changes"] == 1
    # once moved: r1 100, r2 150, r3 350 -> max over min 3.5 twice, 8 once
    assert found["max_over_min"] == pytest.approx(3.5)
    assert found["moves"] == pytest.approx(1.0)
    assert found["by_task"]["type"]["units"] == 1
    assert phase_placement(looks, labels=LABELS, since=50.0, until=60.0) == {
        "looks": 0,
        "moves_at_end": 0,
        "assignment_changes": 0,
    }


def test_median_figures_recurse_and_skip_unknown_values() -> None:
    found = median_figures(
        [{"a": 1.0, "n": {"b": 2.0}}, {"a": math.nan, "n": {"b": 4.0}}, {"a": 3.0, "n": {"b": 9}}]
    )
    assert found == {"a": 2.0, "n": {"b": 4.0}}
    assert median_figures([]) == {}


def test_move_times_are_when_the_moved_units_changed() -> None:
    moved = {Unit("t-big", 0): "r3"}
    looks = [
        _look(100.0),
        _look(101.0),
        _look(103.0, moves=moved),
        _look(104.0, moves=moved),
        _look(107.0),
    ]
    assert move_times(looks, since=100.0) == [3.0, 7.0]
    assert move_times([], since=0.0) == []


def test_balance_ratios_are_balanced_over_unbalanced() -> None:
    def variant(rate: float, p99: float, spread: float) -> Variant:
        return Variant(
            throughput=ThroughputPhase(records_per_s=rate),
            latency=LatencyPhase(p50_s=0.5, p99_s=p99, placement={"max_over_min": spread}),
        )

    found = balance_ratios(variant(30_000, 0.8, 1.2), variant(20_000, 1.6, 2.4))
    assert found == {
        "records_per_s": pytest.approx(1.5),
        "p50_s": pytest.approx(1.0),
        "p99_s": pytest.approx(0.5),
        "max_over_min": pytest.approx(0.5),
    }
    assert math.isnan(balance_ratios(variant(1, 1, 1), Variant())["records_per_s"])


def test_salting_pays_only_when_one_unit_outweighs_a_reducers_share() -> None:
    assert salting_pays(0.4) is False
    assert salting_pays(1.3) is True
    assert salting_pays(math.nan) is None


def test_window_latencies_count_from_the_watermark_passing_each_measured_window() -> None:
    arrivals = {0: 2.5, 2000: 4.25, 4000: 9.0, 6000: 8.0}
    passage = {2000: 2000, 4000: 4000, 6000: 6100}  # 8000: never passed
    assert window_latencies(arrivals, passage, window_ms=2000, from_ms=4000) == [
        pytest.approx(0.25),
        pytest.approx(2.9),
    ]
    assert window_latencies(arrivals, passage, window_ms=2000, from_ms=0) == [
        pytest.approx(0.5),
        pytest.approx(0.25),
        pytest.approx(2.9),
    ]


def test_the_four_tasks_parse_with_their_buckets_and_a_count_named_n() -> None:
    for label, (groups, aggregates) in BALANCE_TASKS.items():
        spec = parse_task(
            task_sql("skewed", label, window_s=2, buckets=8, idle="60 s"), task_id=f"b-{label}"
        )
        assert spec.options.buckets == 8
        assert "n" in aggregates and set(groups) <= {"sip", "type", "dport"}
    assert VARIANTS["unbalanced"] == {"MARS_BALANCE__ENABLED": "false"}
    assert list(VARIANTS) == ["unbalanced", "balanced"]  # the unbalanced rate paces both


def test_paced_rate_is_half_the_measured_maximum() -> None:
    assert paced_rate(31_260.0, fallback=5000.0) == 15_600.0
    assert paced_rate(math.nan, fallback=5000.0) == 5000.0
    assert paced_rate(0.0, fallback=4000.0) == 4000.0


def _phase(spread: float, share: float, moves: int) -> dict[str, Any]:
    look = placement_figures(_look(0.0), labels=LABELS)
    return {
        **look,
        "max_over_min": spread,
        "largest_over_fair_share": share,
        "looks": 30,
        "moves_at_end": moves,
        "assignment_changes": 0,
    }


def _variant(
    name: str, *, rate: float, p99: float, spread: float, moves: int, times: list[float]
) -> dict[str, Any]:
    return {
        "env": VARIANTS[name],
        "throughput": {
            "seconds": 800_000 / rate,
            "records_per_s": rate,
            "complete": True,
            "duplicates": 0,
            "mapper_cpu_s": 40.0,
            "reducer_cpu_s": [12.0, 6.5, 3.0],
            "placement": _phase(spread, 0.6, moves),
            "move_times_s": times,
        },
        "latency": {
            "rate": 12_000.0,
            "windows": 88,
            "p50_s": 0.4,
            "p99_s": p99,
            "max_s": p99 + 0.1,
            "by_task": {},
            "placement": _phase(spread, 0.6, moves),
            "move_times_s": times,
        },
    }


def _balance_results() -> dict[str, Any]:
    variants = {
        "unbalanced": _variant("unbalanced", rate=24_000, p99=1.6, spread=2.5, moves=0, times=[]),
        "balanced": _variant("balanced", rate=30_000, p99=0.8, spread=1.2, moves=9, times=[2, 4]),
    }
    return {
        "records": 800_000,
        "mappers": 2,
        "reducers": 3,
        "settle_s": 30,
        "measure_s": 45,
        "buckets": 8,
        "zipf_s": 1.2,
        "window_s": 2,
        "throughput_window_s": 60,
        "dataset": {"records": 800_000, "mbytes": 115.2, "span_s": 600},
        "variants": variants,
        "ratios": balance_ratios(
            from_json(Variant, variants["balanced"]), from_json(Variant, variants["unbalanced"])
        ),
    }


def test_report_renders_the_balance_section() -> None:
    text = render_report({"balance": _balance_results()}, images={})
    body = "\n".join(dict(split_sections(text))[BALANCE_HEADING])
    assert "`interval_s` 2, `unit_cooldown_s` 6, `min_gain` 0.02" in body
    assert "paced skewed traffic at 12,000 records/s" in body
    assert (
        "| load moves on | 30,000 | 26.7 | 12.0 / 3.0 | 40.0 | 0.400 s | 0.800 s | 0.900 s | 88 |"
        in body
    )
    assert "| **on / off** | 1.25x | | | | 1.00x | 0.50x | | |" in body
    assert "| load moves on | paced, measured part | 400 / 50 | 1.20 | " in body
    assert "changed at 2, 4 s after registering" in body
    assert "| GROUP BY siptype | 3 | 300.0 | 183.3 | 550.0 |" in body
    assert "salting a hot key over several buckets would not pay" in body
    assert (
        "(placement by unit count (moves off): the busiest reducer 36% of a core, the mappers "
        "1.20 cores; load moves on: the busiest reducer 45% of a core" in body
    )
    assert "the reducers did not limit this workload here" in body
    assert BALANCE_HEADING + "\n\nNot run." in render_report({}, images={})
    busy = _balance_results()
    busy["variants"]["balanced"]["throughput"]["reducer_cpu_s"] = [20.0, 1.0, 1.0]
    text = render_report({"balance": busy}, images={})
    assert "a reducer used most of a core, so the busiest reducer can limit" in text


def test_a_balance_run_merges_only_its_section_before_the_profile() -> None:
    earlier = render_report({}, images={})
    fresh = render_report({"balance": _balance_results()}, images={})
    note = run_note({"machine": {"load_average": [0.9]}, "load_average_end": [11.6]})
    assert "load average at start [0.9], at the end [11.6]: not the run" in note
    merged = merge_report(earlier, fresh, headings=SECTIONS["balance"], provenance="*run 2*")
    sections = dict(split_sections(merged))
    assert sections[BALANCE_HEADING][2] == "*run 2*"
    headings = [heading for heading, _ in split_sections(merged)]
    assert headings.index(BALANCE_HEADING) < headings.index(SECTIONS["profile"][0])
    assert "Not run." in "\n".join(sections[SECTIONS["pull"][0]])
