"""The reference query (docs/references.md), verbatim, gives exactly this TaskSpec; specs
survive a JSON round trip."""

from __future__ import annotations

import json

import pytest

from mars.sql import parse_task
from mars.tasks.spec import (
    AggFunc,
    AggregateCall,
    EventTime,
    GroupKey,
    OutputColumn,
    TaskOptions,
    TaskSpec,
    TimeFormat,
    WindowSpec,
)

PAPER_QUERY = (
    "SELECT sip, type, timestamp, count(*) FROM S GROUP BY sip, type, timestamp WINDOWING 60 s"
)


def test_paper_query_gives_the_exact_spec() -> None:
    spec = parse_task(PAPER_QUERY, task_id="paper")
    assert spec == TaskSpec(
        id="paper",
        sql=PAPER_QUERY,
        source_topic="S",
        event_time=EventTime(field="timestamp", format=TimeFormat.EPOCH_S),
        window=WindowSpec(size_ms=60_000, slide_ms=60_000, grace_ms=0),
        group_keys=(
            GroupKey(name="sip", expression="sip"),
            GroupKey(name="type", expression="type"),
        ),
        aggregates=(AggregateCall(func=AggFunc.COUNT, argument=None, alias="count_star"),),
        outputs=(
            OutputColumn(name="sip", expression="sip"),
            OutputColumn(name="type", expression="type"),
            OutputColumn(name="timestamp", expression="window_start"),
            OutputColumn(name="count_star", expression="count_star"),
        ),
        where=None,
        having=None,
        top_k=None,
        options=TaskOptions(),
    )
    assert spec.window.tumbling
    assert spec.output_topic == "mars.results.paper"


def test_paper_query_is_case_and_layout_insensitive() -> None:
    sql = (
        "select sip,type,timestamp,COUNT(*)\nfrom S\n"
        "group by sip,type,timestamp\nwindowing 1 minute;"
    )
    spec = parse_task(sql, task_id="paper")
    paper = parse_task(PAPER_QUERY, task_id="paper")
    assert (spec.group_keys, spec.aggregates, spec.outputs, spec.window) == (
        paper.group_keys,
        paper.aggregates,
        paper.outputs,
        paper.window,
    )


@pytest.mark.parametrize(
    "sql",
    [
        PAPER_QUERY,
        'SELECT upper(type) AS t, sum(bytes) / count(*) AS avg_bytes, window_end FROM "web.logs" '
        "WHERE status >= 400 AND path NOT LIKE '/health%' GROUP BY t HAVING count(*) > 10 "
        "ORDER BY avg_bytes DESC LIMIT 3 WINDOWING 5 m SLIDE 1 m GRACE 10 s "
        "WITH (format = csv, csv_columns = 'type,bytes,status,path,timestamp', buckets = 16, "
        "idle_timeout = 30 s, output_topic = 'out.topic')",
        "SELECT type, count(DISTINCT sip) AS d, approx_count_distinct(sip), avg(x) FROM S "
        "GROUP BY type WINDOWING 1 h WITH (event_time = processing)",
    ],
)
def test_spec_json_round_trip(sql: str) -> None:
    spec = parse_task(sql, task_id="round-trip")
    encoded = json.dumps(spec.to_json_dict())
    assert TaskSpec.from_json_dict(json.loads(encoded)) == spec
