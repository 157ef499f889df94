"""Baseline and candidate points matched: on typed values of their cases and directions (`POINT_VALUES`), the
fields two points must agree in and the reason when they do not (engine, direct, target kind, latency kind, ...
unless a selector names them; `engine_follows_from_kind`), each metric's Welch interval and verdict
(`compare_points`), and why two sides have no point in common (`no_common_point`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from storbench.fio.allowlist import ENGINES_BY_TARGET_KIND
from storbench.model import moves_data
from storbench.stats import match
from storbench.stats.compare_cells import (
    CellComparison,
    PointComparison,
    Verdict,
    cell_level,
    cost_cell_count,
    verdict_of,
)
from storbench.stats.estimate import CONFIDENCE, Estimate, welch_difference
from storbench.stats.metrics import BLACKOUT, COMPARE_METRICS, DESCRIPTIVE_METRICS, FAILOVER_METRICS, Metric
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.selectors import Selector, select
from storbench.stats.summary import summarize_points
from storbench.units import format_block_size

# Fields that identify a point when matching baseline and candidate (unless a selector names them).
MATCH_FIELDS = ("target", "rw", "rwmixread", "bs", "iodepth", "numjobs", "clients", "direction")
# Fields that must be equal for a comparison to mean anything (unless forced or named by a selector).
# ``lat_percentiles_from``: what p95 and p99 are, total latency or completion latency standing in for it (an import
# whose fio output has no total-latency bins); a point with no percentiles differs from neither.
# ``files``, ``file_size`` and ``dirs``: a metadata cycle's or an S3 workload's counts (objects are files), which a
# plan sweeps like any other workload field: points of a sweep over them pair value with value.
COMPARABLE_FIELDS = ("target_kind", "ioengine", "direct", "runtime_s", "ramp_s", "fio_options",
                     "lat_percentiles_from", "fio_versions", "files", "file_size", "dirs")
# selector keys that name a field above by another of its names
_SAME_FIELD = {"objects": "files", "file_size_bytes": "file_size"}
_REASON_NAMES = {"lat_percentiles_from": "latency kind"}


# What a point is matched on (MATCH_FIELDS) and must agree in (COMPARABLE_FIELDS): typed values of its case and
# direction (the block size in bytes, fio options as pairs), so two points are told apart by the model.
POINT_VALUES: Mapping[str, Callable[[PointSummary], object]] = {
    "target": lambda p: p.case.target.name,
    "rw": lambda p: p.case.workload.rw,
    "rwmixread": lambda p: p.case.workload.rwmixread,
    "bs": lambda p: p.case.workload.bs_bytes,
    "iodepth": lambda p: p.case.workload.iodepth,
    "numjobs": lambda p: p.case.workload.numjobs,
    "clients": lambda p: p.case.clients,
    "direction": lambda p: p.direction,
    "target_kind": lambda p: p.case.target.kind,
    "ioengine": lambda p: p.case.workload.ioengine,
    "direct": lambda p: p.case.workload.direct,
    "runtime_s": lambda p: p.case.workload.runtime_s,
    "ramp_s": lambda p: p.case.workload.ramp_s,
    "fio_options": lambda p: p.case.workload.fio_options,
    "lat_percentiles_from": lambda p: p.lat_percentiles_from,
    "fio_versions": lambda p: p.fio_versions,
    "files": lambda p: p.case.workload.files,
    "file_size": lambda p: p.case.workload.file_size_bytes,
    "dirs": lambda p: p.case.workload.dirs or (1 if p.case.workload.file_size_bytes else None),  # as `match` reads it
}


def _value(point: PointSummary, field: str) -> object:
    return POINT_VALUES[field](point)


def _text(point: PointSummary, field: str) -> str:
    """A field's value as the messages that name it show it (``4k``, ``rate_iops=100``, ``fio-3.33,fio-3.36``)."""
    value = _value(point, field)
    if field == "bs":
        return format_block_size(point.case.workload.bs_bytes)
    if field == "fio_options":
        return " ".join(f"{k}={v}" for k, v in point.case.workload.fio_options)
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return "" if value is None else str(value)


def _differs(base: PointSummary, cand: PointSummary, field: str) -> bool:
    if field == "lat_percentiles_from":  # no percentiles on a side: nothing set against anything
        return bool(base.lat_percentiles_from and cand.lat_percentiles_from) \
            and base.lat_percentiles_from != cand.lat_percentiles_from
    return _value(base, field) != _value(cand, field)


