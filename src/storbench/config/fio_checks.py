"""A plan's pass-through fio options (pure): names against the allow-list (with a hint that leads somewhere),
values against their grammar, sizes below 2^63.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from fractions import Fraction

from storbench.config.source import PlanSource
from storbench.config.values import FIO_OPTION_NAME_RE, MANAGED_FIO_OPTIONS, FioScalar
from storbench.config.workload import fio_value_text
from storbench.errors import UserError
from storbench.fio.allowlist import (
    ALLOWED_FIO_OPTIONS,
    SIZED_GRAMMARS,
    is_refused,
    refusal_reason,
    value_refusal,
)
from storbench.fio.jobfile import is_safe_job_value
from storbench.units import MAX_SIZE_BYTES

__all__ = ["check_fio_options"]


def fio_option_refusal(name: str, where: str) -> UserError:
    """Why a pass-through option not on the allow-list is refused, with a hint that leads somewhere: a name close
    to an allowed option is a typo ("did you mean 'rate_iops'? 'rate_iops' is allowed"), a refused fio option
    says why."""
    reference = "the allowed options: storbench docs plan-reference workload.fio"
    if not is_refused(name):
        close = difflib.get_close_matches(name, sorted(ALLOWED_FIO_OPTIONS), n=1, cutoff=0.6)
        if close:
            return UserError(f"unknown fio option '{name}'", where=where,
                             hint=f"did you mean '{close[0]}'? '{close[0]}' is allowed")
    return UserError(f"fio option '{name}' {refusal_reason(name)}", where=where,
                     hint=f"it is not allowed in a plan; {reference}")


def check_fio_options(options: Mapping[str, FioScalar | list[FioScalar]], source: PlanSource) -> None:
    """Pass-through fio options: on the allow-list of options that only shape the I/O (fio/allowlist.py), not one
    storbench manages, and every value in that option's grammar."""
    for name, value in options.items():
        where = source.where(("workload", "fio", name))
        if not FIO_OPTION_NAME_RE.fullmatch(name):
            raise UserError(f"{name!r} is not a fio option name", where=where)
        if name in MANAGED_FIO_OPTIONS:
            raise UserError(
                f"fio option '{name}' is set by storbench", where=where, hint=f"use {MANAGED_FIO_OPTIONS[name]}"
            )
        if name not in ALLOWED_FIO_OPTIONS:
            raise fio_option_refusal(name, where)
        values = value if isinstance(value, list) else [value]
        if not values:
            raise UserError("an empty list sweeps nothing", where=where, hint="give at least one value")
        texts = [fio_value_text(item) for item in values]
        if len(set(texts)) != len(texts):
            raise UserError("a value is listed twice", where=where, hint="remove the duplicate")
        for text in texts:
            if not is_safe_job_value(text):
                raise UserError(
                    f"value {text!r} has characters that could change the fio job file",
                    where=where,
                    hint="newlines, $, ;, #, [, ], quotes and backslashes are refused",
                )
            refusal = value_refusal(name, text) or fio_size_refusal(name, text)
            if refusal:
                raise UserError(refusal, where=where, hint="storbench docs plan-reference workload.fio")


_SIZE_WITH_UNIT_RE = re.compile(r"(?<![0-9.])([0-9]+(?:\.[0-9]+)?)([kKmMgGtTpP])")
_UNIT_POWERS = {"k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def fio_size_refusal(name: str, text: str) -> str | None:
    """Why a size in an allowed option's value is too large, or None: every size (``io_size``, ``rate``, a
    ``bssplit`` block, ...) below 2^63, as fio reads it (a unit letter is a power of 1024), like the plan's own
    sizes. Pure."""
    if ALLOWED_FIO_OPTIONS[name].grammar not in SIZED_GRAMMARS:
        return None
    for number, unit in _SIZE_WITH_UNIT_RE.findall(text):
        if Fraction(number) * 1024 ** _UNIT_POWERS[unit.lower()] > MAX_SIZE_BYTES:
            return (f"value {text!r} is not allowed for '{name}': {number}{unit} is larger than the largest size fio "
                    f"and storbench take ({MAX_SIZE_BYTES} bytes, 8EiB less one byte)")
    return None
