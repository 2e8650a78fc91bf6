"""The elasticity advice: inside the CPU band keep the count, outside it compute in one step."""

from __future__ import annotations

import pytest

from mars.elasticity import CpuBand, advise

BAND = CpuBand(target=0.6, upper=0.8, lower=0.3)


def test_inside_the_band_the_count_stays() -> None:
    advice = advise([0.5, 0.7, 0.4], BAND)
    assert (advice.current, advice.needed, advice.mean_cpu) == (3, 3, 0.533)


def test_above_the_band_one_step_to_the_target() -> None:
    advice = advise([1.0, 1.0], BAND)  # 2 cores of load at 0.6 each: 4 processes, not 3
    assert (advice.current, advice.needed) == (2, 4)
    assert "above the band" in advice.reason


def test_below_the_band_fewer_but_at_least_the_minimum() -> None:
    assert advise([0.1, 0.1, 0.1, 0.1], BAND).needed == 1
    assert advise([0.05, 0.05], BAND, minimum=2).needed == 2


def test_a_process_without_a_reading_counts_as_an_average_one() -> None:
    assert advise([1.2, None], BAND).needed == 4  # 2 x 1.2 cores at 0.6
    unknown = advise([None, None], BAND)
    assert (unknown.needed, unknown.mean_cpu) == (2, None)


def test_a_band_must_hold_its_target() -> None:
    with pytest.raises(ValueError):
        CpuBand(target=0.9, upper=0.8, lower=0.3)
