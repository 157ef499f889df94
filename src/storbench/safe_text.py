"""Text from a plan, an imported file or the database, made safe for where it is shown. Pure.

Such text is untrusted. An ESC sequence in it would retitle, recolour or rewrite the terminal; HTML in it would
make a link in a figure; a ``$`` pair would be mathtext in an image (and an unknown command crashes it); a
leading ``=`` would be a formula in a spreadsheet. Each destination has one function here, which its renderer
calls; rich markup is never parsed from data (tables hold ``rich.text.Text`` cells, the CLI's consoles read no
markup).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

# C0 controls but tab and newline, DEL, C1 (ESC starts a terminal's escape sequences; C1's CSI, OSC and NEL do
# the same on terminals that take 8-bit controls), and the Unicode controls that reorder or split what is shown
# (bidirectional overrides and isolates, line and paragraph separators).
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
_CONTROLS_IN_BLOCK = re.compile(f"[{_CONTROL}]")
_CONTROLS_IN_LINE = re.compile(f"[\t\n{_CONTROL}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}")


def safe_text(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character shown escaped, as Python writes it (ESC as ``\\x1b``); tab and
    newline stay when ``multiline`` (a block of lines is meant), else they are escaped too."""
    return (_CONTROLS_IN_BLOCK if multiline else _CONTROLS_IN_LINE).sub(_escaped, text)


def plotly_text(text: str) -> str:
    """A label for plotly, which reads a subset of HTML in titles, axis titles, legend names, hover text, tick
    labels and annotations: control characters escaped, then ``&``, ``<`` and ``>``, so ``<a href=...>`` shows
    as written instead of making a link. Newlines stay (the renderer turns its own into ``<br>``)."""
    return html.escape(safe_text(text, multiline=True), quote=False)


def mathtext_text(text: str) -> str:
    """A label for matplotlib, which draws text between two ``$`` as mathtext: control characters and ``$``
    escaped, so the label shows as written."""
    return safe_text(text, multiline=True).replace("$", r"\$")


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """A value for a CSV cell: text that would start a spreadsheet formula (``=``, ``+``, ``-``, ``@``, tab,
    carriage return) gets a leading ``'`` (OWASP's advice on CSV injection), and its control characters escaped
    (newlines stay: the csv module quotes them). Numbers, and text that is only a number (``-5``), stay as they
    are."""
    if not isinstance(value, str) or _NUMBER.fullmatch(value):
        return value
    return safe_text(("'" + value) if value.startswith(_FORMULA_START) else value, multiline=True)


_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def file_stem(text: str, max_chars: int = 120) -> str:
    """``text`` as one file name component: only letters, digits, '.', '_' and '-' (anything else, '/' first of
    all, becomes '_'), not starting with '.', at most ``max_chars`` long."""
    return _FILE_UNSAFE.sub("_", text)[:max_chars].lstrip(".") or "_"


def file_stems(texts: Sequence[str]) -> list[str]:
    """One distinct ``file_stem`` per text, in order: a stem met again gets the first free ``-<n>``."""
    used: set[str] = set()
    out = []
    for text in texts:
        stem = file_stem(text)
        if stem in used:
            stem = next(f"{stem}-{n}" for n in range(1, len(used) + 2) if f"{stem}-{n}" not in used)
        used.add(stem)
        out.append(stem)
    return out
