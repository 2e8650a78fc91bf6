"""Errors of the mapper: recoverable ones are retried by the loop, the rest end the process.

`SideTopicError` (late or dead-letter records not delivered) comes from the shared side-topic
producer and is recoverable: the loop retries the batch, nothing reaches Redis before it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from mars.side_topics import SideTopicError

__all__ = ["MapperError", "SideTopicError", "StopRequested", "retry_delays"]

RETRY_BACKOFF_S = (0.1, 0.2, 0.5, 1.0, 2.0)  # waiting for Redis; the last repeats


class MapperError(Exception):
    """Base class of mapper errors."""


class StopRequested(Exception):
    """The loop was asked to stop while waiting for Redis; nothing was committed."""


def retry_delays() -> Iterator[float]:
    """The waits between attempts at something the mapper cannot go on without (Redis): they
    grow to the last of `RETRY_BACKOFF_S` and repeat it for as long as the failure lasts."""
    yield from RETRY_BACKOFF_S
    yield from itertools.repeat(RETRY_BACKOFF_S[-1])
