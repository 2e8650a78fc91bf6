"""Which windows tasks an owner holds in `ColumnarWindowState` rather than `OpenWindowState`."""

from __future__ import annotations

from typing import Any

from mars.aggregates import Aggregate
from mars.tasks.spec import TaskSpec, WatermarkMode
from reducer.columnar_groups import columnar_aggregates


def uses_columnar_state(
    spec: TaskSpec, aggregates: tuple[Aggregate[Any], ...], *, enabled: bool
) -> bool:
    """Tumbling or hopping windows closed on the task's watermark, without EMIT CHANGES (it
    reads single groups of open windows), every aggregate columnar; `enabled`: the reducer's
    `columnar_state` setting. A top-k task's one unit merges all its buckets' data sets into
    each window's frame and takes the top k of its closed windows in columns."""
    window = spec.window
    return (
        enabled
        and not window.session
        and not window.cumulate
        and spec.options.watermark is not WatermarkMode.KEY
        and spec.updates_topic is None
        and columnar_aggregates(aggregates)
    )
