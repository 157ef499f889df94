"""A point's warnings as text: one line per kind of warning, naming the points it concerns (the worst first) and
saying the fix once; each warning's short tag; a list of point labels cut after a few. Pure."""

from __future__ import annotations

from collections.abc import Sequence

from storbench.model import is_volume_operation
from storbench.report.labels import point_label, run_prefix, varying_lab_keys
from storbench.stats.point_summary import PointSummary
from storbench.stats.point_warnings import StatWarning, warning_title

# A warning's short name, for a row that carries it (the HTML summary's column); its advice is said once, below.
WARNING_TAGS = {
    "failed_repetitions": "failed repetitions", "few_repetitions": "few repetitions", "few_runs": "few runs",
    "high_cv": "high CV",
    "wide_interval": "wide interval", "runtime_shorter_than_ramp": "runtime < ramp", "page_cache": "page cache",
    "stragglers": "stragglers", "not_steady": "not steady", "steady_incomplete": "steady state unfinished",
    "steady_window": "steady window", "steady_unshown": "steadiness not shown",
    "faulted": "a fault in the run", "throttle_latency": "block throttle",
    "uneven_pacing": "uneven pacing", "short_phase": "short phase",
}
LISTED_POINTS = 8  # a line that names the points it concerns names this many, then "and N more"


def warning_tag(code: str) -> str:
    return WARNING_TAGS.get(code, code.replace("_", " "))


def points_text(labels: Sequence[str], limit: int = LISTED_POINTS) -> str:
    """'a, b and c'; past ``limit`` labels, 'a, b, ..., h and 6 more'."""
    if len(labels) <= 1:
        return "".join(labels)
    if len(labels) > limit:
        return f"{', '.join(labels[:limit])} and {len(labels) - limit} more"
    return f"{', '.join(labels[:-1])} and {labels[-1]}"


def warning_groups(points: Sequence[PointSummary]) -> list[tuple[str, str]]:
    """(code, line) per kind of warning, in the order the points first show them: the line names the points it
    concerns (the worst first, with its figures, for the spread and the interval's width) and says the fix once."""
    lab_keys = varying_lab_keys(points)
    groups: dict[str, list[tuple[PointSummary, StatWarning]]] = {}
    for p in points:
        for w in p.warnings:
            groups.setdefault(w.code, []).append((p, w))
    lines = []
    for code, members in groups.items():
        if code in ("high_cv", "wide_interval"):  # the worst point first
            field = "cv_pct" if code == "high_cv" else "half_width_pct"
            # the warning is of each point's main figure: IOPS, or a volume operation's time
            members.sort(key=lambda m: -(getattr(m[0].metric("lat_mean_ns" if is_volume_operation(m[0].case.workload.rw)
                                                             else "iops"), field, None) or 0))
        labels = list(dict.fromkeys(run_prefix(p, points) + point_label(p, lab_keys=lab_keys) for p, _ in members))
        warning = members[0][1]
        title = warning_title(code, [p.case.workload.rw for p, _ in members])
        if len(labels) == 1:
            lines.append((code, f"⚠ {title} at {labels[0]} ({warning.message}): {warning.fix}"))
            continue
        worst = "worst " if code in ("high_cv", "wide_interval") else ""
        others = points_text(labels[1:], LISTED_POINTS - 1)
        lines.append((code, f"⚠ {title} at {len(labels)} points ({worst}{labels[0]}: {warning.message}; also "
                            f"{others}): {warning.fix}"))
    return lines


def warning_lines(points: Sequence[PointSummary]) -> list[str]:
    """One line per kind of warning: the points it concerns, the worst one's figures, and the fix."""
    return [line for _, line in warning_groups(points)]
