"""Baseline vs candidate: matched points, % change with a confidence interval, and a verdict per cell
(`compare_observations`): paired intervals where the two sides' repetitions alternated in one run, the sequential
rule's where that run stopped when decided, and each cell's standing to that rule (`stopping_rules`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from storbench.model import Expectation, lab_group_key
from storbench.stats.bottleneck import BottleneckVerdict
from storbench.stats.compare_cells import (
    PointComparison,
    RuleAnswer,
    StoppingRule,
    Verdict,
    cell_level,
    cost_cells,
    stopped_alpha,
    verdict_of,
)
from storbench.stats.compare_design import design_of
from storbench.stats.compare_match import compare_points
from storbench.stats.compare_runs import run_level
from storbench.stats.estimate import CONFIDENCE, paired_shift
from storbench.stats.metric_values import metric_value
from storbench.stats.metrics import FAILOVER_METRICS
from storbench.stats.observations import Attempts, Observation, alternated_rounds, looks_made
from storbench.stats.point_summary import PointSummary
from storbench.stats.selectors import Question, Selector, blocked_settings, select
from storbench.stats.sequential import (
    Decision,
    PairedChange,
    SequentialPlan,
    decide_metric,
    paired_change,
    paired_values,
)
from storbench.stats.summary import summarize_points


def with_run_verdicts(points: Sequence[PointSummary], observations: Sequence[Observation],
                      mem_total_bytes: Mapping[int, int | None] | None = None,
                      expectations: Mapping[tuple[int, str], Expectation] | None = None) -> list[PointSummary]:
    """One side's points with the bottleneck verdicts their whole runs give them, as `show` and the report read
    them: a sweep's verdicts (capped, what more load did) need the sweep's other points, which a side's selector
    may leave out (``--baseline target=a`` of a sweep over iodepth keeps it; ``iodepth=16`` does not). Each point
    is summarised again among every point of the runs it comes from, pooled over those runs as it is, and takes
    that verdict; its figures stay the side's."""
    verdicts: dict[tuple[int, ...], dict[tuple[str, str], BottleneckVerdict]] = {}
    out = []
    for point in points:
        if point.run_ids not in verdicts:
            runs = set(point.run_ids)
            verdicts[point.run_ids] = {
                (p.case_id, p.direction_name): p.bottleneck
                for p in summarize_points([o for o in observations if o.run_id in runs], mem_total_bytes,
                                          expectations=expectations)}
        verdict = verdicts[point.run_ids].get((point.case_id, point.direction_name))
        out.append(point if verdict is None else replace(point, bottleneck=verdict))
    return out


