"""A plan's pass-through fio options (pure): names against the allow-list (with a hint that leads somewhere),
values against their grammar, sizes below 2^63.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from fractions import Fraction

from storbench.config.faults import start_delays
from storbench.config.schema import PlanConfig
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
from storbench.model import is_size_based
from storbench.units import MAX_SIZE_BYTES

__all__ = ["check_fio_meanings", "check_fio_options"]


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


# what fio does with these on a time-based job (run to its runtime) that the figures would not say
TIME_BASED_MEANINGS = {
    "number_ios": "fio runs a time-based job to its runtime whatever number_ios says (the case's label would claim "
                  "a count that never applied)",
    "verify": "a time-based job verifies what it wrote each time it has written its size, then starts again, and "
              "the verify reads are counted as the job's reads (a write case gets read figures; both rates over "
              "their own phases add up to more than it did)",
}


def check_fio_meanings(config: PlanConfig, source: PlanSource) -> None:
    """Allowed options whose values fio takes in another sense than the figures would tell: on a time-based job
    (`TIME_BASED_MEANINGS`); `latency_target`, whose depth search ends the job early unless `latency_run=1`; a
    `startdelay` range with numjobs clones (each clone draws its own delay, and their rates are added as if they
    ran together)."""
    fio, workload = config.workload.fio, config.workload

    def values(name: str) -> list[str]:  # an option's values as its job lines write them (a list sweeps)
        given = fio.get(name)
        return [fio_value_text(v) for v in (given if isinstance(given, list) else [given]) if v is not None]

    timed = [rw for rw in workload.rw if not is_size_based(rw)]
    for name, reason in TIME_BASED_MEANINGS.items():
        if timed and any(value not in ("0", "none") for value in values(name)):
            raise UserError(f"workload.fio.{name} with rw: {timed[0]}: {reason}",
                            where=source.where(("workload", "fio", name)),
                            hint="drop it, or measure a size-based workload (a metadata or object operation) with it")
    if "latency_target" in fio and values("latency_run") != ["1"]:
        raise UserError("workload.fio.latency_target: fio searches the queue depth that meets it, then measures one "
                        "latency_window and ends the job, long before its runtime (and at a depth the plan does not "
                        "name)", where=source.where(("workload", "fio", "latency_target")),
                        hint="add latency_run: 1 (fio keeps searching for the whole runtime), or sweep iodepth, or "
                        "use search: with a latency objective")
    numjobs = max(workload.numjobs)  # a search along numjobs may go up to its range's end
    if config.search is not None and config.search.axis == "numjobs":
        numjobs = max(numjobs, config.search.range[1])
    for value, low, high in start_delays(workload):
        if low != high and numjobs > 1:
            raise UserError(f"startdelay {fio_value_text(value)} draws each of numjobs {numjobs} clones' "
                            "start apart, and their rates are added as if they ran together",
                            where=source.where(("workload", "fio", "startdelay")),
                            hint="give one startdelay (e.g. 10s), or numjobs: 1")
