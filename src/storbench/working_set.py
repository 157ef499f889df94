"""What a case writes before it can measure (pure): its files, images or laid-out metadata files, for the
disk-space checks, the ETA's layout time and the watchdog."""

from __future__ import annotations

from storbench.model import NFS_METADATA_ENGINE, Case, is_metadata, is_object, is_volume_operation
from storbench.units import MAX_SIZE_BYTES, parse_job_size_bytes

__all__ = ["working_set_bytes"]


def working_set_bytes(case: Case) -> int:
    """Bytes written before this case can measure: one file of ``size`` per job and client (files, NFS, pods'
    volumes), one image of ``size`` per client (RBD, written once when created), nothing for a raw device."""
    w = case.workload
    if is_metadata(w.rw):  # stat and delete find files fio laid out (create's are empty, as the NFS engine's all are)
        empty = w.rw == "create" or w.ioengine == NFS_METADATA_ENGINE
        return 0 if empty else (w.files or 0) * (w.file_size_bytes or 0) * w.numjobs * case.clients
    if is_object(w.rw) or is_volume_operation(w.rw):  # objects PUT every repetition; volume operations write none
        return 0
    size = case.workload.size_bytes or case.target.size_bytes or 0
    if case.target.kind in ("block", "rbd"):
        return 0 if case.target.kind == "block" else size * case.clients
    # fio lays each of a job's nrfiles files out to its offset (offset + its number x offset_increment) plus its
    # share of the size after it
    options = dict(w.fio_options)
    offset, step = (_absolute_size(options.get(name)) for name in ("offset", "offset_increment"))
    files = int(options.get("nrfiles", "1"))
    return sum(size + files * (offset + job * step) for job in range(w.numjobs)) * case.clients


def _absolute_size(value: str | None) -> int:
    """An `offset` or `offset_increment` in bytes as fio reads it (`units.parse_job_size_bytes`); 0 when not given
    or a share of the file (``50%``: inside it); beyond the largest size, that largest (no disk holds it)."""
    if value is None or value.endswith("%"):
        return 0
    try:
        return parse_job_size_bytes(value)
    except ValueError:
        return MAX_SIZE_BYTES
