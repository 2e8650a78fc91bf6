"""The DuckDB oracle on tiny inputs whose results are computed by hand."""

from __future__ import annotations

import json

import pytest

from devtools.gen import FIELD_NAMES, Encoding, GeneratorConfig, generate
from tests.oracle import event_time_ms, expected_results


def _rec(ts: object, sip: str, kind: str, size: int) -> bytes:
    return json.dumps({"timestamp": ts, "sip": sip, "type": kind, "bytes": size}).encode()


RECORDS = [
    _rec(0, "a", "dns", 10),  # window 0
    _rec(59, "a", "dns", 20),  # window 0
    _rec(59, "b", "dns", 5),  # window 0, other group
    _rec(60, "a", "dns", 1),  # window 60 000: the end is exclusive
    _rec(61, "a", "http", 7),  # window 60 000, other type
    b"not json",
    b"[1, 2]",
    json.dumps({"sip": "a", "type": "dns", "bytes": 1}).encode(),  # no timestamp
    _rec("yesterday", "a", "dns", 1),
    _rec(True, "a", "dns", 1),  # a boolean is not a time
    _rec(-1, "c", "dns", 3),  # before the epoch: window -60 000
]


def test_tumbling_counts_and_sums_by_hand() -> None:
    expected = expected_results(
        RECORDS,
        group_by=["sip", "type"],
        window_ms=60_000,
        aggregates={"cnt": "count(*)", "total": "sum(bytes)", "biggest": "max(bytes)"},
    )
    assert expected == {
        (0, "a", "dns"): {"cnt": 2, "total": 30, "biggest": 20},
        (0, "b", "dns"): {"cnt": 1, "total": 5, "biggest": 5},
        (60_000, "a", "dns"): {"cnt": 1, "total": 1, "biggest": 1},
        (60_000, "a", "http"): {"cnt": 1, "total": 7, "biggest": 7},
        (-60_000, "c", "dns"): {"cnt": 1, "total": 3, "biggest": 3},
    }
    assert expected.skipped == 5
    assert expected.skipped_indices == frozenset({5, 6, 7, 8, 9})
    assert expected.valid == 6
    # Promise 2's accounting: every input record is counted once, or skipped.
    assert sum(v["cnt"] for v in expected.values()) + expected.skipped == len(RECORDS)


def test_where_filters_before_grouping() -> None:
    expected = expected_results(
        RECORDS,
        group_by=["type"],
        window_ms=120_000,
        aggregates={"cnt": "count(*)", "sips": "count(DISTINCT sip)"},
        where="bytes >= 5",
    )
    assert expected == {
        (0, "dns"): {"cnt": 3, "sips": 2},
        (0, "http"): {"cnt": 1, "sips": 1},
    }
    assert expected.matched == 4


def test_hopping_windows_count_a_record_in_each_window_it_falls_in() -> None:
    records = [_rec(0, "a", "dns", 1), _rec(30, "a", "dns", 1), _rec(59, "a", "dns", 1)]
    expected = expected_results(
        records, group_by=[], window_ms=60_000, slide_ms=30_000, aggregates={"n": "count(*)"}
    )
    assert expected == {
        (-30_000,): {"n": 1},  # [-30 s, 30 s): t=0
        (0,): {"n": 3},  # [0, 60 s): all
        (30_000,): {"n": 2},  # [30 s, 90 s): t=30, t=59
    }


def test_time_units() -> None:
    assert event_time_ms(1_700_000_000, "s") == 1_700_000_000_000
    assert event_time_ms(1.5, "s") == 1500
    assert event_time_ms(1_700_000_000_123, "ms") == 1_700_000_000_123
    assert event_time_ms("2023-11-14T22:13:20.123Z", "iso") == 1_700_000_000_123
    assert event_time_ms("2023-11-14T22:13:20", "iso") == 1_700_000_000_000  # naive = UTC
    assert event_time_ms("yesterday", "iso") is None
    assert event_time_ms("1700000000", "s") is None
    assert event_time_ms(None, "s") is None
    assert event_time_ms(False, "ms") is None
    assert event_time_ms(float("nan"), "s") is None


@pytest.mark.parametrize("encoding", [Encoding.JSON, Encoding.CSV])  # the oracle reads text
def test_oracle_skips_exactly_the_generated_malformed_records(encoding: Encoding) -> None:
    config = GeneratorConfig(
        count=3000, seed=4, span_s=300, malformed_ratio=0.05, sip_cardinality=20, encoding=encoding
    )
    batch = generate(config)
    expected = expected_results(
        batch.values,
        group_by=["type"],
        window_ms=60_000,
        aggregates={"cnt": "count(*)"},
        csv_columns=FIELD_NAMES if encoding is Encoding.CSV else None,
    )
    assert expected.skipped_indices == batch.malformed
    assert sum(v["cnt"] for v in expected.values()) == config.count - len(batch.malformed)
    seconds = range(config.start_s, config.start_s + config.span_s)
    assert {key[0] for key in expected} == {s // 60 * 60_000 for s in seconds}
