"""Sizes and durations as people write them in fio jobs and plans: pure parsing and formatting."""

from __future__ import annotations

import math
import re
from fractions import Fraction

# The largest size or duration a plan may give: what fio (sizes in signed 64-bit arithmetic), SQLite (signed 64-bit
# integers) and storbench's nanoseconds hold. 16EiB would wrap to 0 in fio and crash the store.
MAX_SIZE_BYTES = 2**63 - 1
MAX_DURATION_S = (2**63 - 1) // 10**9  # about 292 years: its nanoseconds still fit in 64 bits

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5, "e": 6}


def parse_size_bytes(value: object) -> int:
    """A size as a plan gives it: ``4k``/``4K``/``4KiB`` -> 4096, ``1m`` -> 1048576, ``10GB`` -> 10**10, ``512`` -> 512.

    A single letter (``k``, ``m``, ``g``, ``t``, as fio with its default ``kb_base=1024``) and an IEC unit (``KiB``,
    ``MiB``, ``GiB``) are powers of 1024; an SI unit (``kB``/``KB``, ``MB``, ``GB``, ``TB``, ``PB``, ``EB``) is a power
    of 1000, what it means everywhere but in fio. A lower-case or otherwise ambiguous form (``gb``, ``mb``, ``Gb``)
    is refused: whether it meant 10^9 or 2^30 bytes cannot be told.
    """
    return _parse_size(value, si=True)


def parse_job_size_bytes(value: object) -> int:
    """A size of a `workload.fio` option as storbench writes it into a job (`fio.allowlist.fio_text`): every unit
    letter, however written (``4k``, ``4KB``, ``4KiB``), a power of 1024."""
    return _parse_size(value, si=False)


def parse_fio_size_bytes(value: object, kb_base: int = 1024) -> int:
    """A size as fio read it from a job file (imported outputs, where fio, not storbench, decided what the unit
    meant): with its default ``kb_base=1024`` a unit letter or an SI unit (``4k``, ``4KB``) is a power of 1024 and an
    IEC unit (``4KiB``) a power of 1000 (fio's compatibility mode); with ``kb_base=1000`` the other way round."""
    if kb_base not in (1000, 1024):
        raise ValueError(f"fio's kb_base is 1000 or 1024, not {kb_base}")
    return _parse_size(value, si=False, kb_base=kb_base)


def _parse_size(value: object, *, si: bool, kb_base: int | None = None) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected a size such as 4k or 256MiB, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"a size cannot be negative: {value}")
        return _bounded_size(value, value)
    if not isinstance(value, str):
        raise ValueError(f"expected a size such as 4k or 256MiB, got {value!r}")
    match = _SIZE_RE.match(value)
    if not match:
        raise ValueError(f"not a size: {value!r} (write e.g. 4k, 64KiB, 1m, 256MiB, 2g)")
    number, prefix, binary, b = match.groups()
    base = 1024
    if si and prefix and b and not binary:
        base = _si_base(value, number, prefix, b)
    elif kb_base is not None and prefix:  # as fio reads it: an IEC unit the opposite of its kb_base
        base = (1000 if kb_base == 1024 else 1024) if binary else kb_base
    result = Fraction(number) * (base ** _POWERS[prefix.lower()])  # exact: no float rounding near 2^63
    if result.denominator != 1:
        raise ValueError(f"not a whole number of bytes: {value!r}")
    return _bounded_size(int(result), value)


def _si_base(written: str, number: str, prefix: str, b: str) -> int:
    """1000 for an SI unit written as SI writes it (``kB``/``KB``, ``MB``, ``GB``...); refuses any other form."""
    if b == "B" and (prefix.isupper() or prefix == "k"):
        return 1000
    power = _POWERS[prefix.lower()]
    si_prefix = "k" if prefix.lower() == "k" else prefix.upper()
    raise ValueError(f"ambiguous size {written.strip()!r}: write {number}{prefix.upper()}iB (2^{10 * power} bytes a "
                     f"{prefix.upper()}iB) or {number}{si_prefix}B (10^{3 * power} bytes a {si_prefix}B)")


