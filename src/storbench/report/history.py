"""`storbench history` in words and as records (pure): each point's figures run by run with their intervals and
labels, the change points with what else changed at them, and the newest run against its level."""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from storbench.model import LabPoint
from storbench.report.events import case_text
from storbench.report.figures import FigureSpec, Mark, Series
from storbench.report.labels import distinct_texts, hidden_texts, target_text
from storbench.stats.estimate import CONFIDENCE, Estimate, estimate
from storbench.stats.history import (
    MIN_HOST_RUNS,
    ChangePoint,
    PointHistory,
    RunContext,
    RunLevel,
    history_key,
    new_step,
)
from storbench.stats.metrics import SUMMARY_METRICS, Metric
from storbench.stats.point_summary import distinct_targets
from storbench.units import format_bytes, format_latency_ns

METRICS = {m.field: m for m in SUMMARY_METRICS}
# what a change point can say: a history is observational (runs on different days, builds, kernels), so what else
# changed at the step co-occurred with it; only the settings measured side by side in one run test a cause
CAUSE_NOT_SHOWN = ("a change point says when the figures moved and what else changed at that run, not which of "
                   "those caused it: to test one, compare its two values side by side in one run")


def value_text(metric: Metric, value: float) -> str:
    """A value in its metric's unit: latencies in their own, bytes per second in MiB/s and the like, seconds,
    cores and µs with their names; counts (IOPS) as they are."""
    if metric.unit == "ns":
        return format_latency_ns(value)
    if metric.unit == "%":
        return f"{value:.1f}%"
    if metric.unit == "B/s":
        return f"{format_bytes(value)}/s"
    number = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"
    return number if metric.unit in ("IOPS", "") else f"{number} {metric.unit}"


def _run_estimate(level: RunLevel) -> Estimate | None:
    """The t interval of the run's own repetitions at the run's level (`stats.estimate`; `until: ci`'s own, not a
    plain 95 % that covers less after such a stop), none for a steady window's rounds; None below two."""
    return estimate(level.values, level.confidence, interval=not level.window_only)


def _half_width(level: RunLevel) -> float | None:
    found = _run_estimate(level)
    return None if found is None else found.half_width


def told_apart(histories: Sequence[PointHistory]) -> dict[int, str]:
    """Each history (by id) -> the workload fields labels do not show that differ between them ("ioengine=io_uring")
    and the fields of targets of one name that differ ("location=/dev/b"): what tells two points' names apart where
    the case text alone is the same."""
    texts = distinct_texts([hidden_texts(h.case.workload) for h in histories])
    targets = distinct_targets([h.case.target for h in histories])
    return {id(h): "".join(f" {text}" for _, text in found)
            + "".join(f" {target_text(h.case.target, field)}" for field in apart)
            for h, found, apart in zip(histories, texts, targets, strict=True)}


def _point_name(history: PointHistory, apart: str = "") -> str:
    """The point as records name it: the same whichever machine's history it is (``series_host`` says); its read
    share (randrw 70 %) and ``apart`` (`told_apart`) in it: two histories had had one name."""
    swept = "".join(f" {name}={value}" for name, value in history.swept)
    w = history.case.workload
    text = case_text(replace(history.case, lab=LabPoint()))
    if w.rwmixread is not None:
        text = text.replace(f" {w.rw} ", f" {w.rw} {w.rwmixread}% ", 1)
    return f"{text}{apart}{swept} {history.direction}"


def point_title(history: PointHistory, apart: str = "") -> str:
    """The point without its lab settings (they may differ run to run), its direction and the metric."""
    metric = METRICS.get(history.metric)
    label = metric.label if metric else history.metric
    host = f" on {history.host}" if history.host is not None else ""
    return f"{_point_name(history, apart)}{host} — {label}"


def _recorded_text(before: RunContext | None, context: RunContext) -> str:
    """What storbench recorded of a run (versions, kernel, host, lab settings): all of it for a history's first
    run, then only what differs from the run before."""
    if before is None:
        return "recorded: " + ", ".join(f"{name} {value}" for name, value in context.recorded)
    old, new = dict(before.recorded), dict(context.recorded)
    names = [*new, *(name for name in old if name not in new)]  # a version or setting gone is a change too
    changed = [f"{name} {old.get(name, '-')} -> {new.get(name, '-')}" for name in names
               if old.get(name) != new.get(name)]
    return ("recorded: " + ", ".join(changed)) if changed else ""


