"""The simulated tuple generator: shape, size, determinism, time layout, skew."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

import pytest

from devtools.gen import (
    FIELD_NAMES,
    Encoding,
    GeneratedBatch,
    GeneratorConfig,
    generate,
    iter_chunks,
)
from devtools.gen.fields import field_pools
from devtools.gen.tuples import BLOCK_SIZE
from mars.tasks.spec import TimeFormat


def _objects(config: GeneratorConfig) -> list[dict[str, Any]]:
    return [json.loads(v) for v in generate(config).values]


def test_twenty_fields_in_declared_order() -> None:
    assert len(FIELD_NAMES) == 20
    assert len(set(FIELD_NAMES)) == 20
    assert tuple(p.name for p in field_pools(sip_cardinality=3)) == FIELD_NAMES[1:]
    for record in _objects(GeneratorConfig(count=500, seed=3)):
        assert tuple(record) == FIELD_NAMES


def test_every_value_comes_from_its_pool() -> None:
    pools = {p.name: set(p.values) for p in field_pools(sip_cardinality=50)}
    for record in _objects(GeneratorConfig(count=2000, seed=4, sip_cardinality=50)):
        for name, allowed in pools.items():
            assert record[name] in allowed, name


def test_csv_lines_hold_the_same_tuples_as_json() -> None:
    as_json = _objects(GeneratorConfig(count=300, seed=5))
    as_csv = generate(GeneratorConfig(count=300, seed=5, encoding=Encoding.CSV)).values
    for obj, line in zip(as_json, as_csv, strict=True):
        assert line.decode().split(",") == [str(obj[name]) for name in FIELD_NAMES]


def test_csv_average_size_is_the_papers_150_bytes() -> None:
    values = generate(GeneratorConfig(count=20_000, seed=1, encoding=Encoding.CSV)).values
    average = sum(map(len, values)) / len(values)
    assert 130 <= average <= 170


def test_json_average_size_is_stable() -> None:
    # 20 named JSON fields cannot fit [Mars]'s 150-byte tuples: the keys and punctuation alone
    # take ~185 bytes. Pin the measured size so throughput numbers stay comparable.
    values = generate(GeneratorConfig(count=20_000, seed=1)).values
    average = sum(map(len, values)) / len(values)
    assert 310 <= average <= 360


def test_same_config_same_bytes_and_other_seed_differs() -> None:
    config = GeneratorConfig(count=3000, seed=11, malformed_ratio=0.05, disorder_s=3)
    first, again = generate(config), generate(config)
    assert first.values == again.values
    assert first.malformed == again.malformed
    other = generate(GeneratorConfig(count=3000, seed=12, malformed_ratio=0.05, disorder_s=3))
    assert other.values != first.values


CHUNKED = GeneratorConfig(count=BLOCK_SIZE + 5000, seed=2, malformed_ratio=0.01)


@pytest.fixture(scope="module")
def whole_stream() -> GeneratedBatch:
    return generate(CHUNKED)


@pytest.mark.parametrize("chunk_size", [7919, BLOCK_SIZE, BLOCK_SIZE + 1, 10 * BLOCK_SIZE])
def test_chunks_concatenate_to_the_whole_stream(
    chunk_size: int, whole_stream: GeneratedBatch
) -> None:
    config, whole = CHUNKED, whole_stream
    chunks = list(iter_chunks(config, chunk_size=chunk_size))
    assert [c.start_index for c in chunks] == sorted(c.start_index for c in chunks)
    assert sum(len(c) for c in chunks) == config.count
    assert [v for c in chunks for v in c.values] == whole.values
    assert [k for c in chunks for k in c.keys] == whole.keys
    assert frozenset().union(*(c.malformed for c in chunks)) == whole.malformed
    for chunk in chunks:
        assert all(chunk.start_index <= i < chunk.end_index for i in chunk.malformed)


def test_timestamps_spread_evenly_and_in_order() -> None:
    config = GeneratorConfig(count=1200, seed=1, start_s=1_000_000, span_s=600)
    times = [r["timestamp"] for r in _objects(config)]
    assert times == sorted(times)
    assert times[0] == 1_000_000
    assert times[-1] == 1_000_000 + 599
    assert Counter(times) == {1_000_000 + s: 2 for s in range(600)}


def test_disorder_is_bounded_and_present() -> None:
    config = GeneratorConfig(count=5000, seed=9, start_s=0, span_s=500, disorder_s=4)
    times = [r["timestamp"] for r in _objects(config)]
    assert times != sorted(times)
    assert min(times) >= 0 and max(times) < 500
    high = times[0]
    for t in times:
        assert t >= high - 4
        high = max(high, t)


def _times(time_format: TimeFormat) -> list[Any]:
    config = GeneratorConfig(count=400, seed=6, span_s=40, disorder_s=2, time_format=time_format)
    return [r["timestamp"] for r in _objects(config)]


def test_epoch_ms_and_iso_formats_describe_the_same_instants() -> None:
    ms, iso = _times(TimeFormat.EPOCH_MS), _times(TimeFormat.ISO8601)
    assert all(isinstance(t, int) for t in ms)
    assert any(t % 1000 for t in ms if isinstance(t, int))  # real millisecond resolution
    parsed = [int(datetime.fromisoformat(str(t)).timestamp() * 1000) for t in iso]
    assert parsed == ms
    seconds = _times(TimeFormat.EPOCH_S)
    assert seconds == [t // 1000 for t in ms if isinstance(t, int)]


def test_sip_cardinality_bounds_distinct_groups() -> None:
    records = _objects(GeneratorConfig(count=5000, seed=1, sip_cardinality=40))
    assert len({r["sip"] for r in records}) == 40
    batch = generate(GeneratorConfig(count=100, seed=1, sip_cardinality=40))
    assert batch.keys == [json.loads(v)["sip"].encode() for v in batch.values]


def test_zipf_skew_concentrates_on_the_first_values() -> None:
    uniform = Counter(
        r["sip"] for r in _objects(GeneratorConfig(count=10_000, sip_cardinality=100))
    )
    skewed_records = _objects(GeneratorConfig(count=10_000, sip_cardinality=100, zipf_s=1.2))
    skewed = Counter(r["sip"] for r in skewed_records)
    hottest_share = skewed.most_common(1)[0][1] / 10_000
    assert uniform.most_common(1)[0][1] / 10_000 < 0.03
    assert hottest_share > 0.15
    assert skewed.most_common(1)[0][0] == field_pools(sip_cardinality=100)[1].values[0]
    types = Counter(r["type"] for r in skewed_records)
    assert types.most_common(1)[0][0] == "http"  # every pooled field is skewed


@pytest.mark.parametrize(
    "bad",
    [
        {"count": -1},
        {"count": 1, "span_s": 0},
        {"count": 1, "malformed_ratio": 1.5},
        {"count": 1, "zipf_s": -1.0},
        {"count": 1, "sip_cardinality": 0},
        {"count": 1, "time_format": TimeFormat.PROCESSING},
    ],
)
def test_invalid_configs_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        GeneratorConfig(**bad)  # type: ignore[arg-type]


def test_empty_stream() -> None:
    assert generate(GeneratorConfig(count=0)).values == []
    assert list(iter_chunks(GeneratorConfig(count=0))) == []