def _bounded_size(n_bytes: int, written: object) -> int:
    if n_bytes > MAX_SIZE_BYTES:
        raise ValueError(f"{written!r} is larger than the largest size fio and storbench take "
                         f"({MAX_SIZE_BYTES} bytes, 8EiB less one byte)")
    return n_bytes


# storbench's own durations (a plan's runtime, ramp, ...), longer unit names and decimals too; a pass-through fio
# option takes only what fio reads as written (`fio.allowlist`: fio 3.33 reads `30sec` as 30 us, `1.5s` as 1 s)
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|nsec|us|usec|ms|msec|s|sec|m|min|h|d)?\s*$", re.IGNORECASE)
_DURATION_FACTORS = {"ns": 1e-9, "nsec": 1e-9, "us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0,
                     "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def fio_flag_set(value: object) -> bool:
    """Whether a fio boolean option's value turns it on (anything but 0, false, no or off)."""
    return str(value).strip().lower() not in ("0", "false", "no", "off")


def parse_duration_s(value: object) -> float:
    """``5s`` -> 5.0, ``500ms`` -> 0.5, ``2m`` -> 120.0, a bare number is seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 5s or 500ms, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"a duration cannot be negative: {value}")
        return _bounded_duration(float(value), value)
    if not isinstance(value, str):  # a date YAML read (runtime: 2024-01-01) as written, not as Python's repr
        raise ValueError(f"expected a duration such as 5s or 500ms, got {str(value)!r}")
    match = _DURATION_RE.match(value)
    if not match:
        raise ValueError(f"not a duration: {value!r} (write e.g. 5s, 500ms, 2m)")
    number, unit = match.groups()
    return _bounded_duration(float(number) * _DURATION_FACTORS[(unit or "s").lower()], value)


def duration_range_s(value: object) -> tuple[float, float]:
    """A fio duration or range (``10s``, ``10-30s``: fio draws one in between) as (least, most) seconds; ValueError
    when a part is no duration."""
    parts = [parse_duration_s(part) for part in str(value).split("-")]
    return min(parts), max(parts)


def _bounded_duration(seconds: float, written: object) -> float:
    if not math.isfinite(seconds):
        raise ValueError(f"{written!r} is not a duration (write e.g. 5s, 500ms, 2m)")
    if seconds > MAX_DURATION_S:
        raise ValueError(f"{written!r} is longer than the longest duration storbench takes "
                         f"({MAX_DURATION_S}s, about 292 years)")
    return seconds


def count_of(n: int, word: str) -> str:
    """'1 repetition', '3 repetitions' (a word whose plural takes an s)."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def format_bytes(n_bytes: float) -> str:
    """4096 -> '4KiB', 1048576 -> '1MiB', 1536 -> '1.5KiB'."""
    value = float(n_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(value) < 1024 or unit == "PiB":
            if value == int(value):
                return f"{int(value)}{unit}"
            return f"{value:.3g}{unit}" if abs(value) < 100 else f"{value:.0f}{unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_block_size(n_bytes: int) -> str:
    """fio-style block size: 4096 -> '4k', 1048576 -> '1m', 512 -> '512'."""
    for suffix, power in (("g", 3), ("m", 2), ("k", 1)):
        unit = 1024**power
        if n_bytes >= unit and n_bytes % unit == 0:
            return f"{n_bytes // unit}{suffix}"
    return str(n_bytes)


def format_duration(seconds: float) -> str:
    """75 -> '1m15s', 3.5 -> '3.5s', 4000 -> '1h06m40s'."""
    if seconds < 60:
        return f"{seconds:.3g}s" if seconds != int(seconds) else f"{int(seconds)}s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s"


# fio's latency histogram ends at its bin 1855 (FIO_IO_U_PLAT_NR = 1856 bins, 6 bits a group): every I/O of 17.05 s
# or longer falls in it, and a percentile there reads as its value, 17.11 s, however long the I/Os were
HISTOGRAM_LAST_BIN_NS = 17_112_760_320
HISTOGRAM_LAST_BIN_LOW_NS = 17_045_651_456


def format_percentile_ns(ns: float | None) -> str:
    """A latency percentile for people; one in fio's last bin as the floor it is ('≥17s': a 40 s stall read 17.1 s)."""
    if ns is not None and ns >= HISTOGRAM_LAST_BIN_NS:
        return "≥" + format_latency_ns(HISTOGRAM_LAST_BIN_LOW_NS)
    return format_latency_ns(ns)


def format_latency_ns(ns: float | None) -> str:
    """Latency for people: '850ns', '12.3µs', '4.56ms', '1.2s'."""
    if ns is None:
        return "-"
    if ns < 999.5:  # below what three digits of the next unit round up to
        return f"{ns:.0f}ns"
    if ns < 999_500:
        return f"{ns / 1e3:.3g}µs"
    if ns < 999_500_000:
        return f"{ns / 1e6:.3g}ms"
    return f"{ns / 1e9:.3g}s"



def format_link_rate(bits_per_s: int) -> str:
    """``1Gbit``, ``100Mbit``, ``2.5Gbit``: a link rate as network people write it (powers of 1000)."""
    for unit, size in (("Tbit", 10**12), ("Gbit", 10**9), ("Mbit", 10**6), ("Kbit", 10**3)):
        if bits_per_s >= size:
            return f"{bits_per_s / size:g}{unit}"
    return f"{bits_per_s}bit"


# bits only: a capital B is bytes (tc's `mbps` too), a rate 8 times off, so it is refused rather than guessed
_LINK_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kKmMgGtT]?)(?:bit|Bit|bps|b)(?:/s)?\s*$")