def compare_observations(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                         tags: Mapping[int, tuple[str, ...]], mem_total_bytes: Mapping[int, int | None] | None = None,
                         *, force: bool = False, interleaved_runs: frozenset[int] = frozenset(),
                         sequential_plans: Mapping[int, SequentialPlan] | None = None,
                         bring_ups: Mapping[int, str] | None = None, alpha: float = 1 - CONFIDENCE,
                         questions: Mapping[int, Question] | None = None,
                         expectations: Mapping[tuple[int, str], Expectation] | None = None,
                         attempts: Attempts | None = None,
                         shuffled_runs: frozenset[int] = frozenset(),
                         levels: Mapping[int, float] | None = None) -> list[PointComparison]:
    """Match the two sides' points and compare every metric. Where the design pairs repetitions (both sides in
    one run whose order alternates them, ``interleaved_runs``, and not across a setting that needs a cluster per
    value) the change and its interval come from the per-pair ratios (``paired_differences``); else Welch.
    ``alpha``: each interval's error rate (5 %; smaller for a family-wise rule, see ``family_regressions``).
    On runs that stopped when decided (``sequential_plans``) each cell says whether it was that run's question
    (``questions``: run -> what its plan's `compare` asked; ``stopping_rules``). Each point's bottleneck verdict is
    the one `show` gives it (``with_run_verdicts``; ``expectations``: (run, target) -> `expect:`, as `show` reads
    them). ``attempts``: the rounds each (run, case) was run in as stored (`attempts_of`), which a stopping rule
    counts its looks by whatever ``observations`` a `--where` kept. ``levels``: the runs repeated `until: "ci <=
    N%"`, with the level their points are shown at (`run_questions.interval_levels`): a comparison inside one
    such run is judged at an error rate scaled alike (`compare_cells.stopped_alpha`)."""
    ignore = baseline.keys | candidate.keys
    levels = levels or {}
    base, cand = (with_run_verdicts(summarize_points(select(observations, side, tags), mem_total_bytes,
                                                     levels=levels), observations, mem_total_bytes, expectations)
                  for side in (baseline, candidate))
    comparisons = [c if (level := _ci_level(c, levels)) is None else
                   replace(compare_points([c.baseline], [c.candidate], ignore, force=force,
                                          confidence=1 - stopped_alpha(replace(c, ci_level=level), alpha))[0],
                           ci_level=level)
                   for c in compare_points(base, cand, ignore, force=force, confidence=1 - alpha)]
    bring_ups = bring_ups or {}
    named = bool(blocked_settings(baseline, candidate))  # a Ceph setting that needs a cluster per value
    blocked = {(c.baseline.case_id, c.candidate.case_id) for c in comparisons if named or labs_apart(c, bring_ups)}
    # pairs only where the labs alternated round by round (A B B A): not between labs run one after the other
    unpaired = frozenset((c.baseline.case_id, c.candidate.case_id) for c in comparisons
                         if (c.baseline.case_id, c.candidate.case_id) in blocked and _bring_up(c, bring_ups) == "once")
    # the repetitions each side's selector chose: what its summary holds, what pairs and run means are made of
    chosen = (frozenset(id(o) for o in select(observations, baseline, tags)),
              frozenset(id(o) for o in select(observations, candidate, tags)))
    compared = run_level(paired_differences(comparisons, observations, interleaved_runs, sequential_plans or {}, alpha,
                                            attempts, unpaired, chosen), observations, 1 - alpha, chosen)
    # each case's repetitions in each run, from the first start to the last end (another run of the same plan,
    # also selected, had stretched both sides' spans over each other)
    spans: dict[tuple[int, str], tuple[float, float]] = {}
    for o in observations:
        low, high = spans.get((o.run_id, o.case.case_id), (o.started_at_s, o.finished_at_s))
        spans[o.run_id, o.case.case_id] = (min(low, o.started_at_s), max(high, o.finished_at_s))
    designed = [replace(c, design=design_of(c, interleaved_runs, (c.baseline.case_id, c.candidate.case_id) in blocked,
                                            bring_ups, shuffled_runs, apart=_apart(c, spans))) for c in compared]
    return stopping_rules(designed, observations, sequential_plans or {}, questions or {}, tags, attempts)


def _apart(comparison: PointComparison, spans: Mapping[tuple[int, str], tuple[float, float]]) -> bool:
    """Whether one side's repetitions all ran before the other's began (a point a resume added, run after every
    round of the others), in the side's own runs: a run of alternating order, but these two in blocks."""
    def span(point: PointSummary) -> tuple[float, float] | None:
        found = [spans[run, point.case_id] for run in point.run_ids if (run, point.case_id) in spans]
        return (min(s[0] for s in found), max(s[1] for s in found)) if found else None

    a, b = span(comparison.baseline), span(comparison.candidate)
    return a is not None and b is not None and (a[1] <= b[0] or b[1] <= a[0])


def _ci_level(comparison: PointComparison, levels: Mapping[int, float]) -> float | None:
    """Where each side is one run and a run was repeated `until: "ci <= N%"` (``levels``): the highest such run's
    level (one run, or a before/after of two, each stopped when its spreads looked small). Sides over several runs
    take the run as the sample, whose number no rule chose: None."""
    sides = (comparison.baseline.run_ids, comparison.candidate.run_ids)
    if any(len(runs) != 1 for runs in sides):
        return None
    return max((levels[runs[0]] for runs in sides if runs[0] in levels), default=None)


