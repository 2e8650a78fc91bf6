"""Errors of the mapper: recoverable ones are retried by the loop, the rest end the process."""

from __future__ import annotations


class MapperError(Exception):
    """Base class of mapper errors."""


class SideTopicError(MapperError):
    """Late or dead-letter records could not be delivered; the batch is retried (recoverable),
    and nothing is written to Redis before they are."""
