"""A `watermark = 'key'` task refuses pull queries (422) before touching any backend: its
windows close one key at a time, which the open-window view does not show."""

from __future__ import annotations

from typing import Any, cast

import pytest

from api.pull_queries import PullQueryError, current_windows
from mars.sql import parse_task

SPEC = parse_task(
    "SELECT k, count(*) AS n FROM S GROUP BY k WINDOWING 1 m WITH (watermark = 'key')",
    task_id="t",
)
NOTHING = cast(Any, None)  # a backend this refusal never reaches


def test_a_pull_query_is_refused() -> None:
    with pytest.raises(PullQueryError, match="watermark = 'key'"):
        current_windows(NOTHING, NOTHING, SPEC, groups={}, window_start=None)