def _reason(base: PointSummary, cand: PointSummary, differing: Sequence[str]) -> str:
    """"different ioengine (libaio vs io_uring), latency kind (p95, p99: clat vs lat)": what keeps two points apart."""
    if not differing:
        return ""
    parts = []
    for field in differing:
        name = _REASON_NAMES.get(field, field.replace("_", " "))
        if field == "lat_percentiles_from":
            parts.append(f"{name} (p95, p99: {base.lat_percentiles_from} vs {cand.lat_percentiles_from})")
        elif field == "direct":
            parts.append(f"direct ({int(base.case.workload.direct)} vs {int(cand.case.workload.direct)})")
        elif field in ("ioengine", "target_kind"):
            parts.append(f"{name} ({_text(base, field)} vs {_text(cand, field)})")
        else:
            parts.append(name)
    return "different " + ", ".join(parts)


def engine_follows_from_kind(base: PointSummary, cand: PointSummary) -> bool:
    """Whether two points' engines differ because their target kinds dictate them (an rbd image is driven by the
    rbd engine, a local path by a kernel one): one side's engine could not drive the other side's kind. An
    `imported` target's kind is not known, so any engine could have driven it: its engine never follows."""
    engines_a = ENGINES_BY_TARGET_KIND.get(base.target_kind)
    engines_b = ENGINES_BY_TARGET_KIND.get(cand.target_kind)
    if engines_a is None or engines_b is None or base.target_kind == cand.target_kind:
        return False
    return cand.case.workload.ioengine not in engines_a or base.case.workload.ioengine not in engines_b


DERIVED_LAB_KEYS = {"db_device": {"db_size"}, "osds_per_device": {"osds", "osd_size", "devices", "device_size"}}


def compare_points(baseline: Sequence[PointSummary], candidate: Sequence[PointSummary],
                   ignore: frozenset[str], *, force: bool = False,
                   metrics: Sequence[Metric] = COMPARE_METRICS, confidence: float = CONFIDENCE
                   ) -> list[PointComparison]:
    """Pair points that agree on every match field not named by a selector; compare each metric.

    A candidate point is paired with the baseline point that also has the same workload (ioengine, direct,
    runtime, ramp, fio options, target kind, latency kind) when there is one — so a plan sweeping ioengine compares
    io_uring with io_uring — and otherwise with any point of the same match key, marked not comparable (with the
    reason) unless ``ignore`` (the fields the selectors name) holds each field that differs. Naming ``target``
    names its kind too, and an engine only where the kinds dictate it (``engine_follows_from_kind``): libaio on
    one local disk against io_uring on another, or on an imported target, stays not comparable.
    """
    ignore = ignore | {_SAME_FIELD[k] for k in ignore if k in _SAME_FIELD}
    match_fields = [f for f in MATCH_FIELDS if f not in ignore]
    if "target" in ignore:  # comparing targets: their kind (and the engine a kind dictates) is the question
        ignore = ignore | {"target_kind"}
    lab_ignored = {k for k in ignore if k not in match.FIELDS}
    for named, derived in DERIVED_LAB_KEYS.items():  # settings that follow from a named one differ with it
        if named in lab_ignored:
            lab_ignored |= derived

    def lab_key(point: PointSummary) -> tuple[tuple[str, object], ...]:
        return tuple(("lab." + k, v) for k, v in point.lab if k not in lab_ignored)

    workload_fields = [f for f in COMPARABLE_FIELDS if f not in ignore and f != "fio_versions"]
    by_key: dict[tuple[tuple[str, object], ...], PointSummary] = {}
    by_full_key: dict[tuple[tuple[str, object], ...], PointSummary] = {}
    for point in baseline:
        key = tuple((f, _value(point, f)) for f in match_fields) + lab_key(point)
        by_key.setdefault(key, point)
        by_full_key.setdefault(key + tuple((f, _value(point, f)) for f in workload_fields), point)
    out: list[PointComparison] = []
    for point in candidate:
        key = tuple((f, _value(point, f)) for f in match_fields) + lab_key(point)
        base = by_full_key.get(key + tuple((f, _value(point, f)) for f in workload_fields)) or by_key.get(key)
        if base is None:
            continue
        differing = [f for f in COMPARABLE_FIELDS if f not in ignore and _differs(base, point, f)]
        if "target" in ignore and "ioengine" in differing and engine_follows_from_kind(base, point):
            differing.remove("ioengine")  # rbd, nfs and s3 targets have their own engine
        comparable = force or not differing
        reason = _reason(base, point, differing)
        cells = []
        costs = cost_cell_count(base, point)  # the cost line's cells: its error rate shared
        for metric in (*metrics, *DESCRIPTIVE_METRICS, *FAILOVER_METRICS):
            if metric.field == "bw_bytes_per_s" and not moves_data(point.rw):
                continue  # a create, stat or delete moves no data: its "bandwidth" is operations x bs
            b, c = base.metric(metric.field), point.metric(metric.field)
            # a fault's figure may be 0 on the baseline's side (no stall): its change is then in seconds or points
            judged = b is not None and c is not None and (b.mean or (metric in FAILOVER_METRICS and c.mean))
            if judged and metric in FAILOVER_METRICS and not (_every_fault(base, b) and _every_fault(point, c)):
                judged = False  # a figure some faults did not give (I/O never back, not recovered): not a sample
            difference = (welch_difference(b, c, cell_level(metric, confidence, costs), quantised=metric.quantised)
                          if judged and b is not None and c is not None else None)
            if metric in (*DESCRIPTIVE_METRICS, *FAILOVER_METRICS) and difference is None:
                continue  # where the time goes, what an I/O costs, what a fault did: only where both sides have it
            verdict = verdict_of(metric, difference) if comparable else Verdict.NOT_COMPARABLE
            cells.append(CellComparison(metric, b, c, difference, verdict))
        out.append(PointComparison(key, base, point, comparable, reason, tuple(cells)))
    return out


