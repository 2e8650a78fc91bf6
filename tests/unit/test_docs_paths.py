"""The docs name only files that exist: a file moved or renamed without its docs fails here.

A path with a folder must exist from the project root, from the doc's folder or as the tail of
a tracked file's path (`coordination/leader.py` in a table of `reducer/`); a bare file name
must be the name of some tracked file. Files that exist only at run time are listed below.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RUN_TIME_FILES = {"cluster.json", "zoo.cfg"}  # written by the local cluster, not in the tree
FILE_NAME = re.compile(
    r"(?<![\w./-])((?:[\w.-]+/)*[\w-][\w.-]*\.(?:py|md|toml|yml|yaml|sh|lua|rs|js|html|cfg))\b"
)


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True
    )
    return listed.stdout.split()


def missing_paths(doc: str, text: str, files: list[str]) -> list[str]:
    names = {Path(f).name for f in files}
    missing = []
    for match in FILE_NAME.finditer(text):
        path = match.group(1)
        if path in RUN_TIME_FILES:
            continue
        if "/" in path:
            found = (PROJECT_ROOT / path).exists() or any(
                f == path
                or f.endswith("/" + path)
                or f == os.path.normpath(Path(doc).parent / path)
                for f in files
            )
        else:
            found = path in names
        if not found:
            missing.append(f"{doc}:{text.count(chr(10), 0, match.start()) + 1}: {path}")
    return missing


def test_every_file_the_docs_name_exists() -> None:
    files = tracked_files()
    docs = [f for f in files if f == "README.md" or (f.startswith("docs/") and f.endswith(".md"))]
    assert len(docs) > 5
    found = []
    for doc in docs:
        found += missing_paths(doc, (PROJECT_ROOT / doc).read_text(encoding="utf-8"), files)
    assert found == []


def test_a_renamed_file_is_seen() -> None:
    files = ["reducer/unit_owner.py", "docs/reducer.md"]
    text = "the owner (`reducer/bucket_owner.py`), see `unit_owner.py` and [x](reducer.md)"
    assert missing_paths("docs/reducer.md", text, files) == [
        "docs/reducer.md:1: reducer/bucket_owner.py"
    ]