def labs_apart(comparison: PointComparison, bring_ups: Mapping[int, str]) -> bool:
    """Whether the two sides ran on labs up at different times (`model.lab_group_key`: a volume of another cap, a
    Kubernetes cluster of other nodes, a Ceph cluster per value): their repetitions never alternated, whatever the
    run's order, so each side is one lab instance at its own time."""
    bring_up = _bring_up(comparison, bring_ups)
    return lab_group_key(comparison.baseline.case.lab, bring_up) != lab_group_key(comparison.candidate.case.lab,
                                                                                  bring_up)


def _bring_up(comparison: PointComparison, bring_ups: Mapping[int, str]) -> str:
    """The Ceph lab's bring_up of the one run both sides are from ("once" otherwise): other than "once", the
    sides' clusters alternated round by round (side by side, or a fresh one per value and round)."""
    runs = {*comparison.baseline.run_ids, *comparison.candidate.run_ids}
    return bring_ups.get(next(iter(runs)), "once") if len(runs) == 1 else "once"


def paired_differences(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
                       interleaved_runs: frozenset[int], sequential_plans: Mapping[int, SequentialPlan] | None = None,
                       alpha: float = 1 - CONFIDENCE, attempts: Attempts | None = None,
                       unpaired: frozenset[tuple[str, str]] = frozenset(),
                       chosen: tuple[frozenset[int], frozenset[int]] | None = None) -> list[PointComparison]:
    """Comparisons whose two points ran in one interleaved run, repetition for repetition, get paired intervals:
    repetition i of the baseline and repetition i of the candidate ran next to each other (A B, B A, ...), so
    their ratio cancels slow drift; a round that failed on one side leaves its pair out (the run loop pairs the
    same rounds). Others keep Welch's interval. In a run that stopped when its answer was known
    (``sequential_plans``) the data were looked at round by round: the interval is the sequential rule's at the
    last look (its spent error rate, the look indexed by round as the run loop does), so a look-and-stop cannot
    pass for a fixed-size 95 % result. ``chosen``: the ids of the observations each side's selector chose (None:
    all); a selector's repetition-level keys (``repeat=1``, ``fault=``) had been paired over every round."""
    sequential_plans = sequential_plans or {}
    by_run: dict[int, list[Observation]] = {}
    for o in observations:
        by_run.setdefault(o.run_id, []).append(o)
    # the one pairing rule (curves use it too), run by run: a plan run twice has its case ids twice
    rounds = {run: alternated_rounds(by_run.get(run, []), {run}) for run in interleaved_runs}
    out = []
    for comparison in comparisons:
        base, cand = comparison.baseline, comparison.candidate
        same_run = len(base.run_ids) == 1 and base.run_ids == cand.run_ids and base.run_ids[0] in rounds
        run_rounds = rounds[base.run_ids[0]] if same_run else {}
        a, b = ({r: o for r, o in run_rounds.get((p.case_id, p.direction_name), {}).items()
                 if chosen is None or id(o) in chosen[side]} for side, p in enumerate((base, cand)))
        if (base.case_id == cand.case_id or len(set(a) & set(b)) < 2  # rounds of one run both sides have
                or (base.case_id, cand.case_id) in unpaired):  # labs run one after the other: never alternated
            out.append(comparison)
            continue
        sequential = sequential_plans.get(base.run_ids[0])
        # the error rate of this comparison's intervals: ``alpha``, or the sequential rule's at its look after the
        # last round either side has, for a rule whose overall error rate is scaled as ``alpha`` is to 5 %
        run_id = base.run_ids[0]
        looked = looks_made(by_run[run_id], run_id, base.case_id, cand.case_id, attempts)
        error = stopped_alpha(comparison, alpha) if sequential is None else _look_alpha(sequential, looked, alpha)
        cells = []
        costs = cost_cells(comparison)
        for cell in comparison.cells:
            field = cell.metric.field
            level = cell_level(cell.metric, 1 - error, costs)
            values_a = {r: metric_value(o, field) for r, o in a.items()}
            values_b = {r: metric_value(o, field) for r, o in b.items()}
            pairs = paired_values(values_a, values_b)
            method = "sequential" if sequential else "paired"
            shifts = paired_values(values_a, values_b, positive=False) if cell.metric in FAILOVER_METRICS else None
            if pairs is None and shifts is not None:
                # a fault's figure of 0 in a pair (no stall) has no ratio: the pairs' differences, none left out
                shift = paired_shift(*shifts, level, method=method)
                if shift is not None and cell.difference is not None:
                    verdict = verdict_of(cell.metric, shift) if comparison.comparable else Verdict.NOT_COMPARABLE
                    cells.append(replace(cell, difference=shift, verdict=verdict))
                else:
                    cells.append(cell)
                continue
            change = paired_change(*pairs, level) if pairs is not None else None
            if change is None or cell.baseline is None or (change.log_sd == 0 and cell.metric.quantised):
                cells.append(cell)
                continue
            difference = change.difference(cell.baseline.mean, method)
            verdict = verdict_of(cell.metric, difference) if comparison.comparable else Verdict.NOT_COMPARABLE
            cells.append(replace(cell, difference=difference, verdict=verdict))
        out.append(replace(comparison, cells=tuple(cells)))
    return out


