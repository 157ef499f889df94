"""The jobs that clear storbench's files off an NFS export (pure): through its NFS metadata engine, by name, one
unlink a file: the files it laid out (`render_nfs_removal_job`), and what a metadata operation may have left
(`render_nfs_clear_job`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from storbench.fio.jobfile import MAX_JOB_LINE, JobBinding, client_binding, job_line, metadata_binding
from storbench.model import METADATA_RW, Case


def render_nfs_removal_job(url: str, engine: str, names: Sequence[str]) -> str:
    """A job that deletes ``names`` (storbench's own test files, laid out by it) from the NFS export at ``url``
    through storbench's NFS metadata engine: one unlink per file."""
    if not names or not all(re.fullmatch(r"storbench\.[A-Za-z0-9.]+", n) for n in names):
        raise ValueError("only storbench's own test file names are removed")
    lines = ["; storbench: removing its test files", "[global]", job_line("ioengine", f"external:{engine}"),
             job_line("nfsmeta_url", url), job_line("nfsmeta_op", "delete"), job_line("rw", METADATA_RW["delete"][1]),
             job_line("bs", "4k"), job_line("filesize", "4k")]
    batch: list[str] = []  # a section of names a line may hold (many clients' files had made one line too long)
    for name in [*names, ""]:
        if batch and (not name or len("filename=") + len(":".join([*batch, name])) > MAX_JOB_LINE):
            lines += [f"[remove{len([x for x in lines if x.startswith('[remove')]) + 1}]",
                      job_line("filename", ":".join(batch))]
            batch = []
        if name:
            batch.append(name)
    return "\n".join(lines) + "\n"


def render_nfs_clear_job(case: Case, binding: JobBinding) -> str:
    """A job that deletes every file a metadata operation of ``case`` on an NFS export may have left, each client's
    and each job's by its name (a phase its runtime cut, a repetition killed): a create over them would open them,
    not create them, and they would stay on the export. A name that is not there is passed over."""
    w = case.workload
    if w.files is None or binding.external_engine is None:
        raise ValueError("only a metadata operation through storbench's NFS engine has files to clear")
    lines = ["; storbench: removing what a metadata operation left", "[global]",
             job_line("ioengine", f"external:{binding.external_engine}"), job_line("nfsmeta_op", "delete"),
             job_line("rw", METADATA_RW["delete"][1]), job_line("bs", "4k"), job_line("filesize", "4k"),
             job_line("iodepth", "1"), job_line("numjobs", str(w.numjobs)), job_line("nrfiles", str(w.files)),
             job_line("nfsmeta_missing_ok", "1")]
    for index in range(1, case.clients + 1):
        own = dict(metadata_binding(client_binding(binding, index) if case.clients > 1 else binding, w.rw).options)
        lines += [f"[clear{index}]", job_line("nfsmeta_url", own["nfsmeta_url"]),
                  job_line("filename_format", own["filename_format"])]
    return "\n".join(lines) + "\n"
