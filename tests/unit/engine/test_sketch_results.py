"""APPROX_PERCENTILE and TOPK through the engine, from SQL to result rows: pre-aggregated in
batches of any size, merged, finalized with HAVING on a percentile; a float and lists in the
rows, as the result JSON carries them; non-numbers are bad records for a percentile."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

import numpy as np
import pytest
from engine_helpers import json_records, run_in_batches

from mars.engine.finalize import result_spec, windows_rows
from mars.sql import parse_task

SQL = (
    "SELECT k, approx_median(v) AS med, approx_percentile(v, [0.1, 0.9]) AS tails, "
    "topk(s, 2) AS top, topk(v, 1) AS top_v FROM S GROUP BY k "
    "HAVING approx_percentile(v, 0.9) > 10.5 WINDOWING 10 ms "
    "WITH (event_time = 'ts', event_time_format = 'epoch_ms')"
)


def rows_of(batch_sizes: list[int], records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    spec = result_spec(parse_task(SQL, task_id="t"))
    windows, _, bad, _ = run_in_batches(spec, json_records(records), batch_sizes)
    assert not bad
    rows = windows_rows(spec, sorted(windows.items()))
    return sorted(rows, key=lambda r: (r["window_start"], str(r["k"])))


def expected(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[int, Any], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["ts"] // 10 * 10, r["k"]), []).append(r)
    out = []
    for (_start, k), members in sorted(groups.items(), key=lambda g: (g[0][0], str(g[0][1]))):
        v = np.array([m["v"] for m in members if m["v"] is not None], dtype=np.float64)

        def q(p: float, v: Any = v) -> float | None:
            return float(np.quantile(v, p, method="inverted_cdf")) if len(v) else None

        if not len(v) or (q(0.9) or 0) <= 10.5:
            continue  # HAVING: a NULL percentile drops the group too
        s = Counter(m["s"] for m in members if m["s"] is not None)
        vs = Counter(m["v"] for m in members if m["v"] is not None)
        top = sorted(s.items(), key=lambda i: (-i[1], i[0]))[:2]
        top_v = sorted(vs.items(), key=lambda i: (-i[1], i[0]))[:1]
        out.append(
            {
                "k": k,
                "med": q(0.5),
                "tails": [q(0.1), q(0.9)],
                "top": [value for value, _ in top] or None,
                "top_v": [value for value, _ in top_v],
            }
        )
    return out


@pytest.mark.parametrize("seed", range(5))
def test_rows_equal_the_exact_answer_whatever_the_batches(seed: int) -> None:
    rng = random.Random(seed)
    records = [
        {
            "ts": rng.randint(0, 39),
            "k": rng.choice(["a", "b", None]),
            "v": None if rng.random() < 0.1 else rng.randint(-5, 30),
            "s": rng.choice(["x", "y", "z", None]),
        }
        for _ in range(300)
    ]
    records.sort(key=lambda r: r["ts"])  # in time order: none late
    want = expected(records)
    for sizes in ([1], [7], [1000], [rng.randint(1, 50) for _ in range(5)]):
        rows = rows_of(sizes, records)
        got = [{name: row[name] for name in want[0]} for row in rows] if want else rows
        assert got == want
        assert all(isinstance(row["med"], float) for row in rows)
        json.dumps(rows)  # a float and lists: plain JSON


def test_a_non_number_is_a_bad_record_for_a_percentile_only() -> None:
    spec = parse_task(
        "SELECT approx_median(v) AS med, topk(v, 3) AS top FROM S WINDOWING 10 ms "
        "WITH (event_time = 'ts', event_time_format = 'epoch_ms')",
        task_id="t",
    )
    records = [{"ts": 1, "v": 4}, {"ts": 2, "v": "four"}, {"ts": 3, "v": 2}, {"ts": 4}]
    windows, _, bad, _ = run_in_batches(spec, json_records(records), [10])
    assert [r.offset for r in bad] == [1]
    assert "must be a number" in bad[0].reason
    (row,) = windows_rows(result_spec(spec), sorted(windows.items()))
    assert (row["med"], row["top"]) == (2.0, [2, 4])
