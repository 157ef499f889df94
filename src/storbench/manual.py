"""The documents `storbench docs` prints, so an installed copy (a wheel, pipx) has what its messages cite: which
there are, and one section of a Markdown document found by its heading. Pure: text in, text out (the command reads
the package data, `storbench/docs`, and generates the plan reference)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

__all__ = ["DOCUMENTS", "Document", "find_section", "heading_slug"]


@dataclass(frozen=True)
class Document:
    """One document: its name on the command line, what it holds, and its file in `storbench/docs` (None: made
    from this storbench's own schema when asked, `reference.plan_reference_markdown`)."""

    name: str
    about: str
    file: str | None


DOCUMENTS: tuple[Document, ...] = (
    Document("methodology", "how every number is computed: designs, intervals, stopping rules, saturation, steady "
             "state, failover, bottleneck verdicts, with the simulated error rates", "methodology.md"),
    Document("plan-reference", "every key of a plan, its type, default and meaning (this storbench's schema)", None),
    Document("security", "what a plan cannot do, the labs, imported files, what is stored and what never is",
             "security.md"),
)

_HEADING_RE = re.compile(r"^(#{1,6}) +(.*?) *#*$")


def heading_slug(text: str) -> str:
    """A heading's anchor as GitHub makes it (``## `workload.fio`: other options`` -> ``workloadfio-other-options``):
    lower case, only letters, digits, ``-``, ``_`` and spaces kept, spaces turned into hyphens."""
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _headings(markdown: str) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each heading outside code blocks (fenced by three or more backticks or tildes,
    closed by at least as many of the same)."""
    found: list[tuple[int, int, str]] = []
    fence = ""
    for index, line in enumerate(markdown.splitlines()):
        if (opening := _FENCE_RE.match(line)) and (not fence or (opening.group(1).startswith(fence)
                                                                  and not line.strip().strip(fence[0]))):
            fence = "" if fence else opening.group(1)
        elif not fence and (match := _HEADING_RE.match(line)):
            found.append((index, len(match.group(1)), match.group(2)))
    return found


def find_section(markdown: str, query: str) -> tuple[str | None, list[str]]:
    """The section whose heading ``query`` names (its anchor, its text or their start, in any case), from its
    heading to the next heading of its level or above; None when no heading matches, with the headings closest to
    the query (for a hint)."""
    headings = _headings(markdown)
    wanted = heading_slug(query.strip().lstrip("#").strip())
    slugs = [heading_slug(text) for _, _, text in headings]
    chosen = next((i for i, slug in enumerate(slugs) if slug == wanted), None)
    if chosen is None and wanted:
        chosen = next((i for i, slug in enumerate(slugs) if slug.startswith(wanted)), None)
    if chosen is None:
        return None, difflib.get_close_matches(wanted, slugs, n=3, cutoff=0.4)
    start, level, _ = headings[chosen]
    lines = markdown.splitlines()
    end = next((index for index, other_level, _ in headings[chosen + 1:] if other_level <= level), len(lines))
    return "\n".join(lines[start:end]).rstrip() + "\n", []
