"""Nexmark-style bids: the `Bid` stream of the Nexmark benchmark, as columns and as JSON records.

    bids = generate_bids(NexmarkConfig(count=100_000, seed=7))
    encode_bids(bids, 0, 1000)   # list[bytes]: {"auction":..,"bidder":..,"price":..,
                                 #   "channel":..,"url":..,"dateTime":<epoch ms>,"extra":..}

As Nexmark's `BidGenerator`: a bid goes to a hot auction unless `nextInt(hot_auction_ratio)`
is 0 (half the bids with the ratio 2), to a hot bidder unless `nextInt(hot_bidder_ratio)` is 0
(three quarters with 4), its price is log-uniform (`round(10^(6u) * 100)`, 100 to 10^8), and
nine bids in ten name one of the four hot channels. Nexmark's hot auctions and bidders are the
newest ones, so the hot set moves with time; here it is drawn anew every `hot_period_s` of
event time, so a bidder is busy for a while, then quiet: its bids form sessions. Cold bidders
(`bidders` of them) bid rarely, one session per bid or few.

Event time: bursts of 1 to `max_burst` bids in the same millisecond (Nexmark emits several
events per millisecond, so timestamps repeat a lot), the bursts spread at random over
`span_s` seconds. The stream is in time order, so every partition of it (records taken in
order) is too. Equal configs give equal columns (numpy's PCG64 seeded by `seed`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from devtools.gen.config import DEFAULT_START_S

# Nexmark's first ids (`GeneratorConfig.FIRST_AUCTION_ID` / `FIRST_PERSON_ID`).
FIRST_AUCTION_ID = 1000
FIRST_PERSON_ID = 1000
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
MAX_PRICE_DIGITS = 6  # Nexmark's `PriceGenerator`: 10^(6u) dollars, in cents
EXTRA_VARIANTS = 256  # distinct `extra` strings (Nexmark pads bids to an average size)
SENTINEL_ID = -1  # the auction and bidder of a sentinel bid: never a generated id

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class NexmarkConfig:
    """What to generate. Equal configs generate identical bids."""

    count: int
    seed: int = 7
    start_ms: int = DEFAULT_START_S * 1000
    span_s: int = 1800
    auctions: int = 10_000
    bidders: int = 20_000
    hot_auctions: int = 4
    hot_bidders: int = 50
    hot_auction_ratio: int = 2
    hot_bidder_ratio: int = 4
    hot_period_s: int = 30
    max_burst: int = 8
    channels: int = 100  # the cold channels `channel-<n>`

    def __post_init__(self) -> None:
        if self.count < 0 or self.span_s <= 0 or self.hot_period_s <= 0 or self.max_burst < 1:
            raise ValueError("count >= 0, span_s > 0, hot_period_s > 0, max_burst >= 1")
        if self.hot_auction_ratio < 1 or self.hot_bidder_ratio < 1:
            raise ValueError("hot ratios are >= 1 (1: every bid hot)")
        if not 0 < self.hot_auctions <= self.auctions or not 0 < self.hot_bidders <= self.bidders:
            raise ValueError("0 < hot auctions/bidders <= auctions/bidders")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bids:
    """Generated bids as columns, in time order; `channel` and `extra` index
    `channel_names` / `extras`."""

    auction: Ints
    bidder: Ints
    price: Ints
    date_time: Ints
    channel: Ints
    extra: Ints
    channel_names: tuple[str, ...]
    extras: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.auction)


def generate_bids(config: NexmarkConfig) -> Bids:
    """Every bid of `config`, as columns."""
    rng = np.random.default_rng(config.seed)
    n = config.count
    date_time = _times(config, rng)
    periods = (date_time - config.start_ms) // (config.hot_period_s * 1000)
    auction = _ids(
        rng,
        n=n,
        periods=periods,
        pool=config.auctions,
        hot=config.hot_auctions,
        ratio=config.hot_auction_ratio,
    )
    bidder = _ids(
        rng,
        n=n,
        periods=periods,
        pool=config.bidders,
        hot=config.hot_bidders,
        ratio=config.hot_bidder_ratio,
    )
    price = np.round(10.0 ** (rng.random(n) * MAX_PRICE_DIGITS) * 100.0).astype(np.int64)
    cold = rng.integers(0, 10, size=n) == 0  # Nexmark: `nextInt(10) > 0` names a hot channel
    channel = np.where(
        cold,
        len(HOT_CHANNELS) + rng.integers(0, config.channels, size=n),
        rng.integers(0, len(HOT_CHANNELS), size=n),
    ).astype(np.int64)
    names = HOT_CHANNELS + tuple(f"channel-{k}" for k in range(config.channels))
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    extras = tuple(
        "".join(rng.choice(letters, size=int(rng.integers(0, 24)))) for _ in range(EXTRA_VARIANTS)
    )
    return Bids(
        auction=auction + FIRST_AUCTION_ID,
        bidder=bidder + FIRST_PERSON_ID,
        price=price,
        date_time=date_time,
        channel=channel,
        extra=rng.integers(0, EXTRA_VARIANTS, size=n).astype(np.int64),
        channel_names=names,
        extras=extras,
    )


def _times(config: NexmarkConfig, rng: np.random.Generator) -> Ints:
    """Non-decreasing epoch ms: bursts of equal times at sorted random instants of the span."""
    mean_burst = (1 + config.max_burst) / 2
    drawn = int(config.count / mean_burst * 1.2) + 16  # more bursts than the bids need
    sizes = rng.integers(1, config.max_burst + 1, size=drawn)
    while int(sizes.sum()) < config.count:  # rare: draw more bursts until they hold every bid
        sizes = np.concatenate([sizes, rng.integers(1, config.max_burst + 1, size=drawn)])
    # only the bursts that hold the bids, so that they spread over the whole span
    sizes = sizes[: int(np.searchsorted(np.cumsum(sizes), config.count)) + 1]
    instants = np.sort(rng.integers(0, config.span_s * 1000, size=len(sizes)))
    times = np.repeat(instants, sizes)[: config.count]
    return (times + config.start_ms).astype(np.int64)


def _ids(
    rng: np.random.Generator, *, n: int, periods: Ints, pool: int, hot: int, ratio: int
) -> Ints:
    """Per bid: one of its period's `hot` ids unless `nextInt(ratio)` is 0, else any id of the
    pool (0-based)."""
    count = int(periods.max()) + 1 if n else 0
    hot_sets = rng.integers(0, pool, size=(max(count, 1), hot))
    is_hot = rng.integers(0, ratio, size=n) > 0
    hot_ids = hot_sets[periods, rng.integers(0, hot, size=n)]
    return np.where(is_hot, hot_ids, rng.integers(0, pool, size=n)).astype(np.int64)


def url_of(channel: str) -> str:
    """Nexmark's bid URL shape, one per channel."""
    return f"https://www.nexmark.com/{channel.lower()}/item.htm?query=1"