def question_points(observations: Sequence[Observation], question: Question,
                    tags: Mapping[int, tuple[str, ...]]) -> frozenset[tuple[str, str, str]]:
    """The points a run's question matched, as (baseline case, candidate case, direction): the plan's two
    selectors over that run's observations, paired as the run loop paired them (``stats.adaptive``)."""
    found = compare_points(summarize_points(select(observations, question.baseline, tags)),
                           summarize_points(select(observations, question.candidate, tags)),
                           question.baseline.keys | question.candidate.keys, metrics=())
    return frozenset((c.baseline.case_id, c.candidate.case_id, c.baseline.direction_name) for c in found)


def _by_round(observations: Sequence[Observation], point: PointSummary, field: str) -> dict[int, float]:
    """A point's values of ``field`` by round (repetition index), as the run loop reads them (`stats.adaptive`)."""
    out = {}
    for o in observations:
        if o.ok and not o.client and o.direction is not None and o.case.case_id == point.case_id \
                and o.direction == point.direction and (value := metric_value(o, field)) is not None:
            out[o.rep_index] = float(value)
    return out


def _inverse(change: PairedChange) -> PairedChange:
    """The change A/B - 1 from B/A - 1: the same pairs the other way round."""
    def inv(x: float) -> float:
        return 1 / (1 + x) - 1 if 1 + x > 0 else math.inf
    return replace(change, estimate=inv(change.estimate), low=inv(change.high), high=inv(change.low))


def rule_answer(observations: Sequence[Observation], baseline: PointSummary, candidate: PointSummary, field: str,
                plan: SequentialPlan, *, forward: bool = True, attempts: Attempts | None = None) -> RuleAnswer:
    """The stopping rule's final verdict on ``field`` of one run's question (``observations``: that run's), as
    its run loop gave it (`stats.adaptive.decided_verdicts`: the rule at the look after the rounds run, on the
    pairs of rounds both sides have), in the question's way round (``forward``: the comparison's baseline is the
    question's), then turned to the comparison's: higher and lower swap and the change is inverted, equivalent
    stays what the run decided."""
    a, b = _by_round(observations, baseline, field), _by_round(observations, candidate, field)
    first, second = (a, b) if forward else (b, a)
    common = sorted(set(first) & set(second))
    run_id = baseline.run_ids[0]
    looks = looks_made(observations, run_id, baseline.case_id, candidate.case_id, attempts)
    verdict = decide_metric(field, [first[i] for i in common], [second[i] for i in common], plan, looks)
    decision, change = verdict.decision, verdict.change
    if looks < plan.min_rounds and len(common) >= 2:  # stopped before its first look: no look's interval exists;
        # the first look's level, as the table's cell gives it (`_look_alpha`), not a plain 95 % one beside it
        change = paired_change([first[i] for i in common], [second[i] for i in common],
                               1 - plan.look_alpha(plan.min_rounds))
    if not forward:
        decision = {Decision.HIGHER: Decision.LOWER, Decision.LOWER: Decision.HIGHER}.get(decision, decision)
        change = _inverse(change) if change is not None else None
    minutes = None
    if observations:
        minutes = (max(o.finished_at_s for o in observations) - min(o.started_at_s for o in observations)) / 60
    return RuleAnswer(decision=decision, rounds=verdict.rounds, max_rounds=plan.max_rounds, margin=plan.margin,
                      change=change, minutes=minutes, turned=not forward)


