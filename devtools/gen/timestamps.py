"""Event times of generated records: evenly spread, optionally with bounded disorder."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from devtools.gen.config import GeneratorConfig
from mars.tasks.spec import TimeFormat

Int64Array = npt.NDArray[np.int64]
BytesArray = npt.NDArray[np.bytes_]


def event_times_ms(
    config: GeneratorConfig, *, first: int, n: int, rng: np.random.Generator
) -> Int64Array:
    """Event times (epoch ms) of records `first .. first + n - 1` of the stream.

    Record i's in-order time is `start + floor(i * span / count)`; computed as
    `i*q + floor(i*r / count)` with `span = q*count + r` so the products stay inside int64.
    """
    span_ms = config.span_s * 1000
    q, r = divmod(span_ms, max(config.count, 1))
    index = np.arange(first, first + n, dtype=np.int64)
    times = config.start_ms + index * q + (index * r) // max(config.count, 1)
    if config.disorder_s > 0:
        jitter = rng.integers(0, config.disorder_s * 1000 + 1, size=n, dtype=np.int64)
        times = np.maximum(times - jitter, config.start_ms)
    if config.time_format is TimeFormat.EPOCH_S:
        times -= times % 1000  # whole seconds, so the ms view matches the encoded value
    return times


def encode_times(times_ms: Int64Array, *, time_format: TimeFormat, quote: bool) -> BytesArray:
    """The encoded timestamp values; ISO-8601 strings are JSON-quoted when `quote`."""
    if time_format is TimeFormat.EPOCH_S:
        return (times_ms // 1000).astype(np.bytes_)
    if time_format is TimeFormat.EPOCH_MS:
        return times_ms.astype(np.bytes_)
    text = np.datetime_as_string(times_ms.astype("datetime64[ms]"), unit="ms", timezone="UTC")
    iso = np.char.encode(text, "ascii")
    return np.char.add(np.char.add(b'"', iso), b'"') if quote else iso