def _every_fault(point: PointSummary, figure: Estimate | None) -> bool:
    """Whether a failover figure stands for every repetition of the point that has failover figures (the blackout
    has one in each): where the I/O never came back or was not shown back, the first I/O or the recovery time of
    the others is the best of them, and judged against another side it calls the worse setting better."""
    every = point.metric(BLACKOUT.field)
    return figure is not None and every is not None and figure.n == every.n


def side_differences(baseline: Sequence[PointSummary], candidate: Sequence[PointSummary], ignore: frozenset[str]
                     ) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(field, the baseline's values, the candidate's) for every field points match on or must agree in whose
    values on one side are none of the other side's, the selectors' fields left out (``ignore``): what keeps
    the two sides' points apart, or makes them not comparable, everywhere."""
    ignore = ignore | {_SAME_FIELD[k] for k in ignore if k in _SAME_FIELD}
    fields = [f for f in (*MATCH_FIELDS, *COMPARABLE_FIELDS) if f not in ignore and f != "fio_versions"]
    if "target" in ignore:
        fields = [f for f in fields if f != "target_kind"]
    if "rw" in ignore:  # the direction follows from rw: reads and writes never compare
        fields = [f for f in fields if f != "direction"]
    found = []
    for field in fields:
        a = sorted({_text(p, field) for p in baseline} - {""} if field == "lat_percentiles_from"
                   else {_text(p, field) for p in baseline})
        b = sorted({_text(p, field) for p in candidate} - {""} if field == "lat_percentiles_from"
                   else {_text(p, field) for p in candidate})
        if a and b and not set(a) & set(b):
            found.append((field, tuple(a), tuple(b)))
    labs_a = {k: {v for p in baseline for key, v in p.lab if key == k} for p in baseline for k, _ in p.lab}
    labs_b = {k: {v for p in candidate for key, v in p.lab if key == k} for p in candidate for k, _ in p.lab}
    for key in sorted(set(labs_a) & set(labs_b)):
        if key not in ignore and not labs_a[key] & labs_b[key]:
            found.append((key, tuple(sorted(labs_a[key])), tuple(sorted(labs_b[key]))))
    return found


def _values_text(values: Sequence[str]) -> str:
    shown = [v if v else "none" for v in values[:3]]
    return ", ".join(shown) + (f" and {len(values) - 3} more" if len(values) > 3 else "")


def no_common_point(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                    tags: Mapping[int, tuple[str, ...]]) -> str:
    """Why two selectors' sides have no point in common, in one line: the fields whose values differ between
    every point of one side and every point of the other (``side_differences``), and that naming them in the
    selectors compares across them."""
    ignore = baseline.keys | candidate.keys
    found = side_differences(summarize_points(select(observations, baseline, tags)),
                             summarize_points(select(observations, candidate, tags)), ignore)
    if not found:  # the points differ in combinations of values (or in direction, where rw was selected on)
        return "baseline and candidate have no point in common"
    parts = [f"{field.replace('_', ' ') if field in COMPARABLE_FIELDS else field} "
             f"({_values_text(a)} vs {_values_text(b)})" for field, a, b in found]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    them = "it" if len(found) == 1 else "them"
    text = f"no point in common: the sides differ in {listed}; name {them} in the selectors to compare across {them}"
    if all(len(a) == 1 and len(b) == 1 for _, a, b in found):

        def named(selector: Selector, side: int) -> str:  # a field a side has no value of is left out of it
            return ",".join([*(f"{k}={v}" for k, v in selector.pairs),
                             *(f"{f}={v[side][0]}" for f, *v in found if v[side][0] not in ("", None))])

        text += f" (--baseline {named(baseline, 0)} --candidate {named(candidate, 1)})"
    return text
