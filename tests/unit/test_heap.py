"""`mars.heap`: glibc accepts the mapper's heap settings (this machine's and CI's libc is glibc),
and `mars reducer` gets Polars's allocator to return freed pages as
`reducer.freed_pages_decay_ms` says (at once by default), PyArrow to allocate from the C
library's malloc, and glibc to return large freed buffers, other commands not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mars.heap import JEMALLOC_OPTIONS_VARIABLE, keep_freed_heap, polars_allocator_options


def test_glibc_takes_the_settings() -> None:
    assert keep_freed_heap()


# What a parent that imported Polars passes on to its children (Polars's defaults).
POLARS_DEFAULTS = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def command_script(command: str, then: str) -> str:
    """A fresh interpreter's script: `mars <command>` up to where the reducer first reaches
    its services (it has imported its modules by then), then the statements `then`, and
    exit. A mapper imports Polars only once it runs: `then` is where it is imported."""
    if command == "reducer":
        return (
            "import sys, cli.reducer_command as reducer\n"
            f"def stop(settings): {then}; sys.exit(0)\n"
            "reducer.check_access = stop\n"
            "from cli.main import main\n"
            "main(['reducer'])\n"
        )
    return f"import sys; sys.argv = ['mars', {command!r}]; import cli.main; {then}\n"


def decays(
    command: str, inherited: str | None, env: dict[str, str] | None = None
) -> tuple[str, str]:
    """jemalloc's dirty and muzzy decays (ms) in a fresh `mars <command>` interpreter once it
    has imported Polars, as jemalloc's own statistics at exit (`stats_print`) show them."""
    environment = {k: v for k, v in os.environ.items() if k != JEMALLOC_OPTIONS_VARIABLE}
    options = [inherited] if inherited else []
    environment[JEMALLOC_OPTIONS_VARIABLE] = ",".join([*options, "stats_print:true"])
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", command_script(command, "import polars")],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    found = {}
    for line in done.stderr.splitlines():
        name, _, value = line.strip().partition(": ")
        if name in ("opt.dirty_decay_ms", "opt.muzzy_decay_ms"):
            found[name] = value.split()[0]
    return found["opt.dirty_decay_ms"], found["opt.muzzy_decay_ms"]


def test_the_options_name_the_decay() -> None:
    assert polars_allocator_options() == "dirty_decay_ms:0,muzzy_decay_ms:0"
    assert polars_allocator_options(100) == "dirty_decay_ms:100,muzzy_decay_ms:0"


@pytest.mark.parametrize("inherited", [None, POLARS_DEFAULTS])
@pytest.mark.parametrize(("command", "returned"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_returns_polars_pages_at_once(
    command: str, returned: bool, inherited: str | None
) -> None:
    expected = ("0", "0") if returned else ("500", "1000")
    assert decays(command, inherited) == expected


def test_the_reducer_keeps_freed_pages_as_long_as_its_setting_says() -> None:
    env = {"MARS_REDUCER__FREED_PAGES_DECAY_MS": "100"}
    assert decays("reducer", POLARS_DEFAULTS, env) == ("100", "0")


@pytest.mark.parametrize(("command", "system"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_gives_pyarrow_the_system_pool(command: str, system: bool) -> None:
    script = command_script(
        command, "import pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert (done.stdout.split() == ["system"]) is system  # else PyArrow's own (mimalloc)


# Frees 64 MiB of 4 MiB buffers that glibc's risen threshold put in its heap, below a buffer
# still held, and prints how many MiB of RSS that returned to the kernel.
FREED_HEAP_PROBE = """
import ctypes, os
from benchmarks.procstat import rss_mb
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
def touched(size):
    block = libc.malloc(size)
    libc.memset(block, 1, size)
    return block
libc.free(touched(8 << 20))  # its own mapping: glibc's thresholds rise past 8 MiB
blocks = [touched(4 << 20) for _ in range(16)]
held = touched(4 << 20)
before = rss_mb(os.getpid())
for block in blocks:
    libc.free(block)
print(before - rss_mb(os.getpid()))
"""


@pytest.mark.parametrize(("command", "returned"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_returns_large_freed_buffers(command: str, returned: bool) -> None:
    script = command_script(command, "exec(" + repr(FREED_HEAP_PROBE) + ", {})")
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    returned_mib = float(done.stdout.split()[-1])
    assert returned_mib > 56 if returned else returned_mib < 8
