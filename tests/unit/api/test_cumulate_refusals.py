"""What a cumulative-window task refuses through the API, before touching any backend."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from api.bucket_changes import change_buckets
from api.errors import ApiError
from api.pull_queries import PullQueryError, current_windows
from mars.sql import parse_task

SPEC = parse_task(
    "SELECT k, count(*) AS n FROM S GROUP BY k WINDOWING CUMULATE 1 d STEP 1 m", task_id="t"
)
NOTHING = cast(Any, None)  # a backend these refusals never reach


def test_a_pull_query_is_refused() -> None:
    with pytest.raises(PullQueryError, match="cumulative windows"):
        current_windows(NOTHING, NOTHING, SPEC, groups={}, window_start=None)


def test_a_bucket_count_change_is_refused_with_409() -> None:
    record = cast(Any, SimpleNamespace(spec=SPEC, task_id="t"))
    with pytest.raises(ApiError) as caught:
        change_buckets(NOTHING, NOTHING, record, 16)
    assert caught.value.status == 409 and "cumulative" in caught.value.message
