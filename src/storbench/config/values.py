"""The value types a plan's keys share: sizes, durations, rates, link rates and sweeps (a value or a list of
values), the names and paths safe to pass to fio and ``matching``, the rule of a text key (a pattern, and the
refusal of a text unlike it), the options storbench writes itself, and ``StrictModel``, the base of every section.
Pure: declares data, reads nothing."""

from __future__ import annotations

import functools
import re
import typing
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, model_validator

from storbench.units import MAX_SIZE_BYTES, link_rate_bits, parse_duration_s, parse_size_bytes

__all__ = [
    "FIO_OPTION_NAME_RE", "MANAGED_FIO_OPTIONS", "SAFE_NAME_RE", "SAFE_PATH_RE", "Duration", "FioScalar", "RwPattern",
    "Size", "StrictModel", "Sweep", "path_length_problem",
]

MAX_COUNT = MAX_SIZE_BYTES  # any other number a plan gives: a signed 64-bit integer (SQLite, fio)
PID_MAX = 2**22  # the kernel's PID_MAX_LIMIT

# Characters a plan value may carry into a fio job file. Newlines, '$' (fio expands environment
# variables), ';' and '#' (comments), '[' ']' (sections), quotes and backslashes are refused.
SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# a space inside a path, never at either end: fio strips blanks around a value, so "/home/eve " would be checked
# here as one directory and opened by fio as another
SAFE_PATH_RE = re.compile(r"^[A-Za-z0-9_./+@%,=~-](?:[A-Za-z0-9_./+@%,=~ -]*[A-Za-z0-9_./+@%,=~-])?$")
FIO_OPTION_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
# A path's length: fio copies a directory and its file's name into one 4,096-byte buffer (a longer one overran it);
# Linux takes no name of more than 255 bytes between slashes (NAME_MAX: `plan` had crashed on ENAMETOOLONG)
MAX_PATH_CHARS = 1024
MAX_NAME_BYTES = 255


def path_length_problem(text: str) -> str | None:
    """Why ``text`` is too long for a path fio and Linux take, or None."""
    if len(text) > MAX_PATH_CHARS:
        return f"it is {len(text):,} characters long: a path of at most {MAX_PATH_CHARS:,} is taken"
    longest = max(text.split("/"), key=len)
    if len(longest.encode("utf-8")) > MAX_NAME_BYTES:
        return (f"one of its names is {len(longest.encode('utf-8')):,} bytes long: Linux takes at most "
                f"{MAX_NAME_BYTES} between slashes")
    return None


def matching(pattern: str | re.Pattern[str], refusal: str, *, each: bool = False,
             path: bool = False) -> AfterValidator:
    """The rule of a text key, for its type (``Annotated[str, matching(...)] | None``: None passes): the text matches
    ``pattern`` whole, else the plan is refused with ``refusal``, in which ``{value!r}`` shows the text. ``each``:
    every text of a list, or every key of a mapping (the error names the whole key); ``path``: a path, whose length
    is bounded too (`path_length_problem`)."""
    compiled = re.compile(pattern)

    def check(value: Any) -> Any:
        for text in value if each else [value]:
            if text == "":
                raise ValueError("it is empty: give a value")  # "path '' has characters ..." had said otherwise
            if path and (problem := path_length_problem(text)) is not None:
                raise ValueError(problem)  # said before the text, which would fill the screen
            if not compiled.fullmatch(text):
                raise ValueError(refusal.format(value=text))
        return value

    return AfterValidator(check)


