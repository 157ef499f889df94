"""Exports of records as JSON, CSV and Markdown. Pure: records in, text out."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict

from storbench.records import RECORD_FIELDS, Record
from storbench.safe_text import csv_cell, safe_text


def _flat(record: Record) -> dict[str, object]:
    """Field -> value; name/value pairs (per-process CPU) become "name=value" text for CSV and Markdown."""
    row: dict[str, object] = asdict(record)
    for key, value in row.items():
        if isinstance(value, tuple | list):
            row[key] = " ".join(f"{name}={number:.3g}" for name, number in value)
    return row


def to_json(records: Sequence[Record]) -> str:
    rows = []
    for record in records:
        row: dict[str, object] = asdict(record)
        for key, value in row.items():
            if isinstance(value, tuple | list):
                row[key] = dict(value)
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


def csv_number(value: float) -> str:
    """A float for CSV: 12 significant digits, so arithmetic's last-bit noise (0.37699999999999995) goes and
    nothing a measurement carries is lost."""
    return f"{value:.12g}"


def to_csv(records: Sequence[Record]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(RECORD_FIELDS), lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow({k: ("" if v is None else csv_number(v) if isinstance(v, float) else csv_cell(v))
                         for k, v in _flat(record).items()})
    return buffer.getvalue()


def markdown_number(value: float) -> str:
    """A float for a Markdown table: six significant digits, never in exponent form for values of 1 or more
    (1795410000, not 1.79541e+09)."""
    if abs(value) >= 1:
        decimals = max(0, 6 - len(str(int(abs(value)))))
        text = f"{value:.{decimals}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{value:.6g}"


def _md_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return markdown_number(value)
    return markdown_cell(str(value))


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: on one line, pipes escaped."""
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(records: Sequence[Record]) -> str:
    lines = ["| " + " | ".join(RECORD_FIELDS) + " |", "|" + "---|" * len(RECORD_FIELDS)]
    for record in records:
        row = _flat(record)
        lines.append("| " + " | ".join(_md_cell(row[name]) for name in RECORD_FIELDS) + " |")
    return safe_text("\n".join(lines) + "\n", multiline=True)


def export(records: Sequence[Record], fmt: str) -> str:
    if fmt == "json":
        return to_json(records)
    if fmt == "csv":
        return to_csv(records)
    if fmt == "markdown":
        return to_markdown(records)
    raise ValueError(f"unknown format {fmt!r}")
