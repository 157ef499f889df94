"""Where a plan came from: its file name, text and the line of every key, for messages that point at
the file. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["KeyPath", "PlanSource", "format_key_path"]

KeyPath = tuple[str | int, ...]


@dataclass(frozen=True)
class PlanSource:
    """Where a plan came from, and the line of every key, for messages that point at the file."""

    path: str
    text: str
    lines: Mapping[KeyPath, int]

    def where(self, key_path: KeyPath) -> str:
        probe = key_path
        while probe and probe not in self.lines:
            probe = probe[:-1]
        line = self.lines.get(probe, 1)
        dotted = format_key_path(key_path)
        return f"{self.path}:{line}: {dotted}" if dotted else f"{self.path}:{line}"


def format_key_path(key_path: KeyPath) -> str:
    out = ""
    for part in key_path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
