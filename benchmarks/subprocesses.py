"""Child Python processes of the benchmarks (`python -m benchmarks.<module>`)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def spawn_module(
    module: str,
    args: Sequence[str],
    *,
    log: Path | None = None,
    python: Path | str = sys.executable,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[str]:
    """Start `python -m <module> <args>` in its own process group, stdout piped (text);
    `python`: another interpreter (a peer's virtualenv); `env`: variables on top of ours."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(PROJECT_ROOT)}
    stderr = log.open("a") if log is not None else subprocess.DEVNULL
    return subprocess.Popen(
        [str(python), "-m", module, *args],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )


def stop_group(process: subprocess.Popen[str], *, timeout_s: float = 20.0) -> None:
    """SIGTERM the child's own process group (it and what it started, e.g. Spark's JVM),
    SIGKILL after `timeout_s`."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)


def read_markers(process: subprocess.Popen[str], *, until: str) -> dict[str, str]:
    """The `NAME value` lines a child prints on stdout (its start-up markers, e.g. `SESSION
    <t>`, `STARTED <t>`), read until the line named `until`, or until the child closes its
    stdout (it exited: `until` is then missing from the result)."""
    assert process.stdout is not None
    found: dict[str, str] = {}
    for line in process.stdout:
        name, _, value = line.strip().partition(" ")
        if name.isupper() and name not in found:
            found[name] = value
        if name == until:
            break
    return found
