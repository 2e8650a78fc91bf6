"""Why a record or a writer schema cannot be read (each message is a dead-letter reason)."""

from __future__ import annotations


class CorruptRecord(ValueError):
    """The payload does not decode with its writer schema; the message is the reason."""


class SchemaProblem(ValueError):
    """A writer schema this task cannot read (wrong type, unparsable, bad message index)."""