def link_rate_bits(value: object) -> int:
    """A link rate as network people write it: ``1Gbit``, ``100Mbit``, ``10gbps`` (bits per second, powers of
    1000)."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a link rate like 1Gbit")
    if isinstance(value, int):
        number, unit = float(value), ""
    else:
        match = _LINK_RE.match(str(value))
        if not match:
            said = " (B is bytes: a link rate is in bits)" if re.search(r"[0-9\s][kKmMgGtT]?B", str(value)) else ""
            raise ValueError(f"{value!r} is not a link rate like 100Mbit or 10Gbit{said}")
        number, unit = float(match.group(1)), match.group(2).lower()
    bits = int(number * {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}[unit])
    if not 10**6 <= bits <= 400 * 10**9:
        raise ValueError(f"{value!r}: a link rate from 1Mbit to 400Gbit")
    return bits


CPU_LIST_PATTERN = r"^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$"  # 1, 0-3, 0,2-3 (cpuset's cpu list)


def parse_cpu_list(text: str) -> list[int]:
    """``0-2,5`` -> [0, 1, 2, 5]; ValueError for anything else."""
    if not re.fullmatch(CPU_LIST_PATTERN, text):
        raise ValueError(f"{text!r} is not a CPU list like 1 or 0-3,6")
    cpus: set[int] = set()
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(f"{part!r}: a range goes up")
        cpus.update(range(first, last + 1))
    return sorted(cpus)


# Metric and export names that gained their unit after 0.1.0: a plan, selector or stored design written with the
# old name still means the same figure.
RENAMED_METRICS: dict[str, str] = {"bw_bytes": "bw_bytes_per_s", "cpu_usr": "cpu_usr_pct", "cpu_sys": "cpu_sys_pct"}


def current_metric_name(name: str) -> str:
    """``name`` as storbench calls the figure now: ``bw_bytes`` is ``bw_bytes_per_s``; any other name as given."""
    return RENAMED_METRICS.get(name, name)
