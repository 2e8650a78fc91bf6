"""Errors of the mapper: recoverable ones are retried by the loop, the rest end the process.

`SideTopicError` (late or dead-letter records not delivered) comes from the shared side-topic
producer and is recoverable: the loop retries the batch, nothing reaches Redis before it.
"""

from __future__ import annotations

from mars.side_topics import SideTopicError

__all__ = ["MapperError", "SideTopicError", "StopRequested"]


class MapperError(Exception):
    """Base class of mapper errors."""


class StopRequested(Exception):
    """The loop was asked to stop while waiting for Redis; nothing was committed."""
