"""A case's files or objects laid out before its measurement (pure): which cases are, and the job texts that do it
and then measure alone.

fio lays a job's files out after its launch, and a job with an unmeasured fill section (`FILL_JOB`: an S3 GET's
objects PUT, an NFS export's files made for stat and delete) does that first too: a plan's faults, timed from
fio's launch, would fall across it. Before such a case's first repetition with faults (before each, where its
measurement removes them), the run loop lays them out with the job's set-up alone, or its fill section alone, and
then runs the job without its fill.
"""

from __future__ import annotations

from storbench.fio.jobfile import JobBinding, job_line
from storbench.model import FILL_JOB, NFS_METADATA_ENGINE, Case, is_metadata, is_object, is_volume_operation

FILL_HEADER = f"[{FILL_JOB}]"
# where a job run without its fill had it: said in the job text stored with the result
FILLED_NOTE = f"; [{FILL_JOB}] ran alone before this job: its files or objects were made first, before the faults"


def has_fill_section(case: Case) -> bool:
    """Whether ``case``'s job makes its objects or files in an unmeasured section before the measured one
    (`jobfile.render_job`): an S3 GET, GET/PUT mix or delete (their objects PUT), a stat or delete on an NFS export
    through storbench's engine (their empty files made)."""
    w = case.workload
    return ((is_object(w.rw) and w.rw != "put")
            or (w.ioengine == NFS_METADATA_ENGINE and w.rw in ("stat", "delete")))


def lays_out_at_start(case: Case, binding: JobBinding) -> bool:
    """Whether fio lays ``case``'s files or objects out at its start, before any measured I/O: a job with a fill
    section, and block I/O, stat and delete (not create and the metadata cycle, whose files the measurement makes,
    nor object or volume operations) on files in a directory (a path, a CephFS mount, a pvc's mounted claim; a
    device, an RBD image and an NFS export, laid out with its lab, have none to lay out)."""
    rw = case.workload.rw
    return has_fill_section(case) or (
        any(key == "directory" for key, _ in binding.options)
        and not ((is_metadata(rw) and rw not in ("stat", "delete")) or is_object(rw) or is_volume_operation(rw)))


def consumes_its_files(case: Case) -> bool:
    """Whether the files or objects laid out for ``case`` are laid out again before each repetition that needs
    them: its measurement removes them (a delete; a stat through the NFS engine unlinks its files after the job),
    or another case's may (an S3 get's objects are the same as a delete_object's of the same size on the target,
    and a GET of a deleted object reads as zeroes, not an error), as its fill section had made them anew in each
    repetition."""
    return case.workload.rw == "delete" or has_fill_section(case)


def create_only_job(job_text: str) -> str:
    """The same job with fio's ``create_only``: its set-up alone (the files laid out), no I/O; a plan's
    ``startdelay`` and ``pre_read`` (pass-through options, in the job's section) set back at its end, where they
    would otherwise delay or follow the layout (a job of one section: what `lays_out_at_start` takes)."""
    head, global_line, rest = job_text.partition("[global]\n")
    if not global_line or not rest.endswith("\n"):
        raise ValueError("a job storbench renders has a [global] section and ends with a line")
    undone = "".join(f"{job_line(key, '0')}\n" for key in ("startdelay", "pre_read")
                     if any(line.startswith(f"{key}=") for line in rest.split("\n")))
    return f"{head}{global_line}{job_line('create_only', '1')}\n{rest}{undone}"


def _fill_bounds(lines: list[str]) -> tuple[int, int]:
    """Where a job's fill section is among its lines: [start, end), end at the next section's header."""
    if lines.count(FILL_HEADER) != 1:
        raise ValueError("not a storbench job with one fill section")
    start = lines.index(FILL_HEADER)
    end = next((k for k in range(start + 1, len(lines)) if lines[k].startswith("[") and lines[k].endswith("]")),
               None)
    if end is None:
        raise ValueError("a fill section is followed by the measured one")
    return start, end


def layout_job(job_text: str) -> str:
    """The job that lays a case's files or objects out: its fill section alone (the measured sections left out),
    or for a job without one, its set-up alone (`create_only_job`)."""
    if FILL_HEADER not in job_text.split("\n"):
        return create_only_job(job_text)
    lines = job_text.split("\n")
    _, end = _fill_bounds(lines)
    return "\n".join(lines[:end]) + "\n"


def without_fill(job_text: str) -> str:
    """The job with its fill section left out (its files or objects laid out before it), a comment line in its
    place (`FILLED_NOTE`); a job without one as it is."""
    if FILL_HEADER not in job_text.split("\n"):
        return job_text
    lines = job_text.split("\n")
    start, end = _fill_bounds(lines)
    return "\n".join([*lines[:start], FILLED_NOTE, *lines[end:]])