def stopping_rules(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
                   sequential_plans: Mapping[int, SequentialPlan], questions: Mapping[int, Question],
                   tags: Mapping[int, tuple[str, ...]], attempts: Attempts | None = None) -> list[PointComparison]:
    """Each cell with data of a run that stopped when decided, marked with how it stands to that run's rule.

    The rule looked only at the metrics its plan's `compare` named, at the points its selectors matched: those
    cells are ``IN`` (either way round: the interval of the inverse ratio is the inverse interval on the same
    pairs at the same look). Every other cell of one such run keeps the rule's interval, which still holds at
    whichever look the run stopped (its looks were fixed before the run and its error rate split over all of
    them, so which metric chose the look does not matter) but the run did not go on until it was decided:
    ``OUTSIDE``. A cell with a plain interval (Welch across runs, or pairs that could not be formed) on
    repetitions whose number the rule chose is ``NOT_COVERED``: descriptive."""
    stopped = set(sequential_plans)
    matched: dict[int, frozenset[tuple[str, str, str]]] = {}
    out = []
    for comparison in comparisons:
        base, cand = comparison.baseline, comparison.candidate
        if not stopped & {*base.run_ids, *cand.run_ids}:
            out.append(comparison)
            continue
        run = base.run_ids[0] if len(base.run_ids) == 1 and base.run_ids == cand.run_ids else None
        question = questions.get(run) if run is not None and run in stopped else None
        points: frozenset[tuple[str, str, str]] = frozenset()
        if question is not None and run is not None:
            if run not in matched:
                matched[run] = question_points([o for o in observations if o.run_id == run], question, tags)
            points = matched[run]
        forward = (base.case_id, cand.case_id, base.direction_name) in points
        asked_here = forward or (cand.case_id, base.case_id, cand.direction_name) in points
        cells = []
        for cell in comparison.cells:
            answer = None
            if cell.difference is not None and cell.difference.method != "sequential":
                rule = StoppingRule.NOT_COVERED
            elif asked_here and question is not None and cell.metric.field in question.metrics:
                rule = StoppingRule.IN
                if run is not None:
                    answer = rule_answer([o for o in observations if o.run_id == run], base, cand,
                                         cell.metric.field, sequential_plans[run], forward=forward, attempts=attempts)
            else:
                rule = StoppingRule.OUTSIDE
            cells.append(replace(cell, stopping_rule=rule, answer=answer))
        out.append(replace(comparison, cells=tuple(cells), question=question))
    return out


def _look_alpha(plan: SequentialPlan, rounds: int, alpha: float) -> float:
    """The error rate of the sequential rule's look after ``rounds`` (the last look's when beyond ``max``), with
    the rule's overall error rate scaled as ``alpha`` is to 5 % (a gate's share per cell). The looks are calibrated
    again at that rate: their chance of calling no change different at some look does not shrink in proportion to
    each look's error rate (the looks are correlated), so dividing the calibrated looks' rates would overshoot."""
    if not math.isclose(alpha, 1 - CONFIDENCE):
        plan = replace(plan, alpha=plan.alpha * alpha / (1 - CONFIDENCE))
    return plan.look_alpha(min(max(rounds, plan.min_rounds), plan.max_rounds))
