"""apt's package sources, read (pure): the source-package entries (`deb-src`) a build from Debian's source packages
needs, derived from the binary entries (`deb`) this machine already has — its mirror, an internal mirror in an
air-gapped site, with their keys and options — never a host written here.

Both formats apt reads: one-line entries (`sources.list`, `*.list`: `deb [signed-by=...] URI SUITE COMPONENT...`) and
deb822 stanzas (`*.sources`: `Types:`, `URIs:`, `Suites:`, `Components:` and options such as `Signed-By:`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

FILE_NAME = "storbench-deb-src.sources"  # in /etc/apt/sources.list.d


@dataclass(frozen=True)
class Entry:
    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]
    options: tuple[tuple[str, str], ...] = ()  # deb822 field names (Signed-By, Architectures, ...)
    enabled: bool = True


def _option_field(name: str) -> str:
    """A one-line option's deb822 field: signed-by -> Signed-By, arch -> Architectures."""
    known = {"arch": "Architectures", "lang": "Languages", "target": "Targets"}
    return known.get(name, "-".join(part.capitalize() for part in name.split("-")))


def one_line_entries(text: str) -> list[Entry]:
    entries = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if re.match(r"deb(-src)?\s+cdrom:", line):  # a disc has no source packages (and spaces in its name)
            continue
        found = re.fullmatch(r"(deb|deb-src)\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)((?:\s+\S+)*)", line)
        if found is None:
            continue
        kind, options_text, uri, suite, components = found.groups()
        options = []
        for option in (options_text or "").split():
            name, _, value = option.partition("=")
            options.append((_option_field(name.rstrip("+-")), value.replace(",", " ")))
        entries.append(Entry((kind,), (uri,), (suite,), tuple(components.split()), tuple(options)))
    return entries


_FIELDS = {name.lower(): name for name in ("Types", "URIs", "Suites", "Components", "Enabled")}


def deb822_entries(text: str) -> list[Entry]:
    entries = []
    for stanza in re.split(r"\n\s*\n", text):
        fields: dict[str, str] = {}
        last = ""
        for raw in stanza.splitlines():
            if raw.startswith("#") or not raw.strip():
                continue
            if raw[0] in " \t" and last:  # a continuation line (a key block in Signed-By, say)
                fields[last] += "\n" + raw
                continue
            name, sep, value = raw.partition(":")
            if sep:  # apt takes field names in any case
                last = _FIELDS.get(name.strip().lower(), name.strip())
                fields[last] = value.strip()
        if "Types" not in fields or "URIs" not in fields:
            continue
        options = tuple((k, v) for k, v in fields.items()
                        if k not in ("Types", "URIs", "Suites", "Components", "Enabled"))
        entries.append(Entry(tuple(fields["Types"].split()), tuple(fields["URIs"].split()),
                             tuple(fields.get("Suites", "").split()), tuple(fields.get("Components", "").split()),
                             options, fields.get("Enabled", "yes").lower() != "no"))
    return entries


def configured_entries(files: Mapping[str, str]) -> list[Entry]:
    """Every entry of apt's source files (name -> text): `*.sources` read as deb822, the rest as one-line; our own
    file is left out."""
    entries: list[Entry] = []
    for name, text in sorted(files.items()):
        if name.endswith(FILE_NAME):
            continue
        entries += deb822_entries(text) if name.endswith(".sources") else one_line_entries(text)
    return entries


def _covered(entry: Entry, entries: list[Entry]) -> bool:
    """Whether a `deb-src` entry has the sources of the `deb` ``entry``: its URIs, suites and components."""
    return any(e.enabled and "deb-src" in e.types and set(entry.uris) <= set(e.uris)
               and set(entry.suites) <= set(e.suites) and set(entry.components) <= set(e.components)
               for e in entries)


def _wanted(entry: Entry) -> bool:
    """An enabled `deb` entry with a `main` component: Debian's archive, or a mirror of it (a third party's own
    repository, Docker's `stable`, say, publishes no source packages, and a `deb-src` for it would only fail)."""
    return entry.enabled and "deb" in entry.types and "main" in entry.components and bool(entry.suites)


def has_sources(entries: list[Entry]) -> bool:
    """Whether every `deb` entry of a `main` component has its `deb-src` (a third party's, or bookworm-security's
    alone, is not Debian main's: it had kept storbench from writing the one `apt-get source fio` needs)."""
    binary = [e for e in entries if _wanted(e)]
    return bool(binary) and all(_covered(e, entries) for e in binary)


def deb_src_text(entries: list[Entry]) -> str:
    """A deb822 file with a `deb-src` stanza for each `deb` entry of a `main` component that has none (same URIs,
    suites, components and options); "" when there is none."""
    stanzas = []
    for entry in entries:
        if not _wanted(entry) or _covered(entry, entries):
            continue
        lines = ["Types: deb-src", f"URIs: {' '.join(entry.uris)}", f"Suites: {' '.join(entry.suites)}"]
        if entry.components:
            lines.append(f"Components: {' '.join(entry.components)}")
        lines += [f"{name}: {value}" for name, value in entry.options]
        stanza = "\n".join(lines)
        if stanza not in stanzas:
            stanzas.append(stanza)
    if not stanzas:
        return ""
    return "# storbench: source packages from this machine's own sources (storbench setup)\n" + "\n\n".join(
        stanzas) + "\n"
