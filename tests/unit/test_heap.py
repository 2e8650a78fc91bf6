"""`mars.heap`: glibc accepts the mapper's heap settings (this machine's and CI's libc is glibc),
and `mars reducer` gets Polars's allocator to return freed pages at once and PyArrow to allocate
from the C library's malloc, other commands not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mars.heap import JEMALLOC_OPTIONS_VARIABLE, POLARS_ALLOCATOR_OPTIONS, keep_freed_heap


def test_glibc_takes_the_settings() -> None:
    assert keep_freed_heap()


# What a parent that imported Polars passes on to its children (Polars's defaults).
POLARS_DEFAULTS = "dirty_decay_ms:500,muzzy_decay_ms:1000"


def decays(command: str, inherited: str | None) -> tuple[str, str]:
    """jemalloc's dirty and muzzy decays (ms) in a fresh `mars <command>` interpreter once it
    has imported Polars, as jemalloc's own statistics at exit (`stats_print`) show them."""
    script = f"import sys; sys.argv = ['mars', {command!r}]; import cli.main, polars"
    env = {k: v for k, v in os.environ.items() if k != JEMALLOC_OPTIONS_VARIABLE}
    options = [inherited] if inherited else []
    env[JEMALLOC_OPTIONS_VARIABLE] = ",".join([*options, "stats_print:true"])
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    found = {}
    for line in done.stderr.splitlines():
        name, _, value = line.strip().partition(": ")
        if name in ("opt.dirty_decay_ms", "opt.muzzy_decay_ms"):
            found[name] = value.split()[0]
    return found["opt.dirty_decay_ms"], found["opt.muzzy_decay_ms"]


@pytest.mark.parametrize("inherited", [None, POLARS_DEFAULTS])
@pytest.mark.parametrize(("command", "returned"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_returns_polars_pages_at_once(
    command: str, returned: bool, inherited: str | None
) -> None:
    assert POLARS_ALLOCATOR_OPTIONS == "dirty_decay_ms:0,muzzy_decay_ms:0"
    expected = ("0", "0") if returned else ("500", "1000")
    assert decays(command, inherited) == expected


@pytest.mark.parametrize(("command", "system"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_gives_pyarrow_the_system_pool(command: str, system: bool) -> None:
    script = (
        f"import sys; sys.argv = ['mars', {command!r}]; import cli.main, pyarrow; "
        "print(pyarrow.default_memory_pool().backend_name)"
    )
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    assert (done.stdout.split() == ["system"]) is system  # else PyArrow's own (mimalloc)
