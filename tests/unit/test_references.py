"""Every reference in code and docs can be followed (docs/references.md).

- No pointer a newcomer cannot resolve: numbered seed papers ("seed" and three digits), issue
  numbers ("issue" and a number, "#" and a number), the founders' design notes by file name
  (they are not in the repository), or a paper without saying which. Cite the short name
  instead ("[SPSPS]'s BalanceLoad"), the doc section that states the rule, or the rule itself.
- Every bracketed short name cited in the docs (Markdown outside code) and in Python comments
  and docstrings is defined by a heading of docs/references.md: `###`, then the name in
  brackets, then the title.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
REFERENCES = PROJECT_ROOT / "docs" / "references.md"

# Never checked: the definitions themselves, and measured data the benchmarks write.
EXCLUDED = ("docs/references.md", "benchmarks/results/")

# Files still to be fixed, skipped until they are (an entry ending in "/" covers a folder).
PENDING: tuple[str, ...] = ()

TEXT_SUFFIXES = frozenset(
    {".py", ".pyi", ".md", ".toml", ".lua", ".rs", ".sh", ".yml", ".yaml", ".txt", ".js", ".html"}
    | {".css", ".json"}
)
TEXT_NAMES = frozenset({"Makefile", "Dockerfile"})
SKIPPED_PARTS = frozenset({"target", "__pycache__", "node_modules"})

UNTRACEABLE: dict[str, re.Pattern[str]] = {
    "a numbered seed paper": re.compile(r"\bseeds? \d{3}\b", re.IGNORECASE),
    "an issue number": re.compile(r"\bissues?[ _-]?#?\d+\b", re.IGNORECASE),
    "a '#' number": re.compile(r"(?<![\w&/#])#\d{1,4}\b"),
    "the founders' notes, not in the repository": re.compile(r"\bDESIGN\.md\b"),
    "a working-session number": re.compile(
        r"\b[Ss]ession \d+\b(?!\s*(?:s|ms|seconds?|minutes?|min|h|hours?)\b)"
    ),
    "an unnamed paper": re.compile(r"\bthe paper\b|\bpaper's\b", re.IGNORECASE),
}
# Checked in Python's comments and docstrings only: strings the program prints are behaviour
# (the demo's task is called `paper`), changed with the code, not here.
PROSE_ONLY = frozenset({"an unnamed paper"})

# A citation: a name in brackets with a capital letter in it, neither a Markdown link
# ([text](url) or [text][ref]) nor an index (x[i]).
CITATION = re.compile(r"(?<![\w\]!\[`\\$])\[([A-Za-z][A-Za-z0-9]*)\](?![(\[:])")
# Bracketed words that are not citations: the optional keyword of the grammar in
# mars/sql/parser.py ("WINDOWING [SESSION]").
NOT_CITATIONS = frozenset({"SESSION"})
DEFINITION = re.compile(r"^#{2,4} \[([A-Za-z][A-Za-z0-9]*)\]", re.MULTILINE)
# Code in Markdown: fenced blocks, indented lines, inline spans.
MARKDOWN_CODE = re.compile(r"^```[\s\S]*?^```|^    [^\n]*$|`[^`\n]*`", re.MULTILINE)


def skipped(relative: str, pending: tuple[str, ...] = PENDING) -> bool:
    return any(
        relative == entry or (entry.endswith("/") and relative.startswith(entry))
        for entry in (*EXCLUDED, *pending)
    )


def project_files(pending: tuple[str, ...] = PENDING) -> list[tuple[str, Path]]:
    """(path relative to the project, path) of every text file of the project to check."""
    found = []
    for directory, subdirectories, names in os.walk(PROJECT_ROOT):
        subdirectories[:] = [
            d
            for d in subdirectories
            if not (d.startswith(".") or d in SKIPPED_PARTS or d.endswith(".egg-info"))
        ]
        for name in names:
            path = Path(directory, name)
            if path.suffix not in TEXT_SUFFIXES and name not in TEXT_NAMES:
                continue
            relative = path.relative_to(PROJECT_ROOT).as_posix()
            if not skipped(relative, pending):
                found.append((relative, path))
    return sorted(found)


def python_prose(source: str) -> list[tuple[int, str]]:
    """(first line, text) of each comment and docstring of a Python module."""
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstring_lines = {
        node.body[0].lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, documented) and ast.get_docstring(node, clean=False) is not None
    }
    return [
        (token.start[0], token.string)
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
        or (token.type == tokenize.STRING and token.start[0] in docstring_lines)
    ]


def untraceable(relative: str, text: str) -> list[tuple[int, str, str]]:
    """(line, what, the text) of each reference in `text` that a newcomer cannot follow."""
    whole = [(1, text)]
    prose = python_prose(text) if relative.endswith(".py") else whole
    return sorted(
        (first + segment.count("\n", 0, match.start()), what, match.group(0))
        for what, pattern in UNTRACEABLE.items()
        for first, segment in (prose if what in PROSE_ONLY else whole)
        for match in pattern.finditer(segment)
    )


def citations(relative: str, text: str) -> set[str]:
    """The short names `text` cites: in Markdown outside code, in Python's comments and
    docstrings."""
    if relative.endswith(".md"):
        prose = MARKDOWN_CODE.sub("", text)
    elif relative.endswith(".py"):
        prose = "\n".join(segment for _, segment in python_prose(text))
    else:
        return set()
    return {
        name
        for name in CITATION.findall(prose)
        if name not in NOT_CITATIONS and any(c.isupper() for c in name)
    }


def defined_names() -> list[str]:
    return DEFINITION.findall(REFERENCES.read_text(encoding="utf-8"))


def test_references_md_defines_each_name_once_and_the_five_papers() -> None:
    names = defined_names()
    assert len(names) == len(set(names)), names
    assert {"Mars", "SPSPS", "BPMigration", "XORTrack", "FlinkOpt"} <= set(names)


def test_no_untraceable_references_in_code_or_docs() -> None:
    found = [
        f"{relative}:{line}: {what}: {snippet!r}"
        for relative, path in project_files()
        for line, what, snippet in untraceable(relative, path.read_text(encoding="utf-8"))
    ]
    assert not found, "cite docs/references.md, a doc section or the rule itself:\n" + "\n".join(
        found
    )


def test_every_cited_name_is_defined_in_references_md() -> None:
    defined = set(defined_names())
    undefined = [
        f"{relative}: [{name}]"
        for relative, path in project_files()
        for name in sorted(citations(relative, path.read_text(encoding="utf-8")) - defined)
    ]
    assert not undefined, "not defined in docs/references.md:\n" + "\n".join(undefined)


def test_the_checks_catch_what_they_are_for() -> None:
    # Built from pieces so that this file does not trip its own check.
    seed, issue, design, paper = (
        "seed " + "001",
        "issue " + "17",
        "DESIGN" + ".md",
        "the " + "paper",
    )
    text = f'x\n# moves units ({seed})\n"""See {issue}; {design}."""\n# As in {paper}.\n'
    text += f'print("{paper}")\n'
    assert [(line, what) for line, what, _ in untraceable("m.py", text)] == [
        (2, "a numbered seed paper"),
        (3, "an issue number"),
        (3, "the founders' notes, not in the repository"),
        (4, "an unnamed paper"),
    ]
    assert [what for _, what, _ in untraceable("d.md", f"As in {paper}.")] == ["an unnamed paper"]
    harmless = "WINDOWING SESSION 30 s; Kafka's murmur2 (seed 0x9747b28c); 1,000; #fff"
    assert untraceable("d.md", harmless) == []
    source = '"""[SPSPS]\'s BalanceLoad."""\n\nx = [Foo]  # as in [Nope]\ny = "[Bar]"\n'
    assert citations("m.py", source) == {"SPSPS", "Nope"}
    markdown = "[SPSPS] and [docs](x.md), `[Code]`, [kafka] and WINDOWING [SESSION]\n"
    markdown += "\n    SELECT [Indented]\n\n```\n[Fenced]\n```\nthen [Nope]\n"
    assert citations("d.md", markdown) == {"SPSPS", "Nope"}


def test_pending_files_are_skipped_until_the_list_is_emptied() -> None:
    pending = ("benchmarks/", "docs/benchmarks.md")
    assert skipped("benchmarks/runner.py", pending) and skipped("docs/benchmarks.md", pending)
    assert not skipped("benchmarks/runner.py") and not skipped("docs/benchmarks.md")
    assert not skipped("benchmarks.py", pending)
