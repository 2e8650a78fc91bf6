"""Splits the Mars-specific clauses off a task's SQL, keeping character positions.

`WINDOWING <n> <unit>`, `WINDOWING SESSION <n> <unit>`, `WINDOWING CUMULATE <n> <unit>`,
`SLIDE <n> <unit>`, `STEP <n> <unit>`, `GRACE <n> <unit>`,
`EMIT CHANGES [EVERY <n> <unit>]` / `EMIT FINAL` and `WITH (key = value, ...)` are not SQL,
so they are found among sqlglot's tokens (at parenthesis depth 0, so a string or a nested
expression never matches) and replaced by spaces. The rest keeps every character at its
original offset, which lets sqlglot's positions point into the user's text unchanged. The EMIT
clause becomes the options `emit` and `emit_interval`, as if given in WITH (...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlglot.errors import TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from mars.sql.durations import UNIT_HELP, DurationError, duration_ms, is_unit
from mars.sql.errors import TaskError
from mars.sql.positions import token_error_position

CLAUSE_KEYWORDS = ("WINDOWING", "SLIDE", "GRACE", "STEP")


@dataclass(frozen=True, slots=True, kw_only=True)
class Duration:
    """A duration clause: its value and where its keyword starts. `session`: the clause was
    `WINDOWING SESSION <gap>`; `cumulate`: `WINDOWING CUMULATE <size>`."""

    ms: int
    position: int
    session: bool = False
    cumulate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class OptionValue:
    """One `key = value` of the WITH clause; `position` is where the value starts."""

    value: Any
    position: int


@dataclass(frozen=True, slots=True, kw_only=True)
class MarsClauses:
    """The Mars clauses of a task and its SQL with them blanked out (same length)."""

    sql: str
    durations: dict[str, Duration] = field(default_factory=dict)  # keyword -> duration
    options: dict[str, OptionValue] = field(default_factory=dict)


def tokenize(sql: str) -> list[Token]:
    try:
        return Tokenizer().tokenize(sql)
    except TokenError as err:
        raise TaskError(
            "cannot read the SQL here (unterminated string or quoted name?)",
            position=token_error_position(err, sql),
        ) from None


def split_mars_clauses(sql: str) -> MarsClauses:
    """Find the Mars clauses in `sql`; raise TaskError for a malformed or repeated one."""
    tokens = tokenize(sql)
    found = _Found()
    depth = 0
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        elif depth == 0:
            after = _read_clause(tokens, i, sql, found)
            if after is not None:
                found.spans.append((token.start, tokens[after - 1].end))
                i = after
                continue
        i += 1
    return MarsClauses(
        sql=_blank(sql, found.spans), durations=found.durations, options=found.options
    )


@dataclass(slots=True)
class _Found:
    durations: dict[str, Duration] = field(default_factory=dict)
    options: dict[str, OptionValue] = field(default_factory=dict)
    spans: list[tuple[int, int]] = field(default_factory=list)
    with_seen: bool = False


def _read_clause(tokens: list[Token], i: int, sql: str, found: _Found) -> int | None:
    """If a Mars clause starts at token `i`, read it into `found` and return the index after
    it; else None."""
    token = tokens[i]
    if _is_clause_keyword(tokens, i):
        keyword = token.text.upper()
        if keyword in found.durations:
            raise TaskError(f"{keyword} is given twice", position=token.start)
        session = _is_session(tokens, i)
        cumulate = _is_cumulate(tokens, i)
        ms, after = _read_duration(tokens, i + 1 if session or cumulate else i, sql)
        found.durations[keyword] = Duration(
            ms=ms, position=token.start, session=session, cumulate=cumulate
        )
        return after
    if _is_emit_clause(tokens, i):
        if "emit" in found.options:
            raise TaskError("EMIT is given twice", position=token.start)
        return _read_emit(tokens, i, sql, into=found.options)
    if _is_options_clause(tokens, i):
        if found.with_seen:
            raise TaskError("the WITH (...) options clause is given twice", position=token.start)
        found.with_seen = True
        before = len(found.options)
        after = _read_options(tokens, i + 2, sql, into=found.options)
        if len(found.options) == before:
            raise TaskError("the WITH (...) options clause is empty", position=token.start)
        return after
    return None


def _is_clause_keyword(tokens: list[Token], i: int) -> bool:
    token = tokens[i]
    if token.token_type != TokenType.VAR or token.text.upper() not in CLAUSE_KEYWORDS:
        return False
    # `WINDOWING 60 s` (or a clause missing its duration at the end); anything else, such as
    # `SELECT grace FROM S`, is an ordinary identifier.
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    return (
        following is None
        or following.token_type in (TokenType.NUMBER, TokenType.DASH, TokenType.SEMICOLON)
        or _is_session(tokens, i)
        or _is_cumulate(tokens, i)
    )


def _is_session(tokens: list[Token], i: int) -> bool:
    """`WINDOWING SESSION ...` at token `i`."""
    return (
        tokens[i].text.upper() == "WINDOWING"
        and i + 1 < len(tokens)
        and tokens[i + 1].text.upper() == "SESSION"
    )


def _is_cumulate(tokens: list[Token], i: int) -> bool:
    """`WINDOWING CUMULATE ...` at token `i`."""
    return (
        tokens[i].text.upper() == "WINDOWING"
        and i + 1 < len(tokens)
        and tokens[i + 1].text.upper() == "CUMULATE"
    )


def _is_emit_clause(tokens: list[Token], i: int) -> bool:
    """`EMIT` followed by a word or nothing (`SELECT emit FROM S` stays an identifier)."""
    following = tokens[i + 1] if i + 1 < len(tokens) else None
    return (
        tokens[i].token_type == TokenType.VAR
        and tokens[i].text.upper() == "EMIT"
        and (
            following is None
            or (
                following.token_type == TokenType.VAR
                and following.text.upper() not in (*CLAUSE_KEYWORDS, "EMIT")
            )
        )
    )


def _read_emit(tokens: list[Token], i: int, sql: str, *, into: dict[str, OptionValue]) -> int:
    """Read `EMIT FINAL` or `EMIT CHANGES [EVERY <n> <unit>]` into the emit options; return the
    next index."""
    if i + 1 >= len(tokens):
        raise TaskError(
            "EMIT needs CHANGES [EVERY <n> <unit>] or FINAL", position=len(sql.rstrip())
        )
    mode = tokens[i + 1]
    if mode.text.upper() not in ("CHANGES", "FINAL"):
        raise TaskError(
            f"EMIT needs CHANGES [EVERY <n> <unit>] or FINAL, found '{mode.text}'",
            position=mode.start,
        )
    into["emit"] = OptionValue(value=mode.text.lower(), position=mode.start)
    every = tokens[i + 2] if i + 2 < len(tokens) else None
    if every is None or every.text.upper() != "EVERY":
        return i + 2
    if mode.text.upper() == "FINAL":
        raise TaskError("EMIT FINAL takes no EVERY: only EMIT CHANGES does", position=every.start)
    _ms, after = _read_duration(tokens, i + 2, sql)
    start = tokens[i + 3].start
    into["emit_interval"] = OptionValue(
        value=sql[start : tokens[after - 1].end + 1], position=start
    )
    return after


def _is_options_clause(tokens: list[Token], i: int) -> bool:
    # A leading WITH is a CTE (rejected later by the parser); the options clause comes after.
    return (
        i > 0
        and tokens[i].token_type == TokenType.WITH
        and i + 1 < len(tokens)
        and tokens[i + 1].token_type == TokenType.L_PAREN
    )


def _read_duration(tokens: list[Token], i: int, sql: str) -> tuple[int, int]:
    """Read `KEYWORD [-]<number> <unit>` starting at the keyword; return (ms, next index).
    The keyword may be `SESSION` of `WINDOWING SESSION` (or `CUMULATE`), which names it in
    messages."""
    keyword = tokens[i]
    name = keyword.text.upper()
    if name in ("SESSION", "CUMULATE"):
        name = f"WINDOWING {name}"
    j = i + 1
    sign = ""
    if j < len(tokens) and tokens[j].token_type == TokenType.DASH:
        sign = "-"
        j += 1
    if j >= len(tokens) or tokens[j].token_type != TokenType.NUMBER:
        where = tokens[j].start if j < len(tokens) else len(sql.rstrip())
        what = "an inactivity gap" if name == "WINDOWING SESSION" else "a duration"
        raise TaskError(f"{name} needs {what} such as '60 s'", position=where)
    number = tokens[j]
    if j + 1 >= len(tokens) or not tokens[j + 1].text.isalpha():
        raise TaskError(
            f"missing time unit after {name} {sign}{number.text}; {UNIT_HELP}",
            position=number.end + 1,
        )
    unit = tokens[j + 1]
    try:
        ms = duration_ms(sign + number.text, unit.text)
    except DurationError as err:
        at = unit.start if not is_unit(unit.text) else number.start
        raise TaskError(str(err), position=at) from None
    return ms, j + 2


def _read_options(tokens: list[Token], i: int, sql: str, *, into: dict[str, OptionValue]) -> int:
    """Read `key = value, ...)` starting after `WITH (`; return the index after `)`."""
    while True:
        if i >= len(tokens):
            raise TaskError("the WITH (...) options clause is not closed", position=len(sql))
        key = tokens[i]
        if key.token_type == TokenType.R_PAREN and not into:
            return i + 1
        if not key.text.replace("_", "a").isalnum() or key.token_type == TokenType.STRING:
            raise TaskError(f"expected an option name, found '{key.text}'", position=key.start)
        name = key.text.lower()
        if name in into:
            raise TaskError(f"option '{name}' is given twice", position=key.start)
        if i + 1 >= len(tokens) or tokens[i + 1].token_type != TokenType.EQ:
            raise TaskError(f"expected '=' after option '{name}'", position=key.end + 1)
        value, i = _read_option_value(tokens, i + 2, sql, name)
        into[name] = value
        if i < len(tokens) and tokens[i].token_type == TokenType.COMMA:
            i += 1
        elif i < len(tokens) and tokens[i].token_type == TokenType.R_PAREN:
            return i + 1
        elif i >= len(tokens):
            raise TaskError("the WITH (...) options clause is not closed", position=len(sql))
        else:
            where = tokens[i].start if i < len(tokens) else len(sql)
            raise TaskError("expected ',' or ')' in the WITH (...) options clause", position=where)


def _read_option_value(tokens: list[Token], i: int, sql: str, name: str) -> tuple[OptionValue, int]:
    if i >= len(tokens):
        raise TaskError(f"option '{name}' needs a value", position=len(sql))
    token = tokens[i]
    if token.token_type == TokenType.STRING:
        return OptionValue(value=token.text, position=token.start), i + 1
    if token.token_type == TokenType.NUMBER:
        # `30 s` is kept as text for the duration parser; a bare number stays a number.
        if i + 1 < len(tokens) and tokens[i + 1].text.isalpha():
            text = f"{token.text} {tokens[i + 1].text}"
            return OptionValue(value=text, position=token.start), i + 2
        number: Any = float(token.text) if "." in token.text else int(token.text)
        return OptionValue(value=number, position=token.start), i + 1
    if token.token_type == TokenType.DASH and i + 1 < len(tokens):
        value, j = _read_option_value(tokens, i + 1, sql, name)
        negated = -value.value if isinstance(value.value, int | float) else f"-{value.value}"
        return OptionValue(value=negated, position=token.start), j
    if token.text.replace("_", "a").isalnum():
        return OptionValue(value=token.text, position=token.start), i + 1
    raise TaskError(f"option '{name}' needs a value", position=token.start)


def _blank(sql: str, spans: list[tuple[int, int]]) -> str:
    chars = list(sql)
    for start, end in spans:
        for k in range(start, end + 1):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)
