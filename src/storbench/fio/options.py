"""Parsing what a fio binary says about itself (version, options, engines). Pure."""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION_RE = re.compile(r"fio-(\d+)\.(\d+)")
_OPTION_LINE_RE = re.compile(r"^\s*([a-z][a-z0-9_]*)\s+:")

# Engines that run programs instead of doing I/O: never from a plan.
REFUSED_ENGINES = frozenset({"exec"})


@dataclass(frozen=True)
class FioCapabilities:
    binary: str
    version: str
    options: frozenset[str]
    engines: frozenset[str]
    engine_options: tuple[tuple[str, frozenset[str]], ...] = ()

    def options_for(self, engine: str) -> frozenset[str]:
        for name, options in self.engine_options:
            if name == engine:
                return self.options | options
        return self.options


def parse_version(text: str) -> str:
    """'fio-3.33\\n' -> 'fio-3.33'."""
    match = _VERSION_RE.search(text)
    if not match:
        first = text.strip().splitlines()[0][:80] if text.strip() else ""
        raise ValueError(f"not a fio version: {first!r}")  # its first line, never a whole licence text
    return text.strip().split()[0]


def parse_option_names(cmdhelp: str) -> frozenset[str]:
    """Option names from ``fio --cmdhelp`` or ``fio --enghelp=ENGINE`` output."""
    return frozenset(m.group(1) for line in cmdhelp.splitlines() if (m := _OPTION_LINE_RE.match(line)))


def parse_engines(enghelp: str) -> frozenset[str]:
    """Engine names from ``fio --enghelp`` (a header line, then one tab-indented name per line)."""
    return frozenset(line.strip() for line in enghelp.splitlines()[1:] if line.startswith("\t") and line.strip())
