"""Nested paths decode to what a plain walk over the parsed JSON gives: NULL for a missing key,
a short array or a null on the way; a bad record naming the path for a key of a non-object, an
index of a non-array, or an object/array where the column needs a scalar. Tasks reading
overlapping paths share one decode and still get exactly their own frames."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mars.engine.decode import FieldPlan, JsonRecordDecoder, RecordDecoder
from mars.tasks.field_paths import FieldPath, display_path, path_name
from tests.unit.engine.test_shared_decode import assert_shared_equals_own

KEYS = ["a", "b", "c", "x y", "it's"]
scalar = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(["s", "t"]))
value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=8,
)
document = st.dictionaries(st.sampled_from(KEYS[:3]), value)
step = st.one_of(st.sampled_from(KEYS), st.integers(0, 2))
path = st.tuples(st.sampled_from(KEYS[:3]), st.lists(step, max_size=3)).map(lambda p: (p[0], *p[1]))
record = st.one_of(
    document.map(lambda d: json.dumps(d).encode()),
    st.sampled_from([b"{", b"[1]", b"7", b""]),
)

BROKEN = object()


def reference(doc: dict[str, Any], path: FieldPath) -> tuple[Any, FieldPath | None]:
    """(value, None), or (BROKEN, the part of the path that the reason must name)."""
    current: Any = doc
    for depth, key in enumerate(path):
        if current is None:
            return None, None
        if isinstance(key, int):
            if not isinstance(current, list):
                return BROKEN, path[:depth]
            current = current[key] if key < len(current) else None
        else:
            if not isinstance(current, dict):
                return BROKEN, path[:depth]
            current = current.get(key)
    if isinstance(current, dict | list):
        return BROKEN, path
    return current, None


@settings(max_examples=400, deadline=None)
@given(values=st.lists(record, max_size=8), paths=st.lists(path, min_size=1, max_size=4))
def test_a_path_column_is_the_reference_walk(values: list[bytes], paths: list[FieldPath]) -> None:
    names = list(dict.fromkeys(path_name(p) for p in paths))
    paths = [p for p in dict(zip(map(path_name, paths), paths, strict=True)).values()]
    decoded = JsonRecordDecoder(FieldPlan(fields=tuple(names))).decode(values)
    expected_columns: dict[str, list[Any]] = {name: [] for name in names}
    expected_rows: list[int] = []
    for row, raw in enumerate(values):
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if not isinstance(doc, dict):
            assert decoded.bad[row].startswith("not a decodable JSON object")
            continue
        walked = [reference(doc, p) for p in paths]
        broken = [named for value_, named in walked if value_ is BROKEN]
        if broken:
            named = broken[0]  # the first column's problem is the reason
            assert named is not None
            assert f"'{display_path(named)}'" in decoded.bad[row], decoded.bad[row]
            continue
        assert row not in decoded.bad
        expected_rows.append(row)
        for name, (value_, _) in zip(names, walked, strict=True):
            expected_columns[name].append(value_)
    assert decoded.frame.get_column("__row").to_list() == expected_rows
    for name, column in expected_columns.items():
        if any(isinstance(v, str) for v in column):  # a batch of mixed kinds reads as text
            column = [None if v is None else str(v) for v in column]
        assert decoded.frame.get_column(name).to_list() == column


def test_null_or_missing_on_the_way_is_null_and_a_wrong_kind_is_bad() -> None:
    plan = FieldPlan(fields=("$.m.u.id", "$.m.tags[1]"))
    values = [
        b'{"m": {"u": {"id": 7, "skip": [1, 2]}, "tags": ["a", "b"]}}',
        b'{"m": null}',
        b'{"m": {"u": null, "tags": []}}',
        b"{}",
        b'{"m": {"u": 3}}',
        b'{"m": {"u": {"id": 1}, "tags": {"1": "x"}}}',
        b'{"m": {"u": {"id": [1]}}}',
    ]
    decoded = JsonRecordDecoder(plan).decode(values)
    assert decoded.frame.rows() == [(0, 7, "b"), (1, None, None), (2, None, None), (3, None, None)]
    assert decoded.bad == {
        4: "'m.u' holds a number where an object is needed (to read 'm.u.id')",
        5: "'m.tags' holds an object where an array is needed (to read 'm.tags[1]')",
        6: "field 'm.u.id' holds a nested value, a scalar is needed",
    }


def test_a_path_read_by_one_task_only_makes_records_bad_for_that_task() -> None:
    values = [b'{"m": {"u": 3}, "k": 1}', b'{"m": {"u": {"id": 2}}, "k": 2}']
    decoders: list[RecordDecoder] = [
        JsonRecordDecoder(FieldPlan(fields=("k", "$.m.u.id"))),
        JsonRecordDecoder(FieldPlan(fields=("k", "$.m.v"))),
    ]
    assert_shared_equals_own(decoders, values)
    assert list(decoders[0].decode(values).bad) == [0]
    assert decoders[1].decode(values).bad == {}


NESTED_PLANS = (
    FieldPlan(fields=("$.a.b", "c"), numeric_fields=frozenset({"$.a.b"})),
    FieldPlan(fields=("$.a.b", "$.a['x y'][0]", "$.a")),  # a path and its own parent
    FieldPlan(fields=("$.b[0].a", "$.b.a")),  # an index and a key of the same node
    FieldPlan(fields=("$.a.c.a",)),
)


@settings(max_examples=300, deadline=None)
@given(values=st.lists(record, max_size=8))
def test_tasks_reading_overlapping_paths_share_a_decode(values: list[bytes]) -> None:
    decoders: list[RecordDecoder] = [JsonRecordDecoder(plan) for plan in NESTED_PLANS]
    assert_shared_equals_own(decoders, values)
