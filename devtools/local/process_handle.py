"""Start, watch and stop the server processes the launcher owns.

Processes are tracked by PID *and* start command line, so `down` never signals a process that
merely reused a PID, and nothing is ever killed by name.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class ServiceError(RuntimeError):
    """A service could not start or answer; the message names it and shows its log tail."""


# Servers listen on ports picked here and bound seconds later (a JVM starting). They come from
# below the kernel's ephemeral range (32768-60999), so no client connection takes one in
# between; clusters started side by side (the test runner's workers) each get a slice of their
# own through FREE_PORTS_ENV ("low-high"), and one process never hands a port out twice.
FREE_PORTS_ENV = "MARS_FREE_PORTS"
FREE_PORTS = (20000, 32767)
_handed_out: set[int] = set()


def free_port() -> int:
    """A loopback port no server listens on, from FREE_PORTS or FREE_PORTS_ENV's range."""
    low, high = _free_port_range()
    for _ in range(1000):
        port = random.randint(low, high)
        # no SO_REUSEADDR: a port in TIME_WAIT is not offered either
        if port not in _handed_out and _can_bind(port, reuse_address=False):
            _handed_out.add(port)
            return port
    raise ServiceError(f"no free port in {low}-{high}")


def _free_port_range() -> tuple[int, int]:
    """FREE_PORTS_ENV's range ("low-high") when set, else FREE_PORTS."""
    if not (bounds := os.environ.get(FREE_PORTS_ENV)):
        return FREE_PORTS
    low, high = (int(bound) for bound in bounds.split("-"))
    return low, high


def _can_bind(port: int, *, reuse_address: bool, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        if reuse_address:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def port_is_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


def wait_port_free(port: int, *, timeout_s: float, host: str = "127.0.0.1") -> None:
    """Wait until a server could bind `port` (with SO_REUSEADDR, as servers do, so TIME_WAIT
    does not count): a process killed a moment ago may still hold its listening socket."""
    deadline = time.monotonic() + timeout_s
    while not _can_bind(port, reuse_address=True, host=host):
        if time.monotonic() >= deadline:
            raise ServiceError(f"port {port} is still taken after {timeout_s:.0f}s")
        time.sleep(0.1)


def log_tail(path: Path, lines: int = 25) -> str:
    if not path.exists():
        return "(no log written)"
    content = path.read_text(errors="replace").splitlines()
    return "\n".join(content[-lines:]) or "(log is empty)"


def start_time_of(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), or None if gone or a zombie.

    PID plus start time identifies a process for good: a reused PID has another start time,
    and unlike the command line it survives servers that rewrite their title (redis-server).
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    state, start_ticks = fields[0], fields[19]
    return None if state in ("Z", "X") else int(start_ticks)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessHandle:
    """A started process: enough to find it again from another `mars` invocation."""

    name: str
    pid: int
    started: int  # start time in clock ticks: see start_time_of
    argv: tuple[str, ...]
    log: Path

    def is_running(self) -> bool:
        return start_time_of(self.pid) == self.started

    def port(self, flag: str) -> int:
        """The port its command line gives after `flag` (e.g. `--port`)."""
        return int(self.argv[self.argv.index(flag) + 1])

    def stop(self, *, timeout_s: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after `timeout_s`; only if it is still our process."""
        if not self.is_running():
            return
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            _reap(self.pid)
            if not self.is_running():
                return
            time.sleep(0.1)
        if self.is_running():
            os.kill(self.pid, signal.SIGKILL)
            for _ in range(50):
                _reap(self.pid)
                if not self.is_running():
                    return
                time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL at once (fault-injection tests)."""
        if self.is_running():
            os.kill(self.pid, signal.SIGKILL)
            for _ in range(50):
                _reap(self.pid)
                if not self.is_running():
                    return
                time.sleep(0.05)


def _reap(pid: int) -> None:
    """Collect our own exited child so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def spawn(
    name: str,
    argv: Sequence[str],
    *,
    log: Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> ProcessHandle:
    """Start `argv` detached in its own session, output to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(
            list(argv),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
    started = start_time_of(process.pid)
    if started is None:
        raise ServiceError(f"{name} exited at once; log {log}:\n{log_tail(log)}")
    return ProcessHandle(name=name, pid=process.pid, started=started, argv=tuple(argv), log=log)


def wait_until(
    name: str,
    check: Callable[[], bool],
    *,
    handle: ProcessHandle,
    timeout_s: float,
    what: str,
) -> None:
    """Poll `check` until it is true; fail fast with the log tail if the process died."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if not handle.is_running():
            _reap(handle.pid)
            raise ServiceError(
                f"{name} exited while starting ({what}); log {handle.log}:\n{log_tail(handle.log)}"
            )
        try:
            if check():
                return
        except Exception as error:  # readiness probes fail in many ways until ready
            last_error = error
        time.sleep(0.2)
    handle.stop()
    reason = f" (last probe error: {last_error})" if last_error else ""
    raise ServiceError(
        f"{name} did not become ready within {timeout_s:.0f}s ({what}){reason}; "
        f"log {handle.log}:\n{log_tail(handle.log)}"
    )
