"""`storbench history` in words and as records (pure): each point's figures run by run with their intervals and
labels, the change points with what else changed at them, and the newest run against its level."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from storbench.model import LabPoint
from storbench.report.events import case_text
from storbench.stats.estimate import t_quantile
from storbench.stats.history import PointHistory, RunLevel
from storbench.stats.metrics import SUMMARY_METRICS, Metric
from storbench.units import format_latency_ns

METRICS = {m.field: m for m in SUMMARY_METRICS}


def value_text(metric: Metric, value: float) -> str:
    if metric.unit == "ns":
        return format_latency_ns(value)
    if metric.unit == "%":
        return f"{value:.1f}%"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"


def _half_width(level: RunLevel) -> float | None:
    n = len(level.values)
    return None if n < 2 else t_quantile(0.95, n - 1) * statistics.stdev(level.values) / math.sqrt(n)


def point_title(history: PointHistory) -> str:
    """The point without its lab settings (they may differ run to run), its direction and the metric."""
    metric = METRICS.get(history.metric)
    label = metric.label if metric else history.metric
    swept = "".join(f" {name}={value}" for name, value in history.swept)
    return f"{case_text(replace(history.case, lab=LabPoint()))}{swept} {history.direction} — {label}"


def history_lines(histories: Sequence[PointHistory]) -> list[str]:
    lines: list[str] = []
    for history in histories:
        metric = METRICS.get(history.metric, Metric(history.metric, history.metric, True, ""))
        lines.append(point_title(history))
        starts = {c.at: c for c in history.changes}
        for i, level in enumerate(history.runs):
            half = _half_width(level)
            interval = "" if half is None else f" ± {value_text(metric, half)}"
            labels = " ".join(f"{k}={v}" for k, v in level.context.labels)
            marker = "  ◀ change" if i in starts else ""
            lines.append(f"  run {level.context.run_id:>4}  n={len(level.values):<3} "
                         f"{value_text(metric, level.mean)}{interval}{('  ' + labels) if labels else ''}{marker}")
        for change in history.changes:
            low, high = change.change_ci_pct
            what = "; ".join(change.what_changed) or "nothing recorded changed"
            lines.append(f"  change at run {change.run_id}: {value_text(metric, change.before_mean)} -> "
                         f"{value_text(metric, change.after_mean)}, {change.change_pct:+.1f}% [{low:+.1f}, "
                         f"{high:+.1f}] (p {change.p_value:.2g}); changed with it: {what}")
        if not history.changes and len(history.runs) >= 4:
            lines.append("  no change point (each level at least 2 runs; p <= 0.01 over the splits)")
        last = history.last
        if last is None and len(history.runs) >= 3:
            lines.append(f"  last run {history.runs[-1].context.run_id}: not judged (fewer than 2 runs at its level "
                         "before it, since the last change point)")
        if last is not None:
            worse = last.below(metric.higher_is_better)
            lines.append(f"  last run {last.run_id}: {value_text(metric, last.mean)}, {last.change_pct:+.1f}% "
                         f"against the level of its {last.level_runs} runs before "
                         f"({value_text(metric, last.level_mean)}; one more run there: "
                         f"[{value_text(metric, last.low)}, {value_text(metric, last.high)}])"
                         + (" — worse than that level" if worse else ""))
    return lines


def history_records(histories: Sequence[PointHistory]) -> list[dict[str, Any]]:
    """One record per point, metric and run (json): its mean, interval and labels, and the change it starts."""
    records = []
    for history in histories:
        starts = {c.at: c for c in history.changes}
        for i, level in enumerate(history.runs):
            half = _half_width(level)
            change = starts.get(i)
            records.append({
                "point": point_title(history).rsplit(" — ", 1)[0], "metric": history.metric,
                "run": level.context.run_id, "n": len(level.values), "mean": level.mean,
                "ci_low": None if half is None else level.mean - half,
                "ci_high": None if half is None else level.mean + half,
                "labels": dict(level.context.labels),
                "change_pct": None if change is None else change.change_pct,
                "change_ci_low_pct": None if change is None else change.change_ci_pct[0],
                "change_ci_high_pct": None if change is None else change.change_ci_pct[1],
                "changed_with": [] if change is None else list(change.what_changed),
            })
    return records


def regression_lines(histories: Sequence[PointHistory], threshold_pct: float) -> list[str]:
    """The points whose newest run is worse than its level's prediction interval by at least ``threshold_pct``."""
    lines = []
    for history in histories:
        last = history.last
        metric = METRICS.get(history.metric)
        if last is None or metric is None or not last.below(metric.higher_is_better):
            continue
        worse_pct = -last.change_pct if metric.higher_is_better else last.change_pct
        if worse_pct >= threshold_pct:
            lines.append(f"regression: {point_title(history)}: run {last.run_id} {last.change_pct:+.1f}% against "
                         f"the level of its {last.level_runs} runs before, outside the interval one more run there "
                         "falls in (5 % shared over every point and metric judged)")
    return lines
