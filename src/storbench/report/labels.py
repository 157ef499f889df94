"""A point in words: the one label function every table, figure, export and message uses. Pure.

``nvme randrw 70% 4k qd16 4 jobs 2 clients rate_iops=100 read pool_size=3``: target, pattern (with its read
share when mixed), block size, iodepth, jobs and clients when not 1, fio options when asked for, direction when
asked for, and the lab settings that tell the labelled points apart.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from storbench.model import (
    Case,
    WorkloadPoint,
    counts_operations,
    is_metadata,
    is_object,
    is_volume_operation,
    operation_of,
    setting_text,
)
from storbench.stats.compare_cells import PointComparison
from storbench.stats.compare_match import MATCH_FIELDS
from storbench.stats.knee import Curve
from storbench.stats.point_summary import PointSummary, hidden_values
from storbench.units import format_block_size

# The parts a label can leave out, named like the fields they show.
PARTS = ("target", "rw", "bs", "iodepth", "numjobs", "clients", "direction")


def direction_label(rw: str, direction: str) -> str:
    """What a row's operations are: the direction for block I/O, the file operation for metadata (create, stat,
    delete), the S3 request for objects (PUT, GET, DELETE)."""
    return operation_of(rw, direction)


def rate_unit(rws: Iterable[str]) -> str:
    """A rate's unit for points of these patterns: IOPS for block I/O, ops/s for operations (a file created,
    stat'ed or deleted, an object request, a volume operation: each one timed operation, no I/O), both for a mix."""
    operations = [counts_operations(rw) for rw in rws]
    return "IOPS" if not any(operations) else "ops/s" if all(operations) else "IOPS/ops/s"


def interval_level(points: Iterable[PointSummary]) -> str:
    """The confidence of the points' intervals in a header or caption: "95%", or a run repeated `until: ci`'s own
    ("99%"; "95-99%" for points at several), which a header saying 95 % had misstated."""
    levels = sorted({e.confidence for p in points if (e := p.metric("iops")) is not None and e.has_interval})
    if not levels:
        return "95%"
    low, high = (f"{100 * level:g}" for level in (levels[0], levels[-1]))
    return f"{low}%" if low == high else f"{low}-{high}%"


def hidden_text(w: WorkloadPoint, field: str) -> str:
    """A field labels do not show by default (`stats.point_summary.HIDDEN_FIELDS`) as "name=value": ``size=1m``,
    ``runtime=10s``, ``direct=1``, the fio options as ``rate_iops=100 thinktime=5``."""
    value = getattr(w, field)
    if field in ("size_bytes", "file_size_bytes"):
        return f"{field.removesuffix('_bytes')}={format_block_size(value)}"
    if field in ("runtime_s", "ramp_s"):
        return f"{field.removesuffix('_s')}={value:g}s"
    if field == "direct":
        return f"direct={int(value)}"
    if field == "fio_options":
        return options_text(w)
    if field == "timeline_window_ms":  # set for the cases of a plan with faults (their timelines' window)
        return "with faults"
    return f"{field}={value}"


def block_size(p: PointSummary) -> str:
    """A point's block size as plans write it: ``4k``, ``1m``."""
    return format_block_size(p.case.workload.bs_bytes)


def options_text(w: WorkloadPoint) -> str:
    """The fio options of a workload as a plan's reader writes them: ``rate_iops=100 thinktime=5``."""
    return " ".join(f"{k}={v}" for k, v in w.fio_options)


def hidden_texts(w: WorkloadPoint) -> tuple[tuple[str, str], ...]:
    """(field, "name=value") of every field labels do not show by default that has a value."""
    return tuple((field, hidden_text(w, field)) for field, _ in hidden_values(w))


