"""What a curve holds fixed: the one typed key by which points are put on a load or block-size curve. Pure.

A curve runs along one axis (iodepth, numjobs or clients: the load; or the block size) with everything else of its
points' cases and direction the same. The sweep verdicts (`stats.point_verdicts.with_sweep_verdicts`), the report's
capped figures (`report.saturation_figures.capped_curves`, which draw the curves those verdicts were read from), and the
knee (`stats.knee.curves`) group points by `curve_key`; the one difference between them (whether runs part curves) is an
argument, not another field list. The adaptive search groups the cases it measures by `search_key`, the whole case but
its load: stricter, since a search chooses which cases run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from storbench.model import Case, Direction, LabPoint, TargetSpec, WorkloadPoint

LoadAxis = Literal["iodepth", "numjobs", "clients"]
Axis = Literal["iodepth", "numjobs", "clients", "bs_bytes"]
LOAD_AXES: tuple[LoadAxis, ...] = ("iodepth", "numjobs", "clients")
BLOCK_SIZE: Axis = "bs_bytes"


@dataclass(frozen=True)
class CurveKey:
    """A case and direction without the axis a curve runs along (that axis's field None). ``run_ids`` None: the
    runs a point was measured in do not part curves (the knee pools them); else only points of the same runs share
    a curve (the sweep verdicts: a verdict is read from one run's points, whose rounds can pair).

    Everything of the workload parts curves but the loads, which are fields of their own (and its block size on a
    block-size curve): a sweep of ramp, size, files, file size or directories beside iodepth had been put on one
    curve with two points at each load, its knee read from the mixture. The target as specified, not by name: runs
    of one plan on another path or with another size are other cases, each a point of its own, and keyed by name
    they had been two points at each load of one curve (a rise from load 1 to load 1 read as a knee)."""

    target: TargetSpec
    workload: WorkloadPoint  # its iodepth and numjobs 0 (they are the fields below), its bs 0 on a block-size curve
    direction: Direction | None
    lab: LabPoint
    iodepth: int | None
    numjobs: int | None
    clients: int | None
    run_ids: tuple[int, ...] | None


def axis_value(case: Case, axis: Axis) -> int:
    """Where a case sits along ``axis``: its iodepth, numjobs, clients or block size in bytes."""
    w = case.workload
    return {"iodepth": w.iodepth, "numjobs": w.numjobs, "clients": case.clients, "bs_bytes": w.bs_bytes}[axis]


def outstanding_ios(case: Case) -> int:
    """The load a case offers: iodepth x numjobs x clients (the I/Os it keeps in flight)."""
    return case.workload.iodepth * case.workload.numjobs * case.clients


def curve_key(case: Case, direction: Direction | None, axis: Axis, run_ids: tuple[int, ...] | None) -> CurveKey:
    """The key of the curve along ``axis`` that a case's point (in ``direction``) lies on. Pass the point's
    ``run_ids`` to keep runs apart, None to pool them (see ``CurveKey``)."""
    w = case.workload
    return CurveKey(
        target=case.target,
        workload=replace(w, iodepth=0, numjobs=0, bs_bytes=0 if axis == "bs_bytes" else w.bs_bytes),
        direction=direction, lab=case.lab,
        iodepth=None if axis == "iodepth" else w.iodepth, numjobs=None if axis == "numjobs" else w.numjobs,
        clients=None if axis == "clients" else case.clients, run_ids=run_ids)


@dataclass(frozen=True)
class SearchKey:
    """What the cases of one adaptive search share (`run_search` asks `stats.search` one load at a time for each):
    the whole case but its load along the searched axis — the target as specified, every workload field (the
    searched one 0), the clients (None when they are searched) and the lab. Stricter than ``CurveKey``: cases that
    differ in anything but the load are never one search."""

    target: TargetSpec
    workload: WorkloadPoint
    clients: int | None
    lab: LabPoint


def search_key(case: Case, axis: LoadAxis) -> SearchKey:
    """The search group a case belongs to when ``axis`` is searched."""
    w = case.workload
    if axis == "clients":
        return SearchKey(case.target, w, None, case.lab)
    load_free = replace(w, iodepth=0) if axis == "iodepth" else replace(w, numjobs=0)
    return SearchKey(case.target, load_free, case.clients, case.lab)
