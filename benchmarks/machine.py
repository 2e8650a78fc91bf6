"""The machine a benchmark ran on, for the report."""

from __future__ import annotations

import os
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def code_version(root: Path) -> dict[str, Any]:
    """The commit measured, and the files under the measured packages that differ from it."""

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.rstrip()  # not lstrip: a porcelain line starts with a space

    pinned = os.environ.get("MARS_BENCH_COMMIT")  # a snapshot (git archive) outside the repo
    if pinned:
        return {"commit": pinned, "uncommitted": []}
    dirty = git("status", "--porcelain", "--", "mars", "mapper", "reducer")
    return {
        "commit": git("rev-parse", "--short", "HEAD") or "unknown",
        "uncommitted": [line[3:] for line in dirty.splitlines()],
    }


def machine_info() -> dict[str, Any]:
    """nproc, RAM, CPU model, kernel, Python, load average and the time of the reading."""
    return {
        "nproc": os.cpu_count() or 0,
        "ram_gib": round(ram_gib(), 1),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "load_average": [round(v, 2) for v in load_average()],
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
