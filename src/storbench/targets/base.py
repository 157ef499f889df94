"""What every target kind hands the run: a prepared target (how it appears in job files, what is recorded about
it), and the name format of storbench's test files."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.fio.jobfile import JobBinding
from storbench.model import TargetSpec

FILENAME_FORMAT = "storbench.$jobnum.$filenum"


@dataclass(frozen=True)
class PreparedTarget:
    """A checked target: how it appears in job files, and what we record about it."""

    spec: TargetSpec
    binding: JobBinding
    details: tuple[tuple[str, str], ...]
    laid_out: tuple[str, ...] = ()  # test files storbench laid out where no directory is ours (an NFS export)
