"""fio's per-window logs (pure): the rows of an IOPS or latency log written with ``log_avg_msec`` and
``log_unix_epoch=1`` (and, for latency, ``log_max_value=1``).

Each row is ``time (ms since the epoch), value, data direction, block size[, offset or priority]``; with
``log_avg_msec`` a row closes one window: the IOPS log's value is the window's rate per second, the latency log's
the longest completion latency in it (ns). fio writes no row for a window in which nothing completed, so a stall
is a gap between rows (seen with fio 3.33: a 1.2 s stall of the volume lab's pacer left one 1,201 ms step in a
100 ms log, and the I/O caught in it logged a 1.204 s latency).
"""

from __future__ import annotations

from dataclasses import dataclass

DIRECTIONS = {0: "read", 1: "write", 2: "trim"}


@dataclass(frozen=True)
class LogRow:
    t_ms: int  # when the window closed, ms since the epoch
    value: int  # IOPS over the window (per second), or the window's longest latency (ns)
    direction: str  # "read", "write" or "trim"


def parse_log(text: str) -> tuple[LogRow, ...]:
    """The rows of one fio log, in file order. ValueError names the first line that is not a fio log row; a last
    line without its newline that is none is a log cut short (a stream that ended, a log kept to its first
    characters): the rows before it are the log."""
    rows = []
    lines = text.splitlines()
    cut_short = bool(text) and not text.endswith("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if cut_short and number == len(lines) and not _is_row(line):
            break
        fields = [field.strip() for field in line.split(",")]
        try:
            if len(fields) < 3:
                raise ValueError
            t_ms, value, ddir = int(fields[0]), int(fields[1]), int(fields[2])
            direction = DIRECTIONS[ddir]
        except (ValueError, KeyError):
            raise ValueError(f"line {number} is not a fio log row (time, value, direction, ...): {line[:80]!r}") \
                from None
        if t_ms < 0 or value < 0:
            raise ValueError(f"line {number} has a negative time or value: {line[:80]!r}")
        rows.append(LogRow(t_ms, value, direction))
    return tuple(rows)


def _is_row(line: str) -> bool:
    try:
        parse_log(line + "\n")
    except ValueError:
        return False
    return True
