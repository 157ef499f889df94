"""Stored results -> a ReportDocument: statistics, curves, comparisons, figures and provenance. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from storbench.model import PreconditionRecord, RunInfo, Status, StoredRepetition
from storbench.model.objective import LatencyObjective
from storbench.report.convergence import convergence_figures
from storbench.report.cost import cost_figures
from storbench.report.drift_figures import drift_figures
from storbench.report.failover import failover_line, failover_verdict, scorecard_rows, timeline_figures
from storbench.report.history import HISTORY_METRICS, MIN_RUNS_DRAWN, history_figures
from storbench.report.html import ReportDocument
from storbench.report.labels import point_label, runs_apart, varying_lab_keys
from storbench.report.point_figures import (
    block_size_figures,
    cdf_figures,
    comparison_figures,
    latency_vs_iodepth_figures,
    merged_latency_histograms,
)
from storbench.report.saturation_figures import capped_figures, curve_figures, iops_vs_load_figures
from storbench.report.show_export import precondition_text
from storbench.report.steady import steady_figures
from storbench.report.tables import interval_level_lines, pooled_runs_line
from storbench.report.utilisation_figures import latency_layer_figures, process_cpu_figures, utilisation_figures
from storbench.report.warning_text import warning_lines
from storbench.stats.compare_cells import PointComparison
from storbench.stats.curve import LOAD_AXES
from storbench.stats.drift import run_drifts
from storbench.stats.failover_points import point_failovers
from storbench.stats.history import point_histories, run_context
from storbench.stats.knee import curves
from storbench.stats.observations import Attempts, Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.run_questions import adaptive_questions, expectations, interval_levels
from storbench.stats.steady import SteadyState
from storbench.stats.summary import summarize_points
from storbench.stats.write_checks import point_write_checks


def build_report(title: str, runs: Sequence[RunInfo], repetitions: Sequence[StoredRepetition],
                 observations: Sequence[Observation], *, comparisons: Sequence[PointComparison] = (),
                 baseline: str = "", candidate: str = "", asked_by: tuple[int, ...] = (),
                 objective: LatencyObjective | None = None, steady: Mapping[tuple[int, str], SteadyState] | None = None,
                 preconditions: Mapping[int, Sequence[PreconditionRecord]] | None = None,
                 notes: Sequence[str] = (), attempts: Attempts | None = None, pool: bool = False) -> ReportDocument:
    """``pool``: each case's repetitions over several runs in one point (`report --pool`), else a point per run as
    `show` gives (a before/after report by run had drawn both sides as one point in every figure); ``asked_by``:
    the runs whose plans' `compare:` the sides are, when plans named them, said with the comparison;
    ``steady``: the judged rounds of each (run, case) measured until steady (selection.steady);
    ``preconditions``: what each run wrote to its targets first (selection.preconditions); ``notes``: lines shown
    with the warnings (a run whose stopping rule changed on a resume); ``attempts``: the rounds each (run, case) was run
    in as stored (selection.attempts), which a stopping rule's replay counts its looks by."""
    memory = {r.run_id: r.mem_total_bytes for r in runs}
    points = summarize_points(observations, memory, expectations=expectations(runs), levels=interval_levels(runs),
                              by_run=not pool)
    # a case measured in several runs: a curve per run; else a sweep spread over runs stays one curve
    curve_list = [c for axis in LOAD_AXES for c in curves(points, axis, pool_runs=not runs_apart(points))]
    drifts = [d for run in runs for d in run_drifts(observations, run.run_id)]
    varying = varying_lab_keys(points)
    labels = {p.case_id: point_label(p, direction=False, lab_keys=varying) for p in reversed(points)}
    failovers = [p for p in point_failovers(repetitions) if p.case_id in labels]  # each fault's logs read once
    # a report over several runs of one plan: each row says its run (they had read the same)
    several = len({p.run_id for p in failovers}) > 1
    fault_labels = {(p.case_id, p.run_id): (f"run {p.run_id}: " if several else "") + labels[p.case_id]
                    for p in failovers}
    checks = point_write_checks(repetitions)
    checked = {(c.run_id, c.case_id): c for c in checks}
    figures = [
        *capped_figures(points),
        *steady_figures({k: v for k, v in (steady or {}).items() if k[1] in labels}, labels),
        *comparison_figures(comparisons, baseline, candidate),
        *convergence_figures(adaptive_questions(runs), runs, repetitions, observations, attempts),
        *block_size_figures(points),
        *latency_vs_iodepth_figures(points),
        *iops_vs_load_figures(points),
        *utilisation_figures(points),
        *process_cpu_figures(points),
        *latency_layer_figures(points),
        *cost_figures(points),
        *curve_figures(curve_list),
        *cdf_figures(points, merged_latency_histograms(repetitions)),
        *drift_figures([d for d in drifts if d.samples]),
        *timeline_figures(repetitions, labels, failovers),
        *(history_figures(point_histories(observations, {r.run_id: run_context(r) for r in runs}, HISTORY_METRICS,
                                          levels_of_runs=interval_levels(runs)))
          if len(runs) >= MIN_RUNS_DRAWN else ()),
    ]
    point_of_case = {p.case_id: p for p in reversed(points)}  # the first point of each case
    job_texts: dict[str, tuple[str, str]] = {}
    for rep in repetitions:
        case_id = rep.case.case_id
        if rep.status == Status.OK and case_id not in job_texts and case_id in point_of_case:
            job_texts[case_id] = (point_label(point_of_case[case_id], direction=False), rep.job_text)
    return ReportDocument(
        title=title, runs=tuple(runs), points=tuple(points), figures=tuple(figures),
        warnings=(*warning_lines(points), *filter(None, [pooled_runs_line(points), _hosts_line(points, runs)]),
                  *interval_level_lines(interval_levels(runs)), *notes),
        comparisons=tuple(comparisons), baseline=baseline,
        candidate=candidate, asked_by=asked_by, curves=tuple(curve_list), objective=objective,
        job_texts=tuple((case_id, label, text) for case_id, (label, text) in job_texts.items()),
        preconditions=tuple((run_id, precondition_text(record), record.job_text)
                            for run_id, records in sorted((preconditions or {}).items()) for record in records),
        failover=tuple(scorecard_rows(failovers, fault_labels, checks)),
        failover_details=tuple(failover_line(p, labels[p.case_id]) for p in failovers),
        failover_verdicts=tuple(v for p in failovers if (v := failover_verdict(
            p, checked.get((p.run_id, p.case_id)), fault_labels[p.case_id, p.run_id]))),
    )


def _hosts_line(points: Sequence[PointSummary], runs: Sequence[RunInfo]) -> str | None:
    """A line for rows that pool runs of several machines (a merged store): the report pools a point's runs, and
    had said nothing of their being other machines."""
    host = {r.run_id: r.host for r in runs}
    mixed = sorted({host.get(run, "") for p in points if len(p.run_ids) > 1 for run in p.run_ids})
    if len(mixed) < 2:
        return None
    return (f"note: rows pool runs of {len(mixed)} machines ({', '.join(mixed)}): each machine's level is in the "
            "row's interval; `storbench show --run all` gives a row per run")
