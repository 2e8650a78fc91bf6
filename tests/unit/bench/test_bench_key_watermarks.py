"""The key-watermark experiment's pure parts: on a small device workload the three
configurations differ as the section says, the claims are computed from the figures, and the
section renders them."""

from __future__ import annotations

from benchmarks.codec import to_json
from benchmarks.exp_key_watermarks import HEADING, KeyWatermarkResult, claims, modes
from benchmarks.key_watermark_sim import devices, run_mode
from benchmarks.report import SECTIONS, render_report


def test_small_workload_key_watermarks_drop_nothing_and_the_section_shows_it() -> None:
    arrivals = devices(count=9, partitions=2, seconds=60, max_skew_s=40, seed=1)
    found = [run_mode(arrivals, partitions=2, mode=mode) for mode in modes(40)]
    short_grace, long_grace, key, grouped = found
    assert key.late == 0 and long_grace.late == 0 and short_grace.late > 0
    assert key.key_clocks_max == 9
    assert grouped.key_clocks_max <= 8 and grouped.reducer_late == key.reducer_late == 0
    assert short_grace.mapper_clock_bytes_max == short_grace.reducer_clock_bytes_max == 0
    assert 0 < grouped.reducer_clock_bytes_max < key.reducer_clock_bytes_max
    assert key.latency_p50_s < long_grace.latency_p50_s  # no waiting for the slowest device
    checked = claims(found)
    assert checked[f"fewer late records than {short_grace.mode}"]
    assert not checked[f"fewer late records than {long_grace.mode}"]  # both drop nothing
    result = KeyWatermarkResult(
        devices=9,
        partitions=2,
        seconds=60,
        max_skew_s=40,
        records=len(arrivals),
        modes=found,
        claims=checked,
    )
    text = render_report({"key_watermarks": to_json(result)}, images={})
    assert SECTIONS["key_watermarks"] == (HEADING,)
    assert "| key, GRACE 1 s | 0 (0 %) |" in text
    assert (
        "does not hold: key watermarks give fewer late records than partition, GRACE 45 s" in text
    )
