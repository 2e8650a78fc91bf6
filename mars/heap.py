"""Freed memory kept for the next batch (mappers) or handed back to the kernel (reducers).

A mapper allocates and frees the same large buffers every batch: librdkafka's fetch and LZ4
buffers, the payloads the native consumer gathers, the joined CSV text, Polars's columns. With
glibc's defaults a buffer over 128 KiB is its own mmap, unmapped again when freed, and a
heap's free top is trimmed past 128 KiB; so every batch faults the same pages in afresh, and
the kernel zeroes each one. A perf profile of a mapper showed a quarter of its CPU in page
faults. `keep_freed_heap` raises glibc's limits with `mallopt` so a process reuses its own
freed memory:

- allocations up to 32 MiB (half of a thread heap's 64 MiB) come from the heap;
- a heap's free top is returned to the kernel only above 128 MiB, and grows 16 MiB at a time.

Memory stays bounded: what a process keeps is what its own largest batch needed, plus at most
the trim threshold per heap. Where the C library is not glibc this does nothing.

A reducer wants the opposite from Polars's own allocator (jemalloc, `_RJEM_MALLOC_CONF`): its
columnar open windows are merged by `concat` + `group_by`, whose buffers change size as the
windows grow, and Polars sets jemalloc to keep freed pages for 0.5-1.5 s, so a reducer that
merges all the time kept the garbage of its last compactions: its RSS was about three times
what its frames hold (`python -m benchmarks.group_scale_state --groups 300000 --state
columnar`, 2026-11-26: 420-443 bytes per open group against 27 in the frame; 153-207 with
freed pages returned at once). `return_polars_pages` asks for that, and must run before Polars
is imported: jemalloc reads its options once. The price is CPU where compactions are large:
each faults its pages in afresh, and the kernel zeroes them. `reducer.freed_pages_decay_ms`
trades memory back for it: jemalloc then keeps freed pages that long, for the next compaction
to reuse (docs/reducer.md, "Memory of the process").

A reducer's glibc malloc wants the opposite too. It holds the native group tables, the decoded
data sets and PyArrow's buffers, and glibc's thresholds rise as large buffers are freed, after
which the freed tables of a closed window stayed in its heaps: the reducers of experiment 16
peaked at 914 MiB at 2,851,404 groups, 239 bytes per open group, against 672 and 150 with
`return_freed_heap`, at the same rate (2026-12-07): a buffer from 256 KiB up is then its own
mapping, faulted in afresh. From 4 MiB up, four owners closing windows of 350,000 groups
each in one scratch process peaked at 331 MiB against 217 with 256 KiB.

PyArrow's default pool (mimalloc in pyarrow 26) keeps freed memory too, and a spilling
reducer writes and reads its spill files through PyArrow: its peak at 289,329 groups was
519-549 MiB against 404-439 with the C library's malloc, no slower (docs/reducer.md, "State
beyond memory"). `return_arrow_pages` makes that PyArrow's pool, before PyArrow is imported.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys

log = logging.getLogger(__name__)

# mallopt parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD = -1
_M_TOP_PAD = -2
_M_MMAP_THRESHOLD = -3

MMAP_THRESHOLD_BYTES = 32 * 1024**2
TRIM_THRESHOLD_BYTES = 128 * 1024**2
TOP_PAD_BYTES = 16 * 1024**2
RETURNED_MMAP_THRESHOLD_BYTES = 256 * 1024
RETURNED_TRIM_THRESHOLD_BYTES = 1024**2
JEMALLOC_OPTIONS_VARIABLE = "_RJEM_MALLOC_CONF"  # read by Polars's jemalloc when Polars loads
ARROW_POOL_VARIABLE = "ARROW_DEFAULT_MEMORY_POOL"  # read by PyArrow when it loads


def keep_freed_heap() -> bool:
    """Apply the limits above to this process's glibc malloc; False where there is none."""
    return _set_malloc(
        {
            _M_MMAP_THRESHOLD: MMAP_THRESHOLD_BYTES,
            _M_TRIM_THRESHOLD: TRIM_THRESHOLD_BYTES,
            _M_TOP_PAD: TOP_PAD_BYTES,
        }
    )


def return_freed_heap() -> bool:
    """The reducer's glibc malloc: a buffer from `RETURNED_MMAP_THRESHOLD_BYTES` up is its own
    mapping, unmapped when freed, and a heap's free top is trimmed past
    `RETURNED_TRIM_THRESHOLD_BYTES`; False where there is none. Set explicitly, they no longer
    move: glibc's own rise as large buffers are freed (up to 32 MiB, and twice that to trim),
    after which its heaps kept the freed group tables, decoded data sets and checkpoints of a
    reducer's owner threads (RSS measured in docs/reducer.md, "Memory of the process")."""
    return _set_malloc(
        {
            _M_MMAP_THRESHOLD: RETURNED_MMAP_THRESHOLD_BYTES,
            _M_TRIM_THRESHOLD: RETURNED_TRIM_THRESHOLD_BYTES,
        }
    )


def _set_malloc(settings: dict[int, int]) -> bool:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    applied = all(mallopt(parameter, value) == 1 for parameter, value in settings.items())
    if not applied:
        log.warning("mallopt refused a heap setting: %s", settings)
    return applied


def return_arrow_pages() -> bool:
    """Have PyArrow allocate from the C library's malloc, which returns freed pages, instead
    of its default pool, which keeps them; False when PyArrow is imported already (it chose its
    pool then) or `ARROW_DEFAULT_MEMORY_POOL` names a pool (that choice stands). The variable,
    not `pyarrow.set_memory_pool`, which leaves Arrow's C++ defaults on the old pool: with it a
    spilling reducer's peak at 289,329 groups was 488-495 MiB (two runs)."""
    if "pyarrow" in sys.modules:
        log.warning("PyArrow is imported already: its pool keeps its freed pages")
        return False
    if os.environ.get(ARROW_POOL_VARIABLE):
        return False
    os.environ[ARROW_POOL_VARIABLE] = "system"
    return True


def polars_allocator_options(decay_ms: int = 0) -> str:
    """jemalloc's options for freed pages returned to the kernel `decay_ms` after they are
    freed (0: at once), with no lazy (MADV_FREE) stage, whose pages would still count in the
    RSS."""
    return f"dirty_decay_ms:{decay_ms},muzzy_decay_ms:0"


def return_polars_pages(decay_ms: int = 0) -> bool:
    """Have Polars's jemalloc return freed pages `decay_ms` after they are freed (0: at once);
    False when Polars is imported already, too late for it. The options go after any
    `_RJEM_MALLOC_CONF` inherited (the last value of an option wins): a parent that imported
    Polars passes Polars's defaults on to its children, and until 2026-11-28 they won, so the
    reducers that the tests, the benchmarks and `mars local` start kept their freed pages."""
    if "polars" in sys.modules:
        log.warning("Polars is imported already: its allocator keeps its freed pages")
        return False
    inherited = os.environ.get(JEMALLOC_OPTIONS_VARIABLE)
    options = [inherited] if inherited else []
    os.environ[JEMALLOC_OPTIONS_VARIABLE] = ",".join([*options, polars_allocator_options(decay_ms)])
    return True
