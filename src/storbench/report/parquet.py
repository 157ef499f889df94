"""Exports as Parquet, for dashboards and dataframes (issue 36): `export --format parquet` (one row per repetition
and direction, the fields of `records.Record`) and `history --format parquet` (one row per point, metric and run).
Pure: records in, the file's bytes out.

Every column has its type from the model, also where no row has a value (an all-empty `clat_p99_ns` is still an
integer column, so a dashboard's query does not change type from one export to the next): integers as int64,
measurements as float64, flags as bool, text as UTF-8; name/value pairs (per-process CPU) and lists (labels, what
changed with a step) as JSON text. Numbers are rounded as in every other export (`report.export.export_number`).
pyarrow writes the file; it is the `parquet` extra (pyarrow in storbench's environment), imported only here.
"""

from __future__ import annotations

import io
import json
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from storbench.errors import UserError
from storbench.records import RECORD_FIELDS, Record
from storbench.report.export import export_row

INT, FLOAT, BOOL, TEXT, OBJECT, LIST = "int64", "float64", "bool", "string", "json object", "json list"

# `storbench history --format parquet`: each field of `report.history.history_records` and its type
HISTORY_KINDS: Mapping[str, str] = {
    "point": TEXT, "series_host": TEXT, "metric": TEXT, "run": INT, "host": TEXT, "n": INT, "mean": FLOAT,
    "median": FLOAT, "ci_low": FLOAT, "ci_high": FLOAT, "labels": OBJECT, "recorded": OBJECT, "change_pct": FLOAT,
    "change_ci_low_pct": FLOAT, "change_ci_high_pct": FLOAT, "changed_with": LIST,
}


def _kind(annotation: object) -> str:
    """A Record field's column type from its annotation (``int | None`` is an int64 column with nulls)."""
    arms = set(typing.get_args(annotation)) - {type(None)} if isinstance(annotation, types.UnionType) else {annotation}
    if arms == {bool}:
        return BOOL
    if arms == {int}:
        return INT
    if arms <= {int, float} and arms:
        return FLOAT
    if arms == {str}:
        return TEXT
    return OBJECT  # name/value pairs (per-process CPU)


def record_kinds() -> dict[str, str]:
    hints = typing.get_type_hints(Record)
    return {name: _kind(hints[name]) for name in RECORD_FIELDS}


def _cell(kind: str, value: object) -> object:
    if value is None:
        return None
    if kind == OBJECT:  # a mapping, or name/value pairs
        return json.dumps(dict(value), sort_keys=True)  # type: ignore[call-overload]
    if kind == LIST:
        return json.dumps(list(value))  # type: ignore[call-overload]
    if kind == FLOAT:
        return float(value)  # type: ignore[arg-type]
    return value


def columns(rows: Sequence[Mapping[str, object]], kinds: Mapping[str, str]) -> dict[str, list[object]]:
    """Each field of ``kinds``, its values down the rows, as its column holds them."""
    return {name: [_cell(kind, row.get(name)) for row in rows] for name, kind in kinds.items()}


def to_parquet(rows: Sequence[Mapping[str, object]], kinds: Mapping[str, str]) -> bytes:
    """The rows as a Parquet file of the columns ``kinds`` names, in that order and of those types."""
    try:  # lazy: pyarrow is optional (the `parquet` extra) and takes 0.1 s to import
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise UserError("Parquet needs pyarrow, which is not installed",
                        hint="install pyarrow into storbench's environment (pipx inject storbench 'pyarrow>=14'), "
                        "or use --format csv or json") from None
    types_of: dict[str, Any] = {INT: pa.int64(), FLOAT: pa.float64(), BOOL: pa.bool_(), TEXT: pa.string(),
                                OBJECT: pa.string(), LIST: pa.string()}
    schema = pa.schema([(name, types_of[kind]) for name, kind in kinds.items()])
    table = pa.table(columns(rows, kinds), schema=schema)
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    return buffer.getvalue()


def records_parquet(records: Sequence[Record]) -> bytes:
    """`export --format parquet`: every field of every record, rounded as every export rounds."""
    return to_parquet([export_row(asdict(record)) for record in records], record_kinds())


def history_parquet(records: Sequence[Mapping[str, object]]) -> bytes:
    """`history --format parquet`: the records `history --format json` gives, rounded as every export rounds."""
    return to_parquet([export_row(dict(record)) for record in records], HISTORY_KINDS)
