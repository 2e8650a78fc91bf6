"""`mars.heap`: glibc accepts the mapper's heap settings (this machine's and CI's libc is glibc),
and `mars reducer` gets Polars's allocator to return freed pages at once, other commands not."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mars.heap import POLARS_ALLOCATOR_OPTIONS, keep_freed_heap


def test_glibc_takes_the_settings() -> None:
    assert keep_freed_heap()


def allocator_options(command: str) -> str:
    """`_RJEM_MALLOC_CONF` once `mars <command>` has imported Polars (a fresh interpreter)."""
    script = (
        f"import sys; sys.argv = ['mars', {command!r}]; import cli.main, os, polars; "
        "print(os.environ['_RJEM_MALLOC_CONF'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"}
    found = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return found.stdout.strip()


@pytest.mark.parametrize(("command", "returned"), [("reducer", True), ("mapper", False)])
def test_only_the_reducer_returns_polars_pages_at_once(command: str, returned: bool) -> None:
    # Polars puts its own defaults first; the last value of an option wins
    assert allocator_options(command).endswith(POLARS_ALLOCATOR_OPTIONS) is returned
