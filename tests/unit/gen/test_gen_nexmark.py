"""The Nexmark bid generator: shape, determinism, time order, hot auctions and bidders,
log-uniform prices, repeated timestamps, sessions."""

from __future__ import annotations

import json

import numpy as np
import pytest

from devtools.gen.nexmark import (
    FIRST_AUCTION_ID,
    FIRST_PERSON_ID,
    HOT_CHANNELS,
    SENTINEL_ID,
    NexmarkConfig,
    encode_bids,
    generate_bids,
    sentinel_bid,
)

CONFIG = NexmarkConfig(count=50_000, seed=3, span_s=600)


def test_a_bid_is_a_json_object_of_nexmarks_fields() -> None:
    bids = generate_bids(CONFIG)
    for value in encode_bids(bids, 0, 200):
        bid = json.loads(value)
        assert list(bid) == ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]
        assert all(isinstance(bid[k], int) for k in ("auction", "bidder", "price", "dateTime"))
        assert all(isinstance(bid[k], str) for k in ("channel", "url", "extra"))
        assert bid["auction"] >= FIRST_AUCTION_ID and bid["bidder"] >= FIRST_PERSON_ID


def test_equal_configs_give_equal_bids_and_seeds_differ() -> None:
    first, again = generate_bids(CONFIG), generate_bids(CONFIG)
    assert encode_bids(first, 0, len(first)) == encode_bids(again, 0, len(again))
    other = generate_bids(NexmarkConfig(count=50_000, seed=4, span_s=600))
    assert not np.array_equal(first.auction, other.auction)


def test_times_are_in_order_within_the_span_and_repeat_a_lot() -> None:
    bids = generate_bids(CONFIG)
    times = bids.date_time
    assert len(bids) == CONFIG.count
    assert np.all(np.diff(times) >= 0)
    assert times[0] >= CONFIG.start_ms and times[-1] < CONFIG.start_ms + CONFIG.span_s * 1000
    for partition in range(4):  # bid i goes to partition i % 4: each one in order too
        assert np.all(np.diff(times[partition::4]) >= 0)
    _, per_ms = np.unique(times, return_counts=True)
    assert per_ms.mean() > 3  # several bids per millisecond
    assert per_ms.max() <= CONFIG.max_burst * 2  # two bursts can fall on one millisecond


@pytest.mark.parametrize("count", [1_000, 99_999, 100_000, 300_000])
def test_the_bids_spread_over_the_whole_span(count: int) -> None:
    times = generate_bids(NexmarkConfig(count=count, seed=count, span_s=1800)).date_time
    assert len(times) == count and times[-1] - times[0] > 0.95 * 1800 * 1000


def test_most_bids_go_to_hot_auctions_and_hot_bidders() -> None:
    bids = generate_bids(NexmarkConfig(count=60_000, seed=5, span_s=30, hot_period_s=30))
    # one hot period: its hot auctions and bidders are the most frequent ids
    _, auction_counts = np.unique(bids.auction, return_counts=True)
    _, bidder_counts = np.unique(bids.bidder, return_counts=True)
    hot_auction_share = np.sort(auction_counts)[-4:].sum() / len(bids)
    hot_bidder_share = np.sort(bidder_counts)[-50:].sum() / len(bids)
    assert 0.48 < hot_auction_share < 0.55  # Nexmark's hot auction ratio 2: half
    assert 0.73 < hot_bidder_share < 0.80  # hot bidder ratio 4: three quarters


def test_the_hot_set_moves_with_event_time() -> None:
    bids = generate_bids(NexmarkConfig(count=40_000, seed=6, span_s=120, hot_period_s=30))
    periods = (bids.date_time - bids.date_time[0]) // 30_000
    tops = [int(np.bincount(bids.auction[periods == p]).argmax()) for p in range(4)]
    assert len(set(tops)) > 1


def test_prices_are_log_uniform() -> None:
    bids = generate_bids(CONFIG)
    assert bids.price.min() >= 100 and bids.price.max() <= 100_000_000
    digits = np.log10(bids.price / 100.0)
    shares = np.histogram(digits, bins=6, range=(0, 6))[0] / len(bids)
    assert np.all(np.abs(shares - 1 / 6) < 0.02)


def test_nine_bids_in_ten_name_a_hot_channel() -> None:
    bids = generate_bids(CONFIG)
    hot = np.mean(bids.channel < len(HOT_CHANNELS))
    assert 0.88 < hot < 0.92


def test_bidders_have_many_sessions() -> None:
    bids = generate_bids(NexmarkConfig(count=200_000, seed=7, bidders=2_000, span_s=1800))
    order = np.lexsort((bids.date_time, bids.bidder))
    bidder, times = bids.bidder[order], bids.date_time[order]
    opens = np.ones(len(bidder), dtype=bool)
    opens[1:] = (bidder[1:] != bidder[:-1]) | (np.diff(times) > 10_000)
    sessions = np.bincount(bidder[opens])
    assert np.median(sessions[sessions > 0]) >= 10


def test_a_sentinel_bid_has_ids_the_data_never_has() -> None:
    bid = json.loads(sentinel_bid(1_700_086_400_000))
    assert bid["auction"] == bid["bidder"] == SENTINEL_ID
    assert bid["dateTime"] == 1_700_086_400_000


@pytest.mark.parametrize(
    "bad",
    [
        {"count": -1},
        {"count": 1, "span_s": 0},
        {"count": 1, "hot_auction_ratio": 0},
        {"count": 1, "hot_bidders": 0},
        {"count": 1, "auctions": 2, "hot_auctions": 3},
    ],
)
def test_a_config_that_cannot_generate_is_refused(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        NexmarkConfig(**bad)
