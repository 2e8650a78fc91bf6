"""SQL LIKE patterns as anchored regular expressions (Rust `regex` syntax, used by Polars)."""

from __future__ import annotations

# Characters that are special in the Rust regex crate; everything else is literal as is.
_REGEX_META = set("\\.+*?()|[]{}^$#&-~")

DEFAULT_ESCAPE = "\\"  # as in Spark and MySQL: `LIKE 'a\_b'` matches 'a_b'


def like_to_regex(
    pattern: str, *, escape: str | None = DEFAULT_ESCAPE, case_insensitive: bool
) -> str:
    """`%` is any run of characters, `_` exactly one; `escape` makes the next one literal."""
    parts: list[str] = ["(?s" + ("i" if case_insensitive else "") + ")^"]
    chars = iter(pattern)
    for char in chars:
        if escape is not None and char == escape:
            literal = next(chars, None)
            if literal is None:
                raise ValueError(f"LIKE pattern {pattern!r} ends with the escape character")
            parts.append(_literal(literal))
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(_literal(char))
    parts.append("$")
    return "".join(parts)


def _literal(char: str) -> str:
    return "\\" + char if char in _REGEX_META else char
