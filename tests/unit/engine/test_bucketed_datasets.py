"""The columnar data set encoder gives byte for byte what the per-group reference gives.

The reference is the obvious slow path (the engine's previous one): one Python dict of groups
per bucket and window, `bucket_of` per key, `encode_dataset`. Same bytes means reducers,
checkpoints and the Spark job see no difference. Both ways to the entries are checked: the
native one (`mars_native`, which `make setup` builds) and the pure-Python fallback.
"""

from __future__ import annotations

import random
from typing import Any

import msgspec
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mars.engine.bucketed_datasets as bucketed_datasets
from mars.aggregates import Aggregate, aggregates_for
from mars.engine.bucketed_datasets import array_header, encode_bucketed_datasets
from mars.engine.dataset import Groups, encode_dataset
from mars.engine.preaggregate import bucket_of
from mars.tasks.bucket_layout import BucketChange, BucketLayout
from mars.tasks.spec import AggFunc, AggregateCall

CALLS = [
    AggregateCall(func=AggFunc.COUNT, argument=None, alias="n"),
    AggregateCall(func=AggFunc.COUNT, argument="v", alias="n_v"),
    AggregateCall(func=AggFunc.SUM, argument="v", alias="s"),
    AggregateCall(func=AggFunc.MIN, argument="v", alias="lo"),
    AggregateCall(func=AggFunc.MAX, argument="v", alias="hi"),
    AggregateCall(func=AggFunc.AVG, argument="v", alias="mean"),
    AggregateCall(func=AggFunc.COUNT_DISTINCT, argument="v", alias="d"),
    AggregateCall(func=AggFunc.APPROX_COUNT_DISTINCT, argument="u", alias="a"),
]


def reference(
    grouped: pl.DataFrame,
    keys: list[str],
    aggregates: tuple[Aggregate[Any], ...],
    layout: BucketLayout,
) -> dict[int, bytes]:
    starts = grouped.get_column("w").to_list()
    key_rows = list(zip(*(grouped.get_column(k).to_list() for k in keys), strict=True))
    if not keys:
        key_rows = [()] * grouped.height
    states = [agg.states_from_frame(grouped, f"__s{i}_") for i, agg in enumerate(aggregates)]
    by_bucket: dict[int, dict[int, Groups]] = {}
    for row, (start, key) in enumerate(zip(starts, key_rows, strict=True)):
        windows = by_bucket.setdefault(bucket_of(key, layout.buckets_at(start)), {})
        windows.setdefault(start, {})[key] = [column[row] for column in states]
    return {b: encode_dataset(aggregates, w) for b, w in sorted(by_bucket.items())}


@pytest.fixture(params=["native", "python"])
def entries(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which way to the entries: the native one must be built (no skip), or be switched off."""
    assert bucketed_datasets.mars_native is not None, "mars_native is not built: make setup"
    if request.param == "python":
        monkeypatch.setattr(bucketed_datasets, "mars_native", None)
    return str(request.param)


def encode(
    grouped: pl.DataFrame,
    keys: list[str],
    aggregates: tuple[Aggregate[Any], ...],
    layout: BucketLayout,
) -> dict[int, bytes]:
    return encode_bucketed_datasets(
        grouped=grouped,
        window_column="w",
        key_columns=keys,
        aggregates=aggregates,
        state_prefixes=[f"__s{i}_" for i in range(len(aggregates))],
        layout=layout,
    )


def grouped_frame(
    rows: list[dict[str, Any]], keys: list[str], aggregates: tuple[Aggregate[Any], ...]
) -> pl.DataFrame:
    frame = pl.DataFrame(
        rows,
        schema={
            "w": pl.Int64,
            "k": pl.String,
            "j": pl.Int64,
            "x": pl.Float64,
            "v": pl.Int64,
            "u": pl.String,
        },
    )
    exprs: list[pl.Expr] = []
    for i, (agg, call) in enumerate(zip(aggregates, CALLS, strict=True)):
        argument = pl.col(call.argument) if call.argument else None
        exprs.extend(agg.partial_exprs(argument, f"__s{i}_"))
    return frame.group_by(["w", *keys]).agg(exprs)


row_st = st.fixed_dictionaries(
    {
        "w": st.sampled_from([0, 60_000, -60_000, 2**40]),
        "k": st.one_of(st.none(), st.text(max_size=40)),
        "j": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        "x": st.one_of(st.none(), st.floats(allow_nan=False)),
        "v": st.one_of(st.none(), st.integers(-1000, 1000)),
        "u": st.text(max_size=3),
    }
)


# `entries` holds for every example of a test: set once, nothing to reset between examples.
@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    rows=st.lists(row_st, max_size=120),
    keys=st.sampled_from([["k"], ["j"], ["x"], ["k", "j", "x"], []]),
    layout=st.sampled_from(
        [
            *(BucketLayout(initial=n) for n in [1, 3, 8, 64]),
            # changed twice: windows before 0 in 3 buckets, from 0 in 8, from 2**40 in 1
            BucketLayout(
                initial=3,
                changes=(
                    BucketChange(from_window_ms=0, buckets=8),
                    BucketChange(from_window_ms=2**40, buckets=1),
                ),
            ),
        ]
    ),
)
def test_same_bytes_as_the_per_group_reference(
    entries: str, rows: list[dict[str, Any]], keys: list[str], layout: BucketLayout
) -> None:
    aggregates = aggregates_for(tuple(CALLS))
    grouped = grouped_frame(rows, keys, aggregates)
    fast = encode(grouped, keys, aggregates, layout)
    assert fast == reference(grouped, keys, aggregates, layout)


def test_many_groups_in_one_cell_use_the_long_array_header(entries: str) -> None:
    aggregates = aggregates_for(tuple(CALLS))
    rows = [{"w": 0, "k": f"key{i}", "j": i, "x": i / 3, "v": i, "u": "x"} for i in range(70_000)]
    grouped = grouped_frame(rows, ["j"], aggregates)
    fast = encode(grouped, ["j"], aggregates, BucketLayout(initial=1))
    assert fast == reference(grouped, ["j"], aggregates, BucketLayout(initial=1))


def test_keys_sharing_a_long_prefix_are_ordered_by_their_whole_bytes(entries: str) -> None:
    # The native sort compares a word of each entry first: these keys tie on it.
    aggregates = aggregates_for(tuple(CALLS))
    suffixes = random.Random(7).sample(range(1000), 300)
    rows = [
        {"w": 0, "k": f"a long shared prefix {n}", "j": n, "x": None, "v": n, "u": "x"}
        for n in suffixes
    ]
    grouped = grouped_frame(rows, ["k"], aggregates)
    fast = encode(grouped, ["k"], aggregates, BucketLayout(initial=2))
    assert fast == reference(grouped, ["k"], aggregates, BucketLayout(initial=2))


@pytest.mark.parametrize("length", [0, 1, 15, 16, 255, 65_535, 65_536, 100_000])
def test_array_header_matches_msgspec(length: int) -> None:
    encoded = msgspec.msgpack.encode([None] * length)
    assert array_header(length) == encoded[: len(encoded) - length]
