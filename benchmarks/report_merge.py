"""A run of some experiments merged into the report an earlier run wrote (pure: text in, text
out).

`mars bench --experiments pull` must not turn every other section of docs/benchmarks.md into
"Not run.": only the sections the run measured are replaced (or added where the fresh report
puts them), each opened by a line naming the run it comes from; the rest of the report, its
header's run and any hand-written section included, stays as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

Section = tuple[str, list[str]]  # heading ("" for what precedes the first), its lines


def split_sections(text: str) -> list[Section]:
    """The report's `## ` sections in order, each with its lines (heading line included),
    after the lines before the first heading."""
    sections: list[Section] = [("", [])]
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line, []))
        sections[-1][1].append(line)
    return sections


def merge_report(earlier: str, fresh: str, *, headings: Sequence[str], provenance: str) -> str:
    """`earlier` with its sections `headings` replaced by `fresh`'s, each opened by
    `provenance`; a section `earlier` lacks goes before the first section that follows it in
    `fresh` and that `earlier` has (else at the end)."""
    merged = split_sections(earlier)
    fresh_sections = split_sections(fresh)
    fresh_lines = dict(fresh_sections)
    order = [heading for heading, _ in fresh_sections]
    for heading in headings:
        lines = fresh_lines[heading]
        section = (heading, [heading, "", provenance, *lines[1:]])
        present = [name for name, _ in merged]
        if heading in present:
            merged[present.index(heading)] = section
            continue
        following = [name for name in order[order.index(heading) + 1 :] if name in present]
        at = present.index(following[0]) if following else len(merged)
        merged.insert(at, section)
    return "\n".join(line for _, lines in merged for line in lines).rstrip() + "\n"
