"""Errors of the batch engine."""

from __future__ import annotations


class EngineError(Exception):
    """Base of the engine's errors."""


class DataSetFormatError(EngineError, ValueError):
    """Bytes that are not a data set this version of Mars can read (fatal for that data set)."""