def history_lines(histories: Sequence[PointHistory]) -> list[str]:
    lines: list[str] = []
    apart = told_apart(histories)
    for history in histories:
        metric = METRICS.get(history.metric, Metric(history.metric, history.metric, True, ""))
        lines.append(point_title(history, apart[id(history)]))
        starts = {c.at: c for c in history.changes}
        for i, level in enumerate(history.runs):
            half = _half_width(level)
            interval = "" if half is None else f" ± {value_text(metric, half)}"
            median = f" (median {value_text(metric, level.median)})" if len(level.values) >= 3 else ""
            labels = " ".join(f"{k}={v}" for k, v in level.context.labels)
            marker = "  ◀ change" if i in starts else ""
            lines.append(f"  run {level.context.run_id:>4}  n={len(level.values):<3} "
                         f"{value_text(metric, level.mean)}{interval}{median}{('  ' + labels) if labels else ''}"
                         f"{marker}")
            recorded = _recorded_text(history.runs[i - 1].context if i else None, level.context)
            if recorded:
                lines.append(f"             {recorded}")
        for change in history.changes:
            what = "; ".join(change.what_changed) or "nothing recorded changed"
            lines.append(f"  change at run {change.run_id}: {value_text(metric, change.before_mean)} -> "
                         f"{value_text(metric, change.after_mean)}, {step_text(change)} (p {change.p_value:.2g} "
                         f"when found, with {change.found_with} runs); changed with it: {what}")
        if history.changes:
            lines.append(f"  {CAUSE_NOT_SHOWN}")
        if history.hosts > 1:
            lines.append(f"  runs of {history.hosts} machines in one history (fewer than {MIN_HOST_RUNS} runs of it "
                         "on some, or --pool-hosts): a change of machine is among what may change at a step")
        if not history.changes and len(history.runs) >= 4:
            shared = f", shared among {history.among} histories" if history.among > 1 else ""
            lines.append(f"  no change point found (each level at least 2 runs; p <= 0.01 over the splits{shared}: "
                         "a step of the runs' own noise takes many runs to show)")
        last = history.last
        if last is None and len(history.runs) >= 3:
            lines.append(f"  last run {history.runs[-1].context.run_id}: not judged (fewer than 2 runs at its level "
                         "before it, since the last change point)")
        if last is not None:
            worse = last.below(metric.higher_is_better)
            lines.append(f"  last run {last.run_id}: {value_text(metric, last.mean)}, {pct_text(last.change_pct)} "
                         f"against the level of its {last.level_runs} runs before "
                         f"({value_text(metric, last.level_mean)}; one more run there: "
                         f"[{value_text(metric, last.low)}, {value_text(metric, last.high)}])"
                         + (" — worse than that level" if worse else ""))
    return lines


def history_records(histories: Sequence[PointHistory]) -> list[dict[str, Any]]:
    """One record per point, metric and run (json): its mean, interval and labels, and the change it starts."""
    records = []
    apart = told_apart(histories)
    for history in histories:
        starts = {c.at: c for c in history.changes}
        for i, level in enumerate(history.runs):
            found = _run_estimate(level)  # its interval as every table's: a lower bound cut at zero
            change = starts.get(i)
            records.append({
                "point": _point_name(history, apart[id(history)]),
                "series_host": history.host, "metric": history.metric,
                "run": level.context.run_id, "host": level.context.host, "n": len(level.values), "mean": level.mean,
                "median": level.median,
                "ci_low": None if found is None else found.ci_low,
                "ci_high": None if found is None else found.ci_high,
                "labels": dict(level.context.labels), "recorded": dict(level.context.recorded),
                "change_pct": None if change is None else change.change_pct,
                "change_ci_low_pct": None if change is None or change.change_ci_pct is None
                else change.change_ci_pct[0],
                "change_ci_high_pct": None if change is None or change.change_ci_pct is None
                else change.change_ci_pct[1],
                "changed_with": [] if change is None else list(change.what_changed),
            })
    return records


def regression_lines(histories: Sequence[PointHistory], threshold_pct: float, confidence: float = CONFIDENCE,
                     judged: int = 1) -> list[str]:
    """The points whose newest run is worse than its level's prediction interval by at least ``threshold_pct``, and
    those whose newest run completes a change point that is worse by at least that much (the step's interval on the
    worse side of zero). ``confidence``: the interval's level the histories were judged at, shared among ``judged``
    points (Bonferroni), as the line says (it had said 95 % of an interval at 1 - 0.05 / N)."""
    lines = []
    apart = told_apart(histories)
    for history in histories:
        metric, title = METRICS.get(history.metric), point_title(history, apart[id(history)])
        if metric is None:
            continue
        sign = -1.0 if metric.higher_is_better else 1.0
        last = history.last
        # from a level of 0 a change has no percent: any step away from it on the worse side is past the threshold
        if last is not None and last.below(metric.higher_is_better) and (
                last.change_pct is None or sign * last.change_pct >= threshold_pct):
            lines.append(f"regression: {title}: run {last.run_id} {pct_text(last.change_pct)} "
                         f"against the level of its {last.level_runs} runs before, outside the interval one more run "
                         f"there falls in {100 * confidence:.4g} % of the time"
                         + (f" (95 % shared among the {judged} points judged)" if judged > 1 else ""))
        step = new_step(history)
        if step is not None and _step_worse(step, sign, threshold_pct):
            lines.append(f"regression: {title}: a step at run {step.run_id}, {step_text(step)}, its "
                         f"new level the last {len(history.runs) - step.at} runs")
    return lines


