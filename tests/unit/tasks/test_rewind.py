"""The pure parts of a rewind (docs/rewind.md): its record, `T'`, the closed watermark and
revisions it implies, and what the API accepts."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from types import SimpleNamespace
from typing import cast

import pytest

import api.task_rewind
from api.errors import ApiError
from api.services import ApiServices
from api.task_rewind import parse_from, unsupported
from mars.clients.time_offsets import PartitionFrom
from mars.config import RewindSettings, Settings
from mars.registry import TaskRecord, TaskStatus
from mars.tasks.rewind import (
    TaskRewind,
    first_rewound_window,
    lowered_closed_watermark,
    revision_of,
    rewind_source_id,
)
from mars.tasks.spec import TaskSpec, TimeFormat
from mars.windows import WindowAssigner
from tests.unit.engine.engine_helpers import make_spec

REWIND = TaskRewind(
    generation=2,
    from_window_ms=60_000,
    from_ms=61_500,
    starts=(10, 0),
    handovers=(25, 0),
    seqs=(7, 3, 0),
)


def test_a_rewind_round_trips_through_redis_and_the_spec() -> None:
    assert TaskRewind.from_redis(REWIND.to_redis()) == REWIND
    as_json = json.loads(json.dumps(asdict(REWIND)))
    assert TaskRewind.from_json_dict(as_json) == REWIND
    assert REWIND.hold == "rewind:2" and REWIND.source_id(1) == "rewind:2:1"
    assert rewind_source_id(3, 0) == "rewind:3:0"
    assert REWIND.seq_of(1) == 3 and REWIND.seq_of(9) == 0  # a bucket made later: from 0


def test_a_spec_keeps_its_rewinds() -> None:
    spec = replace(make_spec(), rewinds=(REWIND,))
    assert TaskSpec.from_json_dict(json.loads(json.dumps(spec.to_json_dict()))) == spec


@pytest.mark.parametrize(
    ("size", "slide", "at", "first"),
    [(60, 60, 61, 60), (60, 60, 60, 60), (60, 60, 59, 0), (60, 20, 61, 20), (60, 20, 40, 0)],
)
def test_the_first_rewound_window_is_the_earliest_holding_from(
    size: int, slide: int, at: int, first: int
) -> None:
    assert first_rewound_window(WindowAssigner(size_ms=size, slide_ms=slide), at) == first


def test_the_closed_watermark_goes_below_the_first_rewound_window_only() -> None:
    assigner = WindowAssigner(size_ms=10, slide_ms=10, grace_ms=5)
    lowered = lowered_closed_watermark(assigner, 100, 40)
    assert lowered == 54
    assert assigner.is_closed(30, lowered) and not assigner.is_closed(40, lowered)
    assert lowered_closed_watermark(assigner, 20, 40) == 20  # nothing from 40 was closed
    assert lowered_closed_watermark(assigner, None, 40) is None


def test_revisions_follow_the_latest_rewind_that_covers_a_window() -> None:
    rewinds = ((1, 100), (2, 200))
    assert [revision_of(rewinds, start) for start in (50, 100, 150, 200, 300)] == [0, 1, 1, 2, 2]


def test_the_time_is_iso_8601_and_a_bad_one_is_named() -> None:
    assert parse_from("1970-01-01T00:01:00Z") == 60_000
    assert parse_from("1970-01-01T00:01:00") == 60_000  # no zone: UTC
    assert parse_from("1970-01-01T01:01:00+01:00") == 60_000
    with pytest.raises(ApiError) as refused:
        parse_from("yesterday")
    assert refused.value.status == 422 and "'yesterday'" in refused.value.message


def test_only_tumbling_and_hopping_event_time_tasks_can_be_rewound() -> None:
    assert unsupported(make_spec()) is None
    assert unsupported(make_spec(size_ms=4, slide_ms=2)) is None
    assert "tumbling and hopping" in (unsupported(make_spec(session=True)) or "")
    assert "processing-time" in (unsupported(make_spec(time_format=TimeFormat.PROCESSING)) or "")


def test_a_rewind_over_the_mappers_limit_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def offsets(*_args: object, **_kwargs: object) -> list[PartitionFrom]:
        return [PartitionFrom(partition=0, offset=0, low=0, high=11)]

    monkeypatch.setattr(api.task_rewind, "offsets_from_time", offsets)
    services = SimpleNamespace(settings=Settings(rewind=RewindSettings(max_mapper_records=10)))
    record = TaskRecord(
        spec=make_spec(), status=TaskStatus.RUNNING, reason=None, created_ms=0, updated_ms=0
    )
    with pytest.raises(ApiError) as refused:
        api.task_rewind.rewind_task(
            cast(ApiServices, services), record, from_text="1970-01-01T00:00:00Z"
        )
    assert refused.value.status == 409
    assert "rewind.max_mapper_records (10)" in refused.value.message
