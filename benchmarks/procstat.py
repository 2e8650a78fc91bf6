"""What the kernel knows about a process: RSS (now and peak) and CPU seconds (Linux `/proc`)."""

from __future__ import annotations

import os
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float | None:
    """`VmHWM` (peak resident set) in MiB, None when the process is gone."""
    return _status_mb(pid, "VmHWM:")


def rss_mb(pid: int) -> float | None:
    """`VmRSS` (resident set now) in MiB, None when the process is gone."""
    return _status_mb(pid, "VmRSS:")


def _status_mb(pid: int, field: str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of the process (its reaped children included)."""
    fields = _stat_fields(Path(f"/proc/{pid}/stat"))
    if fields is None:
        return None
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICKS


def thread_cpu_seconds(pid: int, *, name_prefix: str = "") -> dict[int, float]:
    """User + system CPU seconds of each running thread of the process whose name (`comm`)
    starts with `name_prefix`: thread id -> seconds (threads that end meanwhile left out)."""
    found: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        fields = _stat_fields(task / "stat") if name.startswith(name_prefix) else None
        if fields is not None:
            found[int(task.name)] = (int(fields[11]) + int(fields[12])) / _TICKS
    return found


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a `stat` file after the command name (`state` first), None when gone."""
    try:
        stat = path.read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return stat[stat.rindex(")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it (Spark: the Python driver and its JVM)."""
    found = [pid]
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = (task / "children").read_text().split()
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                continue
            found.extend(int(c) for c in children if int(c) not in found)
    return found


def tree_cpu_seconds(pid: int) -> float:
    return sum(cpu_seconds(p) or 0.0 for p in descendants(pid))


def tree_peak_rss_mb(pid: int) -> float:
    return sum(peak_rss_mb(p) or 0.0 for p in descendants(pid))
