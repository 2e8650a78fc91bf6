"""Ways a generated record is made malformed, for the dead-letter path.

Every kind turns a valid encoded record into one that a decoder must reject: it is not the
expected shape, or it has no usable event time. Each kind is derived from the valid record of the
same index, so a malformed record is still realistic bytes.
"""

from __future__ import annotations

from enum import StrEnum

from devtools.gen.config import Encoding

BAD_TIMESTAMPS = (b"yesterday", b"not-a-date", b"N/A", b"")


class MalformedKind(StrEnum):
    """What is wrong with a malformed record."""

    GARBAGE = "garbage"  # not JSON / not text at all (invalid UTF-8)
    TRUNCATED = "truncated"  # cut short: unterminated JSON, or too few CSV columns
    MISSING_TIMESTAMP = "missing_timestamp"  # JSON: no `timestamp` key; CSV: empty column
    BAD_TIMESTAMP = "bad_timestamp"  # timestamp is a string that is not a date
    WRONG_SHAPE = "wrong_shape"  # JSON: an array instead of an object; CSV: an extra column


MALFORMED_KINDS = tuple(MalformedKind)


def corrupt(valid: bytes, *, kind: MalformedKind, encoding: Encoding, draw: float) -> bytes:
    """The malformed variant `kind` of the `valid` record; `draw` in [0, 1) picks the details."""
    if kind is MalformedKind.GARBAGE:
        # 0xFF never occurs in UTF-8, so this is neither JSON nor CSV text.
        return b"\xff\xfe#corrupt-" + valid[: 8 + int(draw * 16)]
    if kind is MalformedKind.TRUNCATED:
        # JSON: any proper prefix of an object lacks its closing brace. CSV: cut before the
        # last separator, so at least one column is missing.
        limit = len(valid) - 1 if encoding is Encoding.JSON else valid.rindex(b",")
        return valid[: 1 + int(draw * (limit - 1))]
    first_sep = valid.index(b",")  # end of the timestamp field (the first field)
    if kind is MalformedKind.MISSING_TIMESTAMP:
        return b"{" + valid[first_sep + 1 :] if encoding is Encoding.JSON else valid[first_sep:]
    if kind is MalformedKind.BAD_TIMESTAMP:
        text = BAD_TIMESTAMPS[int(draw * len(BAD_TIMESTAMPS))]
        if encoding is Encoding.JSON:
            return b'{"timestamp":"' + text + b'"' + valid[first_sep:]
        return (text or b"-") + valid[first_sep:]
    if encoding is Encoding.JSON:
        return b"[" + valid + b"]"
    return valid + b",extra"
