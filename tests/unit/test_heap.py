"""`mars.heap`: glibc accepts the mapper's heap settings (this machine's and CI's libc is glibc)."""

from __future__ import annotations

from mars.heap import keep_freed_heap


def test_glibc_takes_the_settings() -> None:
    assert keep_freed_heap()