# Options storbench writes itself: set them under `workload` or on the target instead.
MANAGED_FIO_OPTIONS: dict[str, str] = {
    "rw": "workload.rw",
    "readwrite": "workload.rw",
    "bs": "workload.bs",
    "blocksize": "workload.bs",
    "iodepth": "workload.iodepth",
    "numjobs": "workload.numjobs",
    "runtime": "workload.runtime",
    "timeout": "workload.runtime",
    "ramp_time": "workload.ramp",
    "direct": "workload.direct",
    "buffered": "workload.direct",
    "ioengine": "workload.ioengine",
    "rwmixread": "workload.rwmixread",
    "rwmixwrite": "workload.rwmixread",
    "size": "the target's size (or workload.size)",
    "filesize": "the target's size (or workload.size)",
    "filename": "the target",
    "directory": "the target",
    "filename_format": "the target",
    "time_based": "workload.runtime (runs are time based)",
    "name": "the plan",
    "group_reporting": "nothing: storbench merges jobs itself",
    "clat_percentiles": "nothing: storbench always keeps latency bins",
    "lat_percentiles": "nothing: storbench always keeps latency bins",
    "percentile_list": "nothing: storbench computes percentiles from the bins",
    "output": "nothing: storbench keeps fio's output",
    "output_format": "nothing: storbench keeps fio's output",
}
def _size(value: object) -> int:
    return parse_size_bytes(value)


def _duration(value: object) -> float:
    return parse_duration_s(value)


Size = Annotated[int, BeforeValidator(_size)]
Duration = Annotated[float, BeforeValidator(_duration)]
T = TypeVar("T")


def _as_list(value: object) -> object:
    return value if isinstance(value, list) else [value]


def _no_duplicates(values: list[T]) -> list[T]:
    seen: list[T] = []
    for value in values:
        if value in seen:
            raise ValueError(f"{value!r} is listed twice")
        seen.append(value)
    if not values:
        raise ValueError("an empty list sweeps nothing: give at least one value")
    return values


def _sweep(value: object) -> object:
    return _as_list(value)


# A value or a list of values (a sweep axis). Lists must be non-empty and without duplicates.
Sweep = Annotated[list[T], BeforeValidator(_sweep)]

RwPattern = Literal[
    "read", "write", "randread", "randwrite", "rw", "readwrite", "randrw",
    "trim", "randtrim", "trimwrite", "randtrimwrite",
    "create", "stat", "delete", "metadata",
    "put", "get", "delete_object", "getput",
    "provision", "attach", "snapshot", "restore", "clone", "expand",
]  # fmt: skip
FioScalar = Union[str, int, float, bool]  # noqa: UP007  (pydantic needs the runtime object)


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, defer_build=True)

    @model_validator(mode="before")
    @classmethod
    def _no_yes_for_a_number(cls, data: Any) -> Any:
        """YAML's true and false are no numbers: pydantic's lax mode read `iodepth: true` as 1. A field that takes no
        bool gets them as the words YAML read, which its own validation refuses at its own line."""
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for name, value in data.items():
            field = cls.model_fields.get(name) if isinstance(name, str) else None
            kind: Any = field.annotation if field is not None else None
            if kind is None or _takes(kind, bool) or _takes(kind, str):
                continue  # a flag, or text (pydantic refuses a bool for it as it is)
            if isinstance(value, bool):
                out[name] = str(value).lower()
            elif isinstance(value, list) and any(isinstance(v, bool) for v in value):
                out[name] = [str(v).lower() if isinstance(v, bool) else v for v in value]
        return out


@functools.cache
def _takes(annotation: Any, kind: type) -> bool:
    """Whether a field's type takes ``kind`` anywhere in it (a union with it, a list of it, fio's scalars)."""
    return annotation is kind or any(_takes(arg, kind) for arg in typing.get_args(annotation)
                                     if isinstance(arg, type) or typing.get_args(arg))


def _rate(value: object) -> int:
    """A throughput as people write it: ``125MiB/s`` or ``125MiB`` (bytes per second)."""
    if isinstance(value, str) and value.strip().endswith("/s"):
        value = value.strip()[:-2]
    return parse_size_bytes(value)


Rate = Annotated[int, BeforeValidator(_rate)]



def _cpu_list_text(value: object) -> object:
    """A CPU list as YAML may give it: `1` is a number there."""
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


LinkRate = Annotated[int, BeforeValidator(link_rate_bits)]


def _fraction(value: object) -> object:
    if isinstance(value, str) and value.strip().endswith("%"):
        return float(value.strip()[:-1]) / 100
    return value