def _step_worse(step: ChangePoint, sign: float, threshold_pct: float) -> bool:
    """A step on the worse side (``sign`` -1 where higher is better) by at least the threshold, its interval too;
    from a level of 0, any step to the worse side."""
    if step.change_pct is None or step.change_ci_pct is None:
        return sign * (step.after_mean - step.before_mean) > 0
    return sign * step.change_pct >= threshold_pct and min(sign * end for end in step.change_ci_pct) > 0


def pct_text(change_pct: float | None) -> str:
    """'+12.3%', or 'from a level of 0' where there is no percent change."""
    return "from a level of 0" if change_pct is None else f"{change_pct:+.1f}%"


def step_text(change: ChangePoint) -> str:
    """'+12.3% [+8.1, +16.5]', or 'from a level of 0' where the level before was 0 (no percent change)."""
    if change.change_pct is None or change.change_ci_pct is None:
        return pct_text(None)
    low, high = change.change_ci_pct
    return f"{pct_text(change.change_pct)} [{low:+.1f}, {high:+.1f}]"


HISTORY_SECTION = "History"
HISTORY_METRICS = ("iops", "lat_p99_ns")  # the report's history figures; `storbench history --metric` for others
MIN_RUNS_DRAWN = 3


def history_figures(histories: Sequence[PointHistory]) -> list[FigureSpec]:
    """A figure per point and metric measured by at least MIN_RUNS_DRAWN runs: each run's mean with its own
    repetitions' interval, in the runs' order (start time, each named by its id), each level between change points
    as a dashed line, each change point marked with its size and interval."""
    figures = []
    apart = told_apart(histories)
    numbers: dict[tuple[object, ...], int] = {}  # a number per point: its metrics' figures share it
    for history in (h for h in histories if len(h.runs) >= MIN_RUNS_DRAWN):
        number = numbers.setdefault((history_key(history.case, history.direction), history.swept, history.host),
                                    len(numbers))
        metric = METRICS.get(history.metric, Metric(history.metric, history.metric, True, ""))
        scale = 1e-6 if metric.unit == "ns" else 1.0  # latencies in ms
        unit = "ms" if metric.unit == "ns" else metric.unit
        y_label = f"{metric.label} ({unit})" if unit and unit != metric.label else metric.label  # not "IOPS (IOPS)"
        # the runs in their order (by start time: an imported run's id need not follow it), each named by its id
        x = tuple(float(i + 1) for i in range(len(history.runs)))
        run_ids = [level.context.run_id for level in history.runs]
        halves = [_half_width(level) for level in history.runs]
        levels = sorted({level.confidence for level in history.runs if not level.window_only})
        shown = "/".join(f"{100 * c:g} %" for c in levels) or "no"
        series = [Series(f"run mean (± its repetitions' {shown} CI)", x,
                         tuple(level.mean * scale for level in history.runs),
                         error_y=tuple((h or 0.0) * scale for h in halves), mode="markers",
                         # the lower arm cut at zero, as every table's interval (no negative IOPS or latency)
                         error_y_minus=tuple(min(h or 0.0, level.mean) * scale
                                             for h, level in zip(halves, history.runs, strict=True)),
                         text=tuple(" ".join(f"{k}={v}" for k, v in level.context.labels) or f"run {run_id}"
                                    for level, run_id in zip(history.runs, run_ids, strict=True)))]
        bounds = [0, *(c.at for c in history.changes), len(history.runs)]
        level_x: list[float | str] = []
        level_y: list[float] = []
        for start, end in itertools.pairwise(bounds):  # one legend entry: the levels as one line, broken between
            if level_x:
                level_x.append((x[start - 1] + x[start]) / 2)
                level_y.append(math.nan)
            level_mean = statistics.fmean(level.mean for level in history.runs[start:end]) * scale
            level_x.extend(x[start:end])
            level_y.extend((level_mean,) * (end - start))
        series.append(Series("level (between change points)", tuple(level_x), tuple(level_y), mode="lines",
                             dash=True, color="#7f7f7f"))
        marks = tuple(Mark((x[c.at - 1] + x[c.at]) / 2, step_text(c)) for c in history.changes)
        figures.append(FigureSpec(
            figure_id=f"history-{number + 1}-{history.metric}", title=point_title(history, apart[id(history)]),
            x_label="run", y_label=y_label, series=tuple(series),
            x_tickvals=x, x_ticktext=tuple(f"run {run_id}" for run_id in run_ids), x_marks=marks,
            section=HISTORY_SECTION,
            caption="each run's mean with its repetitions' interval; dashed: the level between change points; a "
                    "vertical line: a change point with the step and its 95 % interval "
                    "(storbench docs methodology history-and-change-points)"
                    + (f". {CAUSE_NOT_SHOWN[0].upper()}{CAUSE_NOT_SHOWN[1:]}" if history.changes else "")))
    return figures
