"""The answer converging: for a run that stopped when decided, one figure per compared point and metric. Pure.

The % change after each look of the stopping rule (`stats.convergence.replay`) with the interval that look used,
no change and the equivalence margin drawn across, the final verdict marked; beside it the design, the verdict,
the rounds, the minutes the run took and the stopping rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from storbench.model import Case, RunInfo, StoredRepetition
from storbench.report.figures import Band, FigureSpec, Series
from storbench.report.labels import comparison_label, varying_comparison_lab
from storbench.schedule import lab_designs
from storbench.stats.compare_design import design_note
from storbench.stats.convergence import Convergence, Look, convergence, stopping_rule
from storbench.stats.metrics import COMPARE_METRICS, Metric
from storbench.stats.observations import Attempts, Observation
from storbench.stats.run_questions import AdaptiveQuestion
from storbench.stats.sequential import Decision

SECTION = "The answer converging"
LOOK_COLOR = "#1f77b4"
DECIDING_COLOR = "#ff7f0e"
VERDICT_COLORS = {"better": "#13795b", "worse": "#b00020", "equivalent": "#2b6b2b", "undecided": "#5b6673"}


def _metric(field: str) -> Metric:
    return next((m for m in COMPARE_METRICS if m.field == field), Metric(field, field, True, ""))


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}"


def _interval(look: Look) -> str:
    if look.estimate is None or look.low is None or look.high is None or look.confidence is None:
        return "fewer than two usable pairs"
    return (f"{_pct(look.estimate)} % [{_pct(look.low)}, {_pct(look.high)}] "
            f"(interval at this look's {100 * look.confidence:.2f} % level)")


def _better(metric: Metric, decision: Decision) -> str:
    """'better' or 'worse' for a decided difference, else the decision itself."""
    if decision not in (Decision.HIGHER, Decision.LOWER):
        return decision.value
    return "better" if (decision == Decision.HIGHER) == metric.higher_is_better else "worse"


def verdict_text(item: Convergence, question: AdaptiveQuestion) -> str:
    """The final verdict in words: which way, the change with its interval, and when it was first decided."""
    metric, verdict = _metric(item.metric), item.verdict
    last = Look(verdict.rounds, None, None, None, None, verdict.decision)
    if verdict.change is not None:
        c = verdict.change
        last = Look(verdict.rounds, c.estimate, c.low, c.high, c.confidence, verdict.decision)
    shown = _interval(last)
    names = f"{question.candidate.text} vs {question.baseline.text}"
    if verdict.decision in (Decision.HIGHER, Decision.LOWER):
        text = (f"{verdict.decision.value} ({_better(metric, verdict.decision)}): {metric.label} of {names} "
                f"changes by {shown}")
    elif verdict.decision == Decision.EQUIVALENT:
        margin = item.plan.margin or 0.0
        text = f"equivalent within ±{100 * margin:g} %: {metric.label} of {names} changes by {shown}"
    else:
        when = (f"reached max {item.plan.max_rounds} rounds undecided" if verdict.rounds >= item.plan.max_rounds
                else f"undecided after {verdict.rounds} of at most {item.plan.max_rounds} rounds (the run ended "
                "before max)")
        text = f"{when}: {metric.label} of {names} changes by {shown}"
    first = item.first_decided
    if first is not None and first != verdict.rounds:
        text += f"; the rule first decided it after {first} rounds"
    return text


def design_text(question: AdaptiveQuestion, cases: Sequence[Case], run_order: str) -> str:
    """How the two sides were run: interleaved (and for a lab setting, how), or blocked (confounded)."""
    note = design_note(question.baseline, question.candidate, bring_up=question.bring_up)
    if note is not None:
        return note
    named = {k for selector in (question.baseline, question.candidate) for k, _ in selector.pairs}
    lines = [line for line in lab_designs(cases, bring_up=question.bring_up, order=run_order)
             if line.split(":", 1)[0] in named]
    if lines:
        return "; ".join(lines) + "; each round gives one pair"
    if run_order == "interleaved":
        return "interleaved in one run (repetitions A B B A): each round runs both sides once, giving one pair"
    return f"order {run_order}: repetition i of each side is paired"


def _spent(repetitions: Sequence[StoredRepetition]) -> str:
    if not repetitions:
        return "unknown (no stored repetitions)"
    start = min(r.started_at_s for r in repetitions)
    end = max(r.finished_at_s for r in repetitions)
    rounds = max(r.rep_index for r in repetitions) + 1
    return (f"{(end - start) / 60:.1f} min for the whole run ({len(repetitions)} repetitions in {rounds} rounds, "
            "first start to last end)")


def _y_range(looks: Sequence[Look], margin: float | None) -> tuple[float, float]:
    """The % range to draw: every estimate, zero, the margin and the intervals no wider than four times the last
    look's (the first looks' intervals on few pairs can span thousands of %, which would flatten the rest)."""
    last = looks[-1]
    widest = 4 * 100 * ((last.high or 0.0) - (last.low or 0.0)) if math.isfinite(last.high or 0.0) else math.inf
    values = [0.0, *(100 * (look.estimate or 0.0) for look in looks)]
    if margin is not None:
        values += [-100 * margin, 100 * margin]
    for look in looks:
        low, high = 100 * (look.low or 0.0), 100 * (look.high or 0.0)
        if high - low <= widest and math.isfinite(high):
            values += [low, high]
    low, high = min(values), max(values)
    pad = 0.08 * (high - low or 1.0)
    return max(-100.0, low - pad), high + pad


def convergence_figure(item: Convergence, question: AdaptiveQuestion, figure_id: str, label: str, design: str,
                       spent: str) -> FigureSpec | None:
    """The figure of one compared point and metric (None when no look had two usable pairs)."""
    metric = _metric(item.metric)
    looks = [look for look in item.looks if look.estimate is not None and look.low is not None
             and look.high is not None and math.isfinite(look.high)]  # two pairs at a tiny level: unbounded
    if not looks:
        return None
    xs = tuple(float(look.rounds) for look in looks)
    ys = tuple(100 * (look.estimate or 0.0) for look in looks)
    hover = tuple(f"after {look.rounds} rounds: {_interval(look)}: {look.decision.value}" for look in looks)
    series = [Series(
        name="change after each look", x=xs, y=ys, error_y=tuple(100 * (look.high or 0.0) - y for look, y in
                                                                 zip(looks, ys, strict=True)),
        error_y_minus=tuple(y - 100 * (look.low or 0.0) for look, y in zip(looks, ys, strict=True)), text=hover,
        color=LOOK_COLOR)]
    deciding = [(x, y, t) for x, y, t, look in zip(xs, ys, hover, looks, strict=True)
                if look.decision != Decision.UNDECIDED]
    if deciding:
        series.append(Series(name="looks that decide", x=tuple(d[0] for d in deciding),
                             y=tuple(d[1] for d in deciding), text=tuple(d[2] for d in deciding), mode="markers",
                             marker_size=10, color=DECIDING_COLOR))
    final = looks[-1]
    verdict = _better(metric, item.verdict.decision)
    mark = f"{verdict} {100 * (final.estimate or 0.0):+.1f} %"
    series.append(Series(name=f"verdict: {verdict}", x=(xs[-1],), y=(ys[-1],), text=(mark,), mode="markers",
                         marker_size=18, show_text=True, color=VERDICT_COLORS.get(verdict, "#000000")))
    bands: tuple[Band, ...] = ()
    if item.plan.margin is not None:
        m = 100 * item.plan.margin
        bands = (Band(-m, m, f"equivalent within ±{m:g} %"),)
    rounds = tuple(sorted({look.rounds for look in looks}))
    y_range = _y_range(looks, item.plan.margin)
    notes = (
        ("verdict", verdict_text(item, question)),
        ("design", design),
        ("rounds", f"{item.verdict.rounds} of at most {item.plan.max_rounds} (one pair each; the rule looked after "
                   f"each round from {item.plan.min_rounds} on)"),
        ("time", spent),
        ("stopping rule", stopping_rule(item.plan)),
    )
    return FigureSpec(
        figure_id=figure_id, title=f"{label}: {metric.label}, look by look", x_label="rounds so far (pairs)",
        y_label=f"{metric.label} change, {question.candidate.text} vs {question.baseline.text} (%)",
        series=tuple(series), x_tickvals=tuple(float(r) for r in rounds), x_ticktext=tuple(str(r) for r in rounds),
        x_range=(rounds[0] - 0.6, rounds[-1] + 1.9),
        section=SECTION, y_lines=(0.0,), y_bands=bands, notes=notes, y_range=y_range,
        caption="Each point: the candidate's change against the baseline after that many rounds (geometric mean of "
        "the per-round ratios - 1), with the interval the stopping rule used at that look. Each look's level is "
        f"set so that all the looks together call no change different in {100 * item.plan.alpha:g} % of runs, so "
        "these intervals are wider than plain 95 % ones and stay valid however often the run looked; the first "
        "looks' can reach beyond the plot (hover for their ends). "
        "Dotted: no change; green band: the equivalence margin; large marker: the verdict at the last look.")


def convergence_figures(questions: Sequence[AdaptiveQuestion], runs: Sequence[RunInfo],
                        repetitions: Sequence[StoredRepetition], observations: Sequence[Observation],
                        attempts: Attempts | None = None) -> list[FigureSpec]:
    """Every compared point and metric of every run that stopped when decided, replayed on that run's
    observations (the ones its run loop looked at)."""
    order = {r.run_id: r.run_order for r in runs}
    figures = []
    for question in questions:
        seen = [o for o in observations if o.run_id == question.run_id]
        reps = [r for r in repetitions if r.run_id == question.run_id]
        items = convergence(seen, question.baseline, question.candidate, question.metrics, question.plan, attempts)
        if not items:
            continue
        cases = list({r.case.case_id: r.case for r in reps}.values()) or \
            list({o.case.case_id: o.case for o in seen}.values())
        design = design_text(question, cases, order.get(question.run_id, ""))
        spent = _spent(reps)
        lab_keys = varying_comparison_lab([item.comparison for item in items])
        for index, item in enumerate(items, 1):
            figure_id = f"convergence-run{question.run_id}-{index}-{item.metric}"
            figure = convergence_figure(item, question, figure_id, comparison_label(item.comparison, lab_keys),
                                        design, spent)
            if figure is not None:
                figures.append(figure)
    return figures
