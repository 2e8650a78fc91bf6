"""The end-to-end section with its peers: the rows, the Quix Streams settings, the notes of a
peer that could not run, and the start-up markers of a child process (Flink SQL's own parts:
tests/unit/bench/test_bench_flink.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.e2e_figures import SystemFigures
from benchmarks.exp_end_to_end import peer_run
from benchmarks.peers import PeerUnavailable, peer_python
from benchmarks.report import render_report
from benchmarks.subprocesses import read_markers
from benchmarks.workload import Dataset


def summary(value: float) -> dict[str, Any]:
    return {"runs": [value], "median": value, "min": value, "max": value}


def system(seconds: float, rate: float, cpu: float, startup: float) -> dict[str, Any]:
    return {
        "runs": [{"session_start_s": 6.5}],
        "seconds": summary(seconds),
        "records_per_s": summary(rate),
        "mb_per_s": summary(rate * 144 / 1e6),
        "records_per_s_with_startup": summary(rate * seconds / (seconds + startup)),
        "cpu_s": summary(cpu),
        "cpu_s_per_million": summary(cpu * 10),
        "startup_s": summary(startup),
    }


def e2e(*, quix: dict[str, Any] | None, notes: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {
        "mappers": 2,
        "reducers": 1,
        "mars": system(2.0, 50_000, 3.0, 1.5),
        "spark": system(10.0, 10_000, 20.0, 8.0),
        "ceiling": {
            "runs": [],
            "records_per_s": summary(500_000),
            "mb_per_s": summary(72.0),
            "records_per_cpu_s": summary(400_000),
        },
        "ceiling_native": {
            "runs": [],
            "records_per_s": summary(800_000),
            "mb_per_s": summary(115.2),
            "records_per_cpu_s": summary(1_000_000),
        },
        "memory": {
            "redis_peak_mb": summary(3),
            "mapper_peak_rss_mb": summary(170),
            "reducer_peak_rss_mb": summary(190),
            "spark_peak_rss_mb": summary(700),
        },
        "notes": notes,
    }
    if quix is not None:
        found["quix"] = quix
        found["memory"]["quix_peak_rss_mb"] = summary(150)
    return found


QUIX_SETTINGS = {
    "quixstreams": "3.28.1",
    "processing_guarantee": "exactly-once",
    "auto_offset_reset": "earliest",
    "commit_interval_s": 5.0,
    "window_s": 60,
    "grace_s": 600,
    "closing_strategy": "partition",
    "sentinel_copies": 64,
}


def test_the_quix_streams_row_settings_and_ratio() -> None:
    quix = {**system(20.0, 5_000, 25.0, 1.2), "processes": 1, "settings": QUIX_SETTINGS}
    text = render_report({"machine": {}, "e2e": e2e(quix=quix, notes=[])}, images={})
    assert "| Quix Streams 3.28.1 | 1.2 | 20.0 | 5,000 | 0.7 | 4,717 | 25.0 | 250.0 |" in text
    assert "| Mars | 1.5 | 2.0 | 50,000 | 7.2 | 28,571 | 3.0 | 30.0 |" in text
    assert (
        "| PySpark Structured Streaming | 8.0 | 10.0 | 10,000 | 1.4 | 5,556 | 20.0 | 200.0 |"
        in text
    )
    assert "| ceiling (consume + decode) | — | — | 500,000 | 72.0 | — | — | 2.50 |" in text
    assert (
        "| ceiling, native consumer (consume + decode) | — | — | 800,000 | 115.2 | — | — | 1.00 |"
        in text
    )
    assert 'processing_guarantee="exactly-once"' in text
    assert 'tumbling_window(60 s, grace 600 s).count().final(closing_strategy="partition")' in text
    assert "Mars vs PySpark: 5.00x; Mars vs Quix Streams: 10.00x" in text
    assert "| Quix Streams RSS, all its processes (for comparison) | 150 |" in text


def test_a_peer_not_measured_is_a_note_and_older_results_have_no_quix_row() -> None:
    note = "Quix Streams not measured: no peer virtualenv at /x (make bench builds it)"
    quix = {**system(float("nan"), float("nan"), float("nan"), float("nan")), "settings": {}}
    text = render_report({"machine": {}, "e2e": e2e(quix=quix, notes=[note])}, images={})
    assert "Quix Streams: not measured in this run" in text
    assert f"- {note}" in text
    older = render_report({"machine": {}, "e2e": e2e(quix=None, notes=[])}, images={})
    assert "| Quix Streams" not in older and "Mars vs Quix" not in older


# A preloaded topic of 1,000 records, as `peer_run` sees it.
SMALL_DATASET = Dataset(
    topic="S",
    partitions=4,
    records=1000,
    mean_bytes=144.0,
    start_s=0,
    span_s=600,
    produce_rate=1.0,
    sentinel_s=86_400,
)


def test_peer_run_notes_a_missing_peer_once_and_keeps_going(tmp_path: Path) -> None:
    data = SMALL_DATASET
    notes: list[str] = []

    def missing() -> dict[str, Any]:
        peer_python(tmp_path / "no-venv")
        raise AssertionError("unreachable")

    for _ in range(2):
        assert peer_run(missing, name="Quix Streams", data=data, notes=notes, log=print) is None
    assert len(notes) == 1 and notes[0].startswith("Quix Streams not measured: no peer")

    def incomplete() -> dict[str, Any]:
        return {"complete": False, "counted": 10, "exit_codes": [1]}

    assert peer_run(incomplete, name="Quix Streams", data=data, notes=notes, log=print)
    assert "did not complete (results of 10 of 1,000 records readable" in notes[-1]
    runs = [
        {"seconds": 2.0, "records_per_s": 500.0, "cpu_s": 4.0, "startup_s": 1.0, "complete": True}
    ]
    summaries = SystemFigures.of(runs, data)
    assert summaries.cpu_s_per_million.median == pytest.approx(4000.0)
    assert summaries.records_per_s.median == pytest.approx(500.0)  # start-up excluded
    assert summaries.records_per_s_with_startup.median == pytest.approx(1000 / 3.0)


def test_read_markers_stops_at_started_or_at_exit() -> None:
    script = "print('noise'); print('SETTINGS {\"a\": 1}'); print('STARTED 12.5'); print('LATER')"
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert read_markers(child, until="STARTED") == {"SETTINGS": '{"a": 1}', "STARTED": "12.5"}
    child.communicate(timeout=10)
    died = subprocess.Popen(
        [sys.executable, "-c", "print('SESSION 1')"], stdout=subprocess.PIPE, text=True
    )
    assert read_markers(died, until="STARTED") == {"SESSION": "1"}
    died.communicate(timeout=10)
    with pytest.raises(PeerUnavailable):
        peer_python(Path("/nonexistent/venv"))


def test_the_steady_state_section_checks_the_issue_targets() -> None:
    quix = {**system(200.0, 12_000, 180.0, 3.0), "processes": 1, "settings": QUIX_SETTINGS}
    steady = {
        **e2e(quix=quix, notes=[]),
        "dataset": {"records": 3_000_000, "mbytes": 432.0, "topic": "S_steady", "partitions": 4},
    }
    steady["flink"] = {**system(8.0, 60_000, 16.0, 3.5), "settings": {}}
    text = render_report({"machine": {}, "steady": steady}, images={})
    section = text.split("## 3b. Steady state")[1].split("\n## ")[0]
    assert "over 3,000,000 records (432 MB, topic `S_steady`, 4 partitions" in section
    assert "| Mars | 1.5 | 2.0 | 50,000 |" in section
    assert "- vs PySpark Structured Streaming: 5.00x, target 3x: met" in section
    assert "- vs Quix Streams: 4.17x, target 8x: **missed** by 3.83x" in section
    assert "- vs Flink SQL (ahead: more than 1x): 0.83x, target 1x: **missed** by 0.17x" in section
