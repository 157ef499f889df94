"""What the store gives back: a run's provenance and a stored repetition with its case. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.model.case import Case
from storbench.model.fault_record import FaultRecord, WriteCheck
from storbench.model.measure import ClientMeasurement
from storbench.model.operations import Status
from storbench.run_design import NO_DESIGN, RunDesign
from storbench.telemetry.series import RepetitionTelemetry

__all__ = ["MergedFrom", "RunInfo", "StoredRepetition"]


@dataclass(frozen=True)
class MergedFrom:
    """Where a run merged from another storbench database came from: that file's name and the run's id there."""

    database: str
    run_id: int
    merged_at_s: float


@dataclass(frozen=True)
class RunInfo:
    run_id: int
    plan_name: str
    plan_text: str
    source: str
    storbench_version: str
    fio_version: str
    host: str
    kernel: str
    run_order: str
    seed: int
    tags: tuple[str, ...]
    started_at_s: float
    finished_at_s: float | None
    mem_total_bytes: int | None = None
    cpu_count: int | None = None
    plan_path: str | None = None  # the plan file a `run` read (None: imports, and runs stored before it was kept)
    design: RunDesign = NO_DESIGN  # what its plan asked, stored when it was created (run_design.py)
    labels: tuple[tuple[str, str], ...] = ()  # `run --label KEY=VALUE`, sorted by key
    merged_from: MergedFrom | None = None  # a run merged from another database (`storbench import OTHER.db`)
    software: tuple[tuple[str, str], ...] = ()  # its labs' software versions (("ceph", "16.2.15")), sorted by name


@dataclass(frozen=True)
class StoredRepetition:
    """A repetition as stored, with its case and its clients' measurements."""

    repetition_id: int
    run_id: int
    case: Case
    rep_index: int
    status: Status
    started_at_s: float
    finished_at_s: float
    fio_version: str
    error: str
    clients: tuple[ClientMeasurement, ...]
    job_text: str = ""
    telemetry: RepetitionTelemetry | None = None
    start_skew_s: float | None = None
    logs: tuple[tuple[str, str], ...] = ()  # fio's timeline logs, (file name, text): a plan with faults
    faults: tuple[FaultRecord, ...] = ()  # what its faults did, in order
    write_check: WriteCheck | None = None  # what `check_writes` read back after it
    filesystem: str = ""  # the filesystem its target's directory was on, as the run found it ('' unknown, a device)
