"""CPU cycles beside a repetition with `perf stat` (pure): the command for a process group or the whole host, and
its CSV output read back (``perf stat -x,``: value, unit, event, run time, percent enabled, ...).

A machine without a CPU performance-monitoring unit (a VM without a virtual PMU) has no ``cpu`` (or hybrid
``cpu_core`` / ``cpu_atom``) directory under /sys/bus/event_source/devices, and perf prints ``<not supported>``
for cycles there: ``cycles_unavailable`` says why in one sentence.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

CYCLES_EVENT = "cycles"
PMU_DIRECTORY = "/sys/bus/event_source/devices"
CPU_PMUS = ("cpu", "cpu_core", "cpu_atom")
HOST_ENTITY = "host"  # the whole machine (perf stat -a), every process and the kernel


def perf_stat_arguments(perf: str, event: str, pids: Sequence[int] | None, output: str) -> list[str]:
    """Count ``event`` in the processes ``pids`` (every thread, and threads they start) or, with None, on every CPU
    of the machine, until perf is interrupted; the counts go to ``output`` as CSV."""
    target = ["-a"] if pids is None else ["-p", ",".join(str(pid) for pid in sorted(pids))]
    return [perf, "stat", "-x", ",", "-e", event, *target, "-o", output]


def parse_perf_stat(text: str, event: str) -> tuple[float | None, str | None]:
    """(count, None), or (None, why not): perf's own word (``<not supported>``, ``<not counted>``) or no line for
    the event. A modifier perf appends (``cycles:u``) belongs to the event."""
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split(",")
        if len(fields) < 3 or fields[2].split(":")[0] != event:
            continue
        value = fields[0].strip()
        if value.startswith("<"):
            return None, f"perf stat says {value} for {event}"
        try:
            return float(value), None
        except ValueError:
            return None, f"perf stat printed {value!r} for {event}"
    return None, f"perf stat printed no {event} count"


def cycles_unavailable(perf: str | None, pmus: Collection[str]) -> str | None:
    """Why cycles cannot be counted on this machine (None: they can): no perf, or no CPU PMU among ``pmus`` (the
    names under PMU_DIRECTORY)."""
    if perf is None:
        return "perf is not installed"
    if not any(pmu in pmus for pmu in CPU_PMUS):
        return (f"this machine exposes no CPU performance counters (no cpu PMU under {PMU_DIRECTORY}, only "
                f"{', '.join(sorted(pmus)) or 'nothing'}: a VM without a virtual PMU)")
    return None