def encode_bids(bids: Bids, lo: int, hi: int) -> list[bytes]:
    """Bids `lo .. hi - 1` as JSON objects (no whitespace; the strings need no escaping)."""
    names, extras = bids.channel_names, bids.extras
    urls = tuple(url_of(name) for name in names)
    return [
        (
            f'{{"auction":{a},"bidder":{b},"price":{p},"channel":"{names[c]}",'
            f'"url":"{urls[c]}","dateTime":{t},"extra":"{extras[e]}"}}'
        ).encode()
        for a, b, p, c, t, e in zip(
            bids.auction[lo:hi].tolist(),
            bids.bidder[lo:hi].tolist(),
            bids.price[lo:hi].tolist(),
            bids.channel[lo:hi].tolist(),
            bids.date_time[lo:hi].tolist(),
            bids.extra[lo:hi].tolist(),
            strict=True,
        )
    ]


def sentinel_bid(date_time_ms: int) -> bytes:
    """A bid of auction and bidder `SENTINEL_ID` at `date_time_ms`: one per partition, far past
    the data, moves every watermark past the last data window."""
    return (
        f'{{"auction":{SENTINEL_ID},"bidder":{SENTINEL_ID},"price":0,"channel":"sentinel",'
        f'"url":"","dateTime":{date_time_ms},"extra":""}}'
    ).encode()
