"""`mars api` as a process refuses the development token on an address other hosts can reach
(the check itself: tests/unit/api/test_exposure.py). No cluster needed: it exits first."""

from __future__ import annotations

import subprocess
import sys


def test_mars_api_says_why_and_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "api"],
        env={"MARS_API__HOST": "0.0.0.0", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "development token" in done.stderr and "MARS_API__TOKEN" in done.stderr
