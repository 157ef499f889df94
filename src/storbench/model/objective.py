"""A latency objective (pure): `p99<=10ms` as a typed limit on one latency field, the one grammar a plan's
`search.slo` and `--slo` share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storbench.units import parse_duration_s

_SLO_RE = re.compile(r"^\s*(p\d+(?:\.\d+)?|mean)\s*<=\s*(\S+)\s*$")


@dataclass(frozen=True)
class LatencyObjective:
    field: str
    label: str
    limit_ns: float


def parse_slo(text: str) -> LatencyObjective:
    """``p99<=10ms``, ``p95<=500us``, ``p99.9<=20ms``, ``mean<=1ms``. ValueError on anything else."""
    match = _SLO_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not an objective like p99<=10ms")
    which, limit = match.groups()
    fields = {"mean": "lat_mean_ns", "p50": "lat_p50_ns", "p95": "lat_p95_ns", "p99": "lat_p99_ns",
              "p99.9": "lat_p999_ns"}
    if which not in fields:
        raise ValueError(f"{which!r}: use one of {', '.join(fields)}")
    if not re.search(r"[a-zµ]\s*$", limit, re.IGNORECASE):  # a bare number would be read as seconds
        raise ValueError(f"{limit!r} has no unit: give one, e.g. {which}<={limit}ms")
    if re.fullmatch(r"[0-9.]+\s*m", limit, re.IGNORECASE):  # minutes in the durations' grammar: a typo of ms here
        raise ValueError(f"{which}<={limit} is {limit[:-1].strip()} minutes: did you mean {which}<={limit}s?")
    limit_s = parse_duration_s(limit.replace("µ", "u"))
    if not limit_s > 0:
        raise ValueError(f"{which}<={limit}: no I/O takes no time; give a limit above 0")
    return LatencyObjective(fields[which], which, limit_s * 1e9)
