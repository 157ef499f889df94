"""The watchdog (pure): the longest a case's fio, or its layout alone, may rightly take before storbench calls it
hung and stops it. Generous on purpose: the ETA (`schedule.fio_seconds`) guesses how soon a size-based section ends;
a watchdog must not."""

from __future__ import annotations

from storbench.fio.layout import has_fill_section
from storbench.model import Case, is_metadata, is_object, is_volume_operation
from storbench.schedule import FIO_STARTUP_S
from storbench.working_set import working_set_bytes

__all__ = ["fill_limit_s", "fio_limit_s", "layout_seconds", "watchdog_seconds"]

# Slowest layout speed the watchdog allows for before calling fio hung.
WATCHDOG_LAYOUT_BYTES_PER_S = 20 * 1024 * 1024
# Slowest rate of an unmeasured fill's requests (PUTs, NFS creates) a job, before calling fio hung.
WATCHDOG_FILL_REQUESTS_PER_S = 10.0
# ... and of all the jobs' requests together, on the one server they all reach
WATCHDOG_FILL_TOTAL_REQUESTS_PER_S = 50.0
# Slowest rate of the files fio lays out for a metadata case (stat, delete), all jobs' and clients' together: many
# small files are made at a file system's create rate, not at a layout's bytes a second (1.6 million files of 4 KiB,
# 6 GiB, had 5 minutes at 20 MiB/s; CephFS makes 1,000 to 3,000 a second)
WATCHDOG_LAYOUT_FILES_PER_S = 200.0


def fio_limit_s(case: Case) -> float:
    """The longest a case's fio may rightly take: each section it runs in turn up to the runtime (the ETA's
    `fio_seconds` guesses how soon a size-based one ends; a watchdog must not), its ramp and `startdelay`."""
    w = case.workload
    if is_volume_operation(w.rw):
        return w.runtime_s
    if w.rw == "metadata":  # create, stat and delete in turn
        sections = 3
    elif is_metadata(w.rw) and w.rw != "create" and not has_fill_section(case):  # fio lays the files out first
        sections = 2
    else:
        sections = 1
    return sections * w.runtime_s + fill_limit_s(case) + w.ramp_s + w.start_delay_s[1] + FIO_STARTUP_S


def fill_limit_s(case: Case) -> float:
    """The longest an unmeasured fill section may rightly take (`has_fill_section`; no runtime caps it, whose end
    had left the measured GETs and deletes meeting objects never PUT): its bytes at the slowest layout speed
    allowed, and its requests at the slowest rates allowed, a job's and all jobs' together."""
    if not has_fill_section(case):
        return 0.0
    w = case.workload
    files = w.files or 0
    written = files * w.bs_bytes * w.numjobs * case.clients if is_object(w.rw) else 0  # NFS: empty files
    # each job's requests, and all of them at once on one server (16 clients of 32 jobs: 512 jobs one NFS server or
    # radosgw answers)
    requests_s = max(files / WATCHDOG_FILL_REQUESTS_PER_S,
                     files * w.numjobs * case.clients / WATCHDOG_FILL_TOTAL_REQUESTS_PER_S)
    return written / WATCHDOG_LAYOUT_BYTES_PER_S + requests_s


def _layout_s(case: Case) -> float:
    """The longest fio's own layout of a case may rightly take: its bytes at the slowest layout speed allowed, and
    a metadata case's files (stat, delete: fio makes them before it measures) at the slowest create rate."""
    w = case.workload
    made = is_metadata(w.rw) and w.rw not in ("create", "metadata") and not has_fill_section(case)
    files_s = (w.files or 0) * w.numjobs * case.clients / WATCHDOG_LAYOUT_FILES_PER_S if made else 0.0
    return max(working_set_bytes(case) / WATCHDOG_LAYOUT_BYTES_PER_S, files_s)


def watchdog_seconds(case: Case, grace_s: float) -> float:
    return fio_limit_s(case) + _layout_s(case) + grace_s


def layout_seconds(case: Case, grace_s: float) -> float:
    """The watchdog of a case's layout alone (`Executor.lay_out`): its files at the slowest layout speed and
    create rate allowed (`_layout_s`) and fio's start-up (the layout job sets a plan's startdelay back:
    `layout.create_only_job`), or a fill section's run (`fill_limit_s`)."""
    return _layout_s(case) + fill_limit_s(case) + FIO_STARTUP_S + grace_s
