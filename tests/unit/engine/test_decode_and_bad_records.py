from __future__ import annotations

from engine_helpers import json_records, make_spec, run_in_batches

from mars.engine.dataset import decode_dataset
from mars.engine.decode import FieldPlan, JsonRecordDecoder
from mars.engine.preaggregate import preaggregate
from mars.engine.records import SourceRecord
from mars.tasks.spec import AggFunc, CsvFormat, InputFormat, TaskOptions, TimeFormat


def reasons(spec_kwargs: dict, rows: list[bytes]) -> dict[int, str]:
    spec = make_spec(**spec_kwargs)
    records = [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(rows)]
    partials = preaggregate(spec, records, {}, 0)
    assert partials.records_in == partials.accepted + len(partials.bad) + len(partials.late)
    return {r.offset: r.reason for r in partials.bad}


def test_bad_records_get_reasons_and_do_not_poison_the_batch() -> None:
    spec_kwargs = {"aggregates": [(AggFunc.SUM, "v", "s")]}
    rows = [
        b'{"ts": 1, "k": "a", "v": 2}',
        b"not json",
        b"[1, 2]",
        b'{"k": "a", "v": 1}',
        b'{"ts": "yesterday", "k": "a", "v": 1}',
        b'{"ts": 1, "k": "a", "v": "12"}',
        b'{"ts": 1, "k": {"nested": 1}, "v": 1}',
        b'{"ts": 1, "k": "a", "v": 3}',
    ]
    got = reasons(spec_kwargs, rows)
    assert set(got) == {1, 2, 3, 4, 5, 6}
    assert "JSON" in got[1]
    assert "object" in got[2]
    assert "missing" in got[3]
    assert "not a valid epoch_ms" in got[4]
    assert "must be a number" in got[5]
    assert "nested" in got[6]
    spec = make_spec(**spec_kwargs)
    windows, _, bad, _ = run_in_batches(
        spec,
        json_records([])
        + [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(rows)],
        [100],
    )
    assert windows == {0: {("a",): [5]}}
    assert bad[0].value == b"not json"


def test_sum_over_a_computed_non_numeric_expression_is_bad() -> None:
    got = reasons(
        {"aggregates": [(AggFunc.SUM, "lower(k)", "s")]},
        [b'{"ts": 1, "k": "A"}', b'{"ts": 1, "k": null}'],
    )
    assert list(got) == [0] and "needs a number" in got[0]


def test_event_time_formats() -> None:
    cases = [
        (
            TimeFormat.EPOCH_S,
            [b'{"ts": 1.5, "k": "a"}', b'{"ts": 2, "k": "a"}'],
            {0: {("a",): [1]}, 2000: {("a",): [1]}},
        ),
        (TimeFormat.EPOCH_MS, [b'{"ts": 1500, "k": "a"}'], {0: {("a",): [1]}}),
        (
            TimeFormat.ISO8601,
            [
                b'{"ts": "1970-01-01T00:00:01.5Z", "k": "a"}',
                b'{"ts": "1970-01-01T01:00:02+01:00", "k": "a"}',
            ],
            {0: {("a",): [1]}, 2000: {("a",): [1]}},
        ),
    ]
    for time_format, rows, expected in cases:
        spec = make_spec(size_ms=2000, time_format=time_format)
        records = [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(rows)]
        windows, _, bad, _ = run_in_batches(spec, records, [10])
        assert bad == [] and windows == expected, time_format


def test_processing_time_uses_now() -> None:
    spec = make_spec(size_ms=1000, time_format=TimeFormat.PROCESSING)
    windows, _, bad, _ = run_in_batches(spec, json_records([{"k": "a"}]), [1], now_ms=4321)
    assert bad == [] and windows == {4000: {("a",): [1]}}


def test_csv_records_by_header_spec() -> None:
    base = make_spec(aggregates=[(AggFunc.SUM, "v", "s")], size_ms=10)
    spec = type(base)(
        **{
            **{f: getattr(base, f) for f in base.__dataclass_fields__},
            "options": TaskOptions(
                input_format=InputFormat.CSV,
                csv=CsvFormat(columns=("ts", "k", "v"), delimiter=";"),
                buckets=2,
            ),
        }
    )
    rows = [b"1;a;2\n", b"2;a;x", b"3;a", b'4;"a";5', b"5;a;"]
    records = [SourceRecord(partition=0, offset=i, value=v) for i, v in enumerate(rows)]
    partials = preaggregate(spec, records, {}, 0)
    assert {r.offset for r in partials.bad} == {1, 2}
    (data,) = partials.datasets.values()
    assert decode_dataset(data).windows == {0: {("a",): [7]}}


def test_where_null_is_filtered_not_bad() -> None:
    spec = make_spec(where="v > 1", aggregates=[(AggFunc.COUNT, None, "n")])
    records = json_records(
        [{"ts": 1, "k": "a", "v": None}, {"ts": 1, "k": "a", "v": 5}, {"ts": 1, "k": "a"}]
    )
    partials = preaggregate(spec, records, {}, 0)
    assert partials.bad == [] and partials.filtered == 2 and partials.accepted == 3
    assert [decode_dataset(d).windows for d in partials.datasets.values()] == [{0: {("a",): [1]}}]


def test_buckets_are_stable_and_cover_groups_once() -> None:
    from mars.engine.preaggregate import bucket_of

    # Pinned values: a change here breaks every running task's bucket ownership.
    assert bucket_of(("a",), 8) == bucket_of(("a",), 8)
    assert [bucket_of((key,), 8) for key in ["a", "b", "c", 1, None]] == PINNED
    spec = make_spec(buckets=4)
    records = json_records([{"ts": 1, "k": k} for k in "abcdefghij"])
    partials = preaggregate(spec, records, {}, 0)
    seen = [key for data in partials.datasets.values() for key in decode_dataset(data).windows[0]]
    assert sorted(seen) == [(k,) for k in "abcdefghij"]
    for bucket, data in partials.datasets.items():
        assert all(bucket_of(key, 4) == bucket for key in decode_dataset(data).windows[0])


PINNED = [3, 1, 7, 2, 4]


def test_invalid_utf8_in_a_read_string_is_a_bad_record_not_a_crash() -> None:
    """msgspec raises UnicodeDecodeError (not DecodeError) for a string it reads; a string it
    skips is not checked."""
    decoded = JsonRecordDecoder(FieldPlan(fields=("a",))).decode(
        [b'{"a": "\xff"}', b'{"a": 1}', b'{"b": "\xff"}', b'{"\xff": 1}']
    )
    assert set(decoded.bad) == {0}
    assert decoded.bad[0].startswith("not a decodable JSON object")
    assert decoded.frame["a"].to_list() == [1, None, None]
