"""Saturation in words and as a table: each curve's knee (or why there is none: still rising, undecided and what
would tell, latency flat), its peak and the best load within a latency objective. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table

from storbench.model.objective import LatencyObjective
from storbench.report.labels import curve_lab_keys, curve_label, curves_runs_apart, rate_unit
from storbench.report.tables import plain_cell
from storbench.stats.knee import MIN_LATENCY_GROWTH, Curve, CurvePoint, Knee, KneeKind, best_under_objective
from storbench.stats.slo import Verdict, verdict
from storbench.stats.trend import FLAT_MARGIN, what_would_tell
from storbench.units import format_latency_ns


def _point_figures(point: CurvePoint) -> str:
    return f"{point.iops:,.0f} {rate_unit([point.point.rw])}, p99 {format_latency_ns(point.lat_p99_ns)}"


def _knee_text(point: CurvePoint, axis: str) -> str:
    return f"{axis}={point.load}: {_point_figures(point)}"


def undecided_text(knee: Knee, points: Sequence[CurvePoint], axis: str) -> str:
    """An undecided curve in words: which change could not be told, its interval, and what would tell."""
    change = knee.pending
    if change is None or knee.pending_from is None or knee.pending_to is None:
        return "undecided"
    a, b = points[knee.pending_from].load, points[knee.pending_to].load
    shown = change.text()
    lower, higher = points[knee.pending_from].point.metric("iops"), points[knee.pending_to].point.metric("iops")
    if lower is not None and higher is not None:
        more = what_would_tell(change, lower, higher)  # the per-point verdicts' words (points pooled over runs: runs)
    else:
        more = "more repetitions, or a longer runtime for steadier points, would tell"
    return (f"undecided: IOPS from {axis} {a} to {b} changed {shown}, neither a rise nor shown within "
            f"+-{FLAT_MARGIN:.0%}; no knee is claimed ({more})")


def knee_text(curve: Curve) -> str:
    """The knee in words: where it is, that the curve was already saturated at its lowest load, or why there is
    none (see `stats.knee.locate_knee`)."""
    knee, axis = curve.knee, curve.axis
    if knee is not None and curve.saturated_at_lowest_load:
        return f"already saturated at the lowest load ({axis} {knee.load}): {_point_figures(knee)}"
    if knee is not None:
        return _knee_text(knee, axis)
    if curve.knee_kind is KneeKind.UNDECIDED and curve.pending is not None:
        return undecided_text(curve.pending, curve.points, axis)
    if curve.knee_kind is KneeKind.LATENCY_FLAT:
        return f"none: IOPS stopped rising but latency did not grow (did more {axis} reach the storage?)"
    if curve.knee_kind is KneeKind.LATENCY_SHORT and curve.pending is not None:
        grown = curve.pending.latency_growth
        shown = "" if grown is None else f" (x{grown.ratio:.2f}" + (
            f" [{grown.low:.2f}, {grown.high:.2f}], 90 %)" if grown.low is not None and grown.high is not None
            else ")")
        return (f"none claimed: IOPS stopped rising while mean latency grew{shown}, less than the "
                f"x{MIN_LATENCY_GROWTH:g} a knee needs and not shown flat (within +-{FLAT_MARGIN:.0%}); a wider "
                f"sweep of {axis} would tell")
    if curve.knee_kind is KneeKind.TOO_FEW_POINTS:
        return "none: fewer than 2 load levels"
    return f"none in sweep: IOPS still rising at {axis} {curve.points[-1].load}"


def saturation_table(curve_list: Sequence[Curve], objective: LatencyObjective | None) -> Table:
    rate = rate_unit(p.point.rw for curve in curve_list for p in curve.points)
    table = Table(title=f"saturation: {rate} against load", title_justify="left", header_style="bold")
    table.add_column("curve")
    table.add_column("points", justify="right")
    table.add_column(f"knee (load stops adding {rate})")
    table.add_column(f"max {rate}")
    if objective:
        table.add_column(f"max {rate} with {objective.label} <= {format_latency_ns(objective.limit_ns)}")
    lab_keys, runs = curve_lab_keys(curve_list), curves_runs_apart(curve_list)
    for curve in curve_list:
        peak = max(curve.points, key=lambda c: c.iops)
        row = [curve_label(curve, lab_keys, runs=runs), str(len(curve.points)), knee_text(curve),
               _knee_text(peak, curve.axis)]
        if objective:
            best = best_under_objective(curve, objective, curve_list)
            row.append("none shown to meet it" if best is None
                       else _knee_text(best, curve.axis) + unshown_text(best, objective))
        table.add_row(*map(plain_cell, row))
    if apart := runs_apart_text(curve_list):
        table.caption = plain_cell(apart)
        table.caption_justify = "left"
    return table


def unshown_text(best: CurvePoint, objective: LatencyObjective) -> str:
    """What the best point under the objective adds when only its mean meets it (one repetition, a steady
    window): no interval shows it."""
    shown = verdict(best.point.metric(objective.field), objective) is not Verdict.MEAN_MEETS
    return "" if shown else " (by its mean: no interval, not shown)"


def runs_apart_text(curves: Sequence[Curve]) -> str:
    """The saturation table's caption when a curve's points ran in different runs (each point's interval is its own
    runs' spread: what changed between the runs is in no interval); empty when none did."""
    lab_keys, runs = curve_lab_keys(curves), curves_runs_apart(curves)
    apart = [curve_label(c, lab_keys, runs=runs) for c in curves if len({p.point.run_ids for p in c.points}) > 1]
    return ("⚠ " + "; ".join(apart) + ": its points ran in different runs; each interval leaves out what changed "
            "between them, so read the knee and a flat or capped curve as about these runs, not the storage alone"
            ) if apart else ""
