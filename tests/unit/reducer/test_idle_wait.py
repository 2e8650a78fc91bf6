"""How long an idle unit owner waits between steps: the setting, stretched so that a process's
owners together take at most `IDLE_STEPS_PER_S` idle steps a second."""

from __future__ import annotations

import pytest

from reducer.wakeups import IDLE_STEPS_PER_S, idle_wait_s


def test_few_owners_step_at_the_configured_interval() -> None:
    assert idle_wait_s(0.5, owners=1) == 0.5
    assert idle_wait_s(0.5, owners=IDLE_STEPS_PER_S // 2) == 0.5


@pytest.mark.parametrize("owners", [IDLE_STEPS_PER_S, 330, 660, 2000])
def test_many_owners_together_stay_within_the_budget(owners: int) -> None:
    wait_s = idle_wait_s(0.5, owners=owners)
    assert owners / wait_s <= IDLE_STEPS_PER_S + 1e-9
    assert wait_s >= 0.5


def test_a_longer_interval_is_kept() -> None:
    assert idle_wait_s(60.0, owners=660) == 60.0
