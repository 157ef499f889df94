"""Exports of records as JSON, CSV and Markdown. Pure: records in, text out."""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict

from storbench.records import RECORD_FIELDS, Record
from storbench.safe_text import csv_cell, safe_text

ESTIMATE_PARTS = ("_stddev", "_ci_low", "_ci_high")  # parts of an estimate in the metric's own unit


def export_number(field: str, value: object) -> object:
    """``value`` of ``field`` rounded to what it means, for every export (JSON, CSV, Markdown of `export`, `show`
    and `compare`): latencies in ns and sizes in bytes to integers, percentages to 0.01, IOPS and every rate per
    second to 0.1 (six significant digits below 1), seconds to the millisecond (the clients' start skew, often
    below one, as other measurements), other measurements to six
    significant digits. Integers, text, None and non-finite floats stay as they are. Arithmetic's last-bit noise
    (12962.185574000001) never reaches a file."""
    if not isinstance(value, float) or not math.isfinite(value):
        return value
    if field.endswith("_cv_pct"):
        return round(value, 2)
    name = field
    for part in ESTIMATE_PARTS:
        name = name.removesuffix(part)
    if name.endswith("_pct"):
        return round(value, 2)
    if name.endswith(("_ns", "_bytes", "_bytes_per_s")):
        return float(round(value)) if abs(value) >= 2**53 else round(value)
    if name.endswith(("iops", "_per_s")):  # rates: operations per second (ios_per_s); below 1 not seconds
        return round(value, 1) if abs(value) >= 1 else float(f"{value:.6g}")
    if name.endswith("_s") and name != "start_skew_s":  # a skew of 400 µs had become 0.0
        return round(value, 3)
    return float(f"{value:.6g}")


def export_row(row: Mapping[str, object], metric: str = "") -> dict[str, object]:
    """Every number of ``row`` through ``export_number`` by its field; name/value pairs (per-process CPU) and
    lists of numbers by their field too. ``metric``: the field that ``*_mean``/``*_ci_*`` cells of a comparison
    row measure (its ``metric`` column)."""
    out: dict[str, object] = {}
    for key, value in row.items():
        field = key
        if metric and key.startswith(("baseline_", "candidate_")) and not key.endswith("_n"):
            field = metric + key.removeprefix("baseline").removeprefix("candidate").removeprefix("_mean")
        if isinstance(value, dict):
            out[key] = {k: export_number(field, v) for k, v in value.items()}
        elif isinstance(value, tuple | list):
            out[key] = [(item[0], export_number(field, item[1])) if isinstance(item, tuple | list) and len(item) == 2
                        else export_number(field, item) for item in value]
        else:
            out[key] = export_number(field, value)
    return out


def _flat(record: Record) -> dict[str, object]:
    """Field -> value; name/value pairs (per-process CPU) become "name=value" text for CSV and Markdown."""
    row: dict[str, object] = export_row(asdict(record))
    for key, value in row.items():
        if isinstance(value, tuple | list):
            row[key] = " ".join(f"{name}={number:.3g}" for name, number in value)
    return row


def to_json(records: Sequence[Record]) -> str:
    rows = []
    for record in records:
        row: dict[str, object] = export_row(asdict(record))
        for key, value in row.items():
            if isinstance(value, tuple | list):
                row[key] = dict(value)
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


def csv_number(value: float) -> str:
    """A float for CSV: 15 significant digits, so arithmetic's last-bit noise (0.37699999999999995) goes and
    nothing a measurement carries is lost: an epoch time keeps its milliseconds (12 digits had written
    1796028036.946 as 1796028036.95)."""
    return f"{value:.15g}"


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


_MARKDOWN_ACTIVE = str.maketrans({c: "\\" + c for c in "\\|[]<>`"})


_BARE_LINK = re.compile(r"(?i)(www)\.|(:)//")  # GitHub's extended autolinks: www.x.y and scheme://...


def markdown_cell(text: str) -> str:
    """Text for a Markdown table cell: on one line, with what Markdown would act on escaped — pipes (a new cell),
    brackets (a link or an image), angle brackets (an autolink or HTML), backticks (code) and backslashes, and the
    bare links GitHub makes of `www.` and `://` (a target named www.evil.example had been a link) — so a value from
    a plan or a stored run is shown as written, never as a link to a host. (An address-like a@b.example in a path
    still becomes a mailto: link there, and @name a mention where GitHub makes them: no escape stops those.)"""
    escaped = text.translate(_MARKDOWN_ACTIVE).replace("\n", " ")
    return _BARE_LINK.sub(lambda m: f"{m.group(1)}\\." if m.group(1) else "\\://", escaped)


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
