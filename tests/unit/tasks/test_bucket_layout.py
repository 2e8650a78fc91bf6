"""`BucketLayout`: each (window, group) in exactly one bucket, whatever the changes."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mars.sql import parse_task
from mars.tasks.bucket_layout import FROM_ANY_WINDOW, BucketChange, BucketLayout
from mars.tasks.spec import TaskOptions, TaskSpec

GROWN = BucketLayout(
    initial=2,
    changes=(
        BucketChange(from_window_ms=60_000, buckets=6),
        BucketChange(from_window_ms=180_000, buckets=3),
    ),
)


def test_each_window_takes_the_count_of_its_epoch() -> None:
    assert [GROWN.buckets_at(start) for start in (-1, 0, 59_999, 60_000, 179_999, 180_000)] == [
        2,
        2,
        2,
        6,
        6,
        3,
    ]
    assert (GROWN.generation, GROWN.current, GROWN.current_from_ms, GROWN.unit_count) == (
        2,
        3,
        180_000,
        6,
    )
    fixed = BucketLayout(initial=8)
    assert (fixed.generation, fixed.current, fixed.current_from_ms, fixed.unit_count) == (
        0,
        8,
        FROM_ANY_WINDOW,
        8,
    )


@given(
    hashes=st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=50),
    starts=st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=50),
)
def test_vectorised_buckets_equal_the_per_row_rule(hashes: list[int], starts: list[int]) -> None:
    rows = min(len(hashes), len(starts))
    hashes, starts = hashes[:rows], starts[:rows]
    got = GROWN.bucket_numbers(np.array(hashes, dtype=np.int64), np.array(starts, dtype=np.int64))
    assert got.tolist() == [h % GROWN.buckets_at(s) for h, s in zip(hashes, starts, strict=True)]


def test_a_change_must_start_after_the_current_epoch() -> None:
    assert GROWN.changed(from_window_ms=180_001, buckets=9).current == 9
    with pytest.raises(ValueError, match="must start after 180000"):
        GROWN.changed(from_window_ms=180_000, buckets=9)


def test_the_changes_survive_the_spec_json() -> None:
    spec = parse_task(
        "SELECT type, count(*) FROM S GROUP BY type WINDOWING 60 s", task_id="t1", options={}
    )
    spec = replace(spec, options=TaskOptions(buckets=2, bucket_changes=GROWN.changes))
    assert TaskSpec.from_json_dict(spec.to_json_dict()).options.layout == GROWN