def distinct_texts(hidden: Sequence[tuple[tuple[str, str], ...]]) -> list[tuple[tuple[str, str], ...]]:
    """For each item's ``hidden_texts``, those of the fields whose text is not the same for every item: what
    tells items apart that a label would not show otherwise."""
    fields = {f for h in hidden for f, _ in h}
    varying = {f for f in fields if len({dict(h).get(f) for h in hidden}) > 1}
    return [tuple((f, t) for f, t in h if f in varying) for h in hidden]


def distinct_text(p: PointSummary, *, options: bool = False, omit: Collection[str] = ()) -> list[str]:
    """The texts of the fields that tell ``p`` from the points summarised with it (``PointSummary.distinct``), the
    fio options left out when a label shows them anyway (``options``)."""
    return [target_text(p.case.target, field) if field.startswith("target.") else hidden_text(p.case.workload, field)
            for field in p.distinct if field not in omit and not (options and field == "fio_options")]


def target_text(target: object, field: str) -> str:
    """A field of a target that tells it from another target of its name (``target.location``) as
    "location=/dev/a"."""
    name = field.removeprefix("target.")
    value = getattr(target, name, None)
    return f"{name}={format_block_size(value) if name.endswith('_bytes') and isinstance(value, int) else value}"


def varying_case_texts(cases: Sequence[Case]) -> dict[str, str]:
    """case id -> the hidden fields that tell it from the other ``cases`` ("dirs=2 size=2MiB"), for progress
    lines."""
    texts = distinct_texts([hidden_texts(c.workload) for c in cases])
    return {c.case_id: " ".join(t for _, t in found) for c, found in zip(cases, texts, strict=True)}


def point_label(p: PointSummary, *, omit: Collection[str] = (), lab_keys: Sequence[str] = (),
                direction: bool = True, options: bool = False, runs: bool = False) -> str:
    """``p`` in words, without the parts named in ``omit`` (see ``PARTS``); ``lab_keys`` are the lab settings
    to show (``varying_lab_keys``); ``runs``: led by its runs ("run 2: ...", where points of several runs are drawn
    side by side, see ``runs_apart``)."""
    parts = [f"run {','.join(map(str, p.run_ids))}:" if runs else "", p.target if "target" not in omit else ""]
    if "rw" not in omit:
        parts.append(p.rw)
    if p.case.workload.rwmixread is not None and "rwmixread" not in omit:
        parts.append(f"{p.case.workload.rwmixread}%")
    operations = is_metadata(p.rw) or is_object(p.rw)  # one operation at a time per job: no queue depth
    volume = is_volume_operation(p.rw)  # one Kubernetes operation per client: no blocks, no queue
    parts += [block_size(p) if "bs" not in omit and not volume else "",
              f"qd{p.iodepth}" if "iodepth" not in omit and not operations and not volume else ""]
    if p.numjobs != 1 and "numjobs" not in omit:
        parts.append(f"{p.numjobs} jobs")
    if p.clients != 1 and "clients" not in omit:
        parts.append(f"{p.clients} clients")
    if options:
        parts.append(options_text(p.case.workload))
    parts += distinct_text(p, options=options, omit=omit)
    # an operation says its direction itself, except a mix (getput) and the phases of rw: metadata
    if direction and "direction" not in omit and not volume and (not operations or p.rw in ("getput", "metadata")):
        parts.append(direction_label(p.rw, p.direction_name))
    parts.append(lab_text(p, lab_keys))
    return " ".join(part for part in parts if part)


def several_runs(points: Sequence[PointSummary]) -> bool:
    """Whether ``points`` are rows of several runs, or sets of runs (`show --run all`): a table says each row's."""
    return len({q.run_ids for q in points}) > 1


def runs_apart(points: Sequence[PointSummary]) -> bool:
    """Whether a case of ``points`` is a point of each of several runs (a report over runs of one plan that does not
    pool them): each point's label then says its runs, or two points of one case would read alike and be drawn as
    one line. Cases of one run each (a sweep spread over runs) need none: their points stay one line."""
    runs_of_case: dict[str, set[tuple[int, ...]]] = {}
    for q in points:
        runs_of_case.setdefault(q.case_id, set()).add(q.run_ids)
    return any(len(runs) > 1 for runs in runs_of_case.values())


