"""Malformed records: exactly the reported indices are bad, in every advertised way."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from devtools.gen import FIELD_NAMES, Encoding, GeneratorConfig, MalformedKind, generate


def _json_problem(value: bytes) -> str | None:
    """Why a JSON record would be rejected by a decoder, or None when it is usable."""
    try:
        record = json.loads(value)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return "not json"
    if not isinstance(record, dict):
        return "not an object"
    if "timestamp" not in record:
        return "no timestamp"
    if not isinstance(record["timestamp"], int):
        return "timestamp not a number"
    return None


def test_reported_indices_are_exactly_the_malformed_json_records() -> None:
    batch = generate(GeneratorConfig(count=20_000, seed=8, malformed_ratio=0.05))
    assert len(batch.malformed) == 1000
    assert set(batch.malformed_kinds) == batch.malformed
    for index, value in enumerate(batch.values):
        problem = _json_problem(value)
        if index in batch.malformed:
            assert problem is not None, (index, value)
        else:
            assert problem is None, (index, value)
            assert tuple(json.loads(value)) == FIELD_NAMES


def test_each_kind_is_malformed_in_its_own_way() -> None:
    batch = generate(GeneratorConfig(count=10_000, seed=1, malformed_ratio=0.1))
    counts = Counter(batch.malformed_kinds.values())
    assert set(counts) == set(MalformedKind)
    expected = {
        MalformedKind.GARBAGE: {"not json"},
        MalformedKind.TRUNCATED: {"not json"},
        MalformedKind.MISSING_TIMESTAMP: {"no timestamp"},
        MalformedKind.BAD_TIMESTAMP: {"timestamp not a number"},
        MalformedKind.WRONG_SHAPE: {"not an object"},
    }
    for index, kind in batch.malformed_kinds.items():
        assert _json_problem(batch.values[index]) in expected[kind], (kind, batch.values[index])
    garbage = [batch.values[i] for i, k in batch.malformed_kinds.items() if k == "garbage"]
    for value in garbage:
        with pytest.raises(UnicodeDecodeError):
            value.decode("utf-8")


def test_malformed_csv_lines_are_unusable() -> None:
    batch = generate(
        GeneratorConfig(count=5000, seed=2, malformed_ratio=0.1, encoding=Encoding.CSV)
    )
    for index, value in enumerate(batch.values):
        try:
            columns = value.decode("utf-8").split(",")
        except UnicodeDecodeError:
            assert batch.malformed_kinds[index] is MalformedKind.GARBAGE
            continue
        usable = len(columns) == len(FIELD_NAMES) and columns[0].isdigit()
        assert usable == (index not in batch.malformed), (index, value)


def test_ratio_zero_and_one() -> None:
    assert generate(GeneratorConfig(count=1000, seed=1)).malformed == frozenset()
    everything = generate(GeneratorConfig(count=1000, seed=1, malformed_ratio=1.0))
    assert everything.malformed == frozenset(range(1000))
