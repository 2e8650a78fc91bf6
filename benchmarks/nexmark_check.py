"""Mars's and Flink's Nexmark rows against the oracle's (`benchmarks.nexmark_oracle`).

Each system's rows are first put in one form per query, keyed by window (q11: by bidder and
the session's first bid), the sentinels' windows left out:

- q5 `start -> (auction, num)`: right when `num` is the window's largest count and the auction
  one of those that have it (Mars breaks ties by the other columns, Flink by its own order:
  any of the tied auctions is a valid top 1);
- q7 `start -> maxprice`;
- q11 `(bidder, first) -> (last, bids)`. Mars's `window_start` / `window_end` are the first and
  last bid's times; Flink's `SESSION_END` is the last bid's time plus the gap.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchmarks.nexmark_oracle import GAP_MS, Expected
from devtools.gen.nexmark import SENTINEL_ID

Keyed = list[tuple[Any, Any]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """How one run's rows compare with the oracle's."""

    rows: int  # data rows read (sentinels' windows left out)
    expected: int
    missing: int  # expected keys no row has
    wrong: int  # rows whose value is not the oracle's
    extra: int  # rows whose key the oracle has not
    duplicates: int  # further rows of a key already seen
    first_problem: str

    @property
    def exact(self) -> bool:
        return not (self.missing or self.wrong or self.extra or self.duplicates)

    def as_dict(self) -> dict[str, Any]:
        return {
            "exact": self.exact,
            "rows": self.rows,
            "expected": self.expected,
            "missing": self.missing,
            "wrong": self.wrong,
            "extra": self.extra,
            "duplicates": self.duplicates,
            "first_problem": self.first_problem,
        }


def flink_time_ms(text: str) -> int:
    """Flink's `CAST(TIMESTAMP(3) AS STRING)` in UTC (`2023-11-14 22:14:00.123`) as epoch ms."""
    whole, _, fraction = text.strip().partition(".")
    seconds = datetime.fromisoformat(whole).replace(tzinfo=UTC).timestamp()
    return int(seconds) * 1000 + int((fraction + "000")[:3])


def keyed_rows(system: str, query: str, rows: Iterable[Mapping[str, Any]]) -> Keyed:
    """`rows` of `system` ("mars" or "flink") for `query` in the query's one form."""
    if system == "mars":
        if query == "q5":
            return [(r["window_start"], (r["auction"], r["num"])) for r in rows]
        if query == "q7":
            return [(r["window_start"], r["maxprice"]) for r in rows]
        return [((r["bidder"], r["window_start"]), (r["window_end"], r["bid_count"])) for r in rows]
    if query == "q5":
        return [(flink_time_ms(r["window_start"]), (r["auction"], r["num"])) for r in rows]
    if query == "q7":
        return [(flink_time_ms(r["window_start"]), r["maxprice"]) for r in rows]
    return [
        (
            (r["bidder"], flink_time_ms(r["starttime"])),
            (flink_time_ms(r["endtime"]) - GAP_MS, r["bid_count"]),
        )
        for r in rows
    ]


def data_rows(query: str, keyed: Keyed, *, data_end_ms: int) -> Keyed:
    """The rows of data windows: those of the sentinels (far past the data) left out."""
    if query == "q11":
        return [(k, v) for k, v in keyed if k[0] != SENTINEL_ID and k[1] < data_end_ms]
    return [(k, v) for k, v in keyed if k < data_end_ms]


def check(query: str, keyed: Keyed, expected: Expected) -> Verdict:
    """`keyed` (data rows only) against the oracle's results of `query`."""
    wanted: Mapping[Any, Any] = getattr(expected, query)
    seen: set[Any] = set()
    wrong = extra = duplicates = 0
    problems: list[str] = []
    for key, value in keyed:
        if key in seen:
            duplicates += 1
            problems.append(f"{key} twice")
            continue
        seen.add(key)
        if key not in wanted:
            extra += 1
            problems.append(f"{key} not expected: {value}")
        elif not _right(query, value, wanted[key]):
            wrong += 1
            problems.append(f"{key}: {value}, expected {wanted[key]}")
    missing = [key for key in wanted if key not in seen]
    if missing:
        problems.append(f"{len(missing)} missing, e.g. {min(missing)}: {wanted[min(missing)]}")
    return Verdict(
        rows=len(keyed),
        expected=len(wanted),
        missing=len(missing),
        wrong=wrong,
        extra=extra,
        duplicates=duplicates,
        first_problem=problems[0] if problems else "",
    )


def _right(query: str, value: Any, want: Any) -> bool:
    if query == "q5":
        auction, num = value
        top, auctions = want
        return bool(num == top and auction in auctions)
    return bool(value == want)