def run_prefix(p: PointSummary, points: Sequence[PointSummary]) -> str:
    """'run 2: ' where ``points`` are rows of several runs (``several_runs``); '' where they are one run's, or
    pooled alike."""
    return f"run {','.join(map(str, p.run_ids))}: " if several_runs(points) else ""


def varying_lab_keys(points: Sequence[PointSummary]) -> list[str]:
    """Lab parameters whose value differs between the points (the ones worth a column)."""
    keys: dict[str, set[str]] = {}
    for p in points:
        for k, v in p.lab:
            keys.setdefault(k, set()).add(v)
    return [k for k, values in keys.items() if len(values) > 1 or any(k not in dict(p.lab) for p in points)]


def lab_text(point: PointSummary, keys: Sequence[str]) -> str:
    """``cache_size=64MiB pool_size=2``: the settings ``keys`` of the point, sizes with their unit."""
    params = dict(point.lab)
    return " ".join(f"{k}={setting_text(k, params[k])}" for k in keys if k in params)


def varying_comparison_lab(comparisons: Sequence[PointComparison]) -> frozenset[str]:
    """Lab keys (as 'lab.NAME') whose value differs between comparisons: the ones a label must show."""
    values: dict[str, set[object]] = {}
    for c in comparisons:
        for k, v in c.key:
            if k.startswith("lab."):
                values.setdefault(k, set()).add(v)
    return frozenset(k for k, v in values.items() if len(v) > 1)


def comparison_label(comparison: PointComparison, lab_keys: frozenset[str] = frozenset(), *,
                     direction: bool = True) -> str:
    """The matched point in words: 'disk randrw 70% 4k qd16 read osds=6' (numjobs/clients only when not 1, the
    fields a selector named left out, lab parameters only those in ``lab_keys``, as 'lab.NAME')."""
    matched = {k for k, _ in comparison.key}
    omit = [f for f in MATCH_FIELDS if f not in matched]
    lab = [k[4:] for k, _ in comparison.key if k in lab_keys]
    return point_label(comparison.candidate, omit=omit, lab_keys=lab, direction=direction)


def curve_label(curve: Curve, lab_keys: Sequence[str] = (), *, runs: bool = False) -> str:
    """What a saturation curve holds fixed: the point without its load axis (and the lab settings ``lab_keys``
    that tell it from the other curves, see ``curve_lab_keys``); ``runs``: led by the runs its points ran in
    (``curves_runs_apart``)."""
    ran = sorted({run for c in curve.points for run in c.point.run_ids}) if runs else []
    return (f"run {','.join(map(str, ran))}: " if runs else "") + point_label(
        curve.points[0].point, omit=(curve.axis,), lab_keys=lab_keys)


def curves_runs_apart(curves: Sequence[Curve]) -> bool:
    """Whether a case lies on curves of different runs (a report that keeps the runs of one plan apart draws a
    curve per run): their labels then say their runs."""
    return runs_apart([c.point for curve in curves for c in curve.points])


def curve_lab_keys(curves: Sequence[Curve]) -> list[str]:
    """The lab settings that differ between curves (a pool-size sweep gives a curve per pool size)."""
    return varying_lab_keys([curve.points[0].point for curve in curves])


def plans_of(run_ids: Sequence[int], verb: str = "") -> str:
    """'the plan of run 3', 'the plans of runs 2, 3': whose plans a line speaks of; with ``verb`` (in its plural
    form, "ask") that verb agreeing: 'the plan of run 3 asks', 'the plans of runs 2, 3 ask'."""
    several = len(run_ids) > 1
    s = "s" if several else ""
    said = f" {verb}{'' if several else 's'}" if verb else ""
    return f"the plan{s} of run{s} {', '.join(str(r) for r in run_ids)}{said}"
