"""`gc_paused`: no cyclic garbage collection while a columnar owner decodes and merges, or
writes a closed window's records.

A data set decodes to a few Python objects per group (key tuple, key values, states list),
freed by reference counting once its groups are in columns; a closed window makes a record
per group (a tuple of its key and value bytes), freed once produced. Allocated by the hundred
thousand, they trigger generation-0 collections that promote them, and then full
collections that walk every object of the process: at 300,000 groups per window that was
most of the merge's time (docs/reducer.md, "Columnar open windows"), and half of making the
records. They form no cycles, so pausing the collector while they live loses nothing.
Process-wide and re-entrant across the owners' threads: the collector runs again when the
last pause ends.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_pauses = 0  # pauses under way
_resume = True  # whether the collector was enabled when the first of them began


@contextmanager
def gc_paused() -> Iterator[None]:
    global _pauses, _resume
    with _lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()
