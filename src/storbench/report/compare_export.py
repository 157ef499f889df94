"""A comparison as JSON, CSV or Markdown: one row per point and metric. Pure."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Collection, Sequence

from storbench.report.compare_tables import (
    VERDICT_LEGEND,
    bottleneck_change,
    bottleneck_evidence_lines,
    change_text,
    compared_fields,
    design_lines,
    interval_caption,
    rule_answer_lines,
)
from storbench.report.cost_compare import cost_change_markdown, cost_changes
from storbench.report.export import export_row, markdown_cell
from storbench.report.labels import comparison_label, rate_unit, varying_comparison_lab
from storbench.report.tables import iops_with_ci
from storbench.safe_text import csv_cell, safe_text
from storbench.stats.compare_cells import PointComparison, RuleAnswer, stopping_rule_lines
from storbench.stats.compare_design import CONFOUNDED
from storbench.stats.metrics import FAILOVER_METRICS, LAYER_METRICS

COMPARE_FIELDS = (
    "point", "direction", "metric", "baseline_n", "baseline_mean", "baseline_ci_low", "baseline_ci_high",
    "candidate_n", "candidate_mean", "candidate_ci_low", "candidate_ci_high", "change_pct", "change_ci_low_pct",
    "change_ci_high_pct", "change", "change_ci_low", "change_ci_high", "interval", "pairs", "stopping_rule",
    "rule_verdict", "rule_change_pct",
    "rule_change_ci_low_pct", "rule_change_ci_high_pct", "rule_rounds", "rule_max_rounds", "rule_minutes",
    "rule_answer", "design", "design_confounds", "verdict", "comparable",
    "reason", "design_changed",
    "baseline_bottleneck",
    "candidate_bottleneck",
    "baseline_bottleneck_evidence", "candidate_bottleneck_evidence",
)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _answer_fields(answer: RuleAnswer | None) -> dict[str, object]:
    """A cell of a run's question: the stopping rule's final verdict (``RuleAnswer``); else all empty."""
    change = answer.change if answer is not None else None
    return {
        "rule_verdict": answer.decision.value if answer is not None else None,
        "rule_change_pct": round(100 * change.estimate, 2) if change is not None else None,
        "rule_change_ci_low_pct": _rounded_pct(change.low) if change is not None else None,
        "rule_change_ci_high_pct": _rounded_pct(change.high) if change is not None else None,
        "rule_rounds": answer.rounds if answer is not None else None,
        "rule_max_rounds": answer.max_rounds if answer is not None else None,
        "rule_minutes": round(answer.minutes, 2) if answer is not None and answer.minutes is not None else None,
        "rule_answer": answer.text() if answer is not None else None,
    }


def _rounded_pct(fraction: float) -> float | None:
    return round(100 * fraction, 2) if math.isfinite(fraction) else None  # unbounded: None


def comparison_rows(comparisons: Sequence[PointComparison], changed_runs: Collection[int] = ()
                    ) -> list[dict[str, object]]:
    """One row per point and metric; ``design_changed`` is true where a run of either side had its stopping rule
    changed on a resume (its sequential answer no longer holds its error rates)."""
    rows: list[dict[str, object]] = []
    lab_keys = varying_comparison_lab(comparisons)  # as the tables: rows of a pool_size sweep had read alike
    for c in comparisons:
        changed = any(run in changed_runs for run in (*c.baseline.run_ids, *c.candidate.run_ids))
        for cell in c.cells:
            b, k, d = cell.baseline, cell.candidate, cell.difference
            rows.append(export_row({
                "point": comparison_label(c, lab_keys), "direction": c.candidate.direction_name,
                "metric": cell.metric.field,
                "baseline_n": b.n if b else None, "baseline_mean": b.mean if b else None,
                "baseline_ci_low": b.ci_low if b else None, "baseline_ci_high": b.ci_high if b else None,
                "candidate_n": k.n if k else None, "candidate_mean": k.mean if k else None,
                "candidate_ci_low": k.ci_low if k else None, "candidate_ci_high": k.ci_high if k else None,
                "change_pct": _finite(d.change_pct) if d else None,  # from a mean of 0: None, see change
                "change_ci_low_pct": _finite(d.change_ci_low_pct) if d else None,
                "change_ci_high_pct": _finite(d.change_ci_high_pct) if d else None,  # unbounded: None
                # candidate - baseline in the metric's unit, with its interval (the one change from a mean of 0)
                "change": d.diff if d else None,
                "change_ci_low": d.ci_low if d else None, "change_ci_high": d.ci_high if d else None,
                "interval": d.method if d else None,
                "pairs": d.pairs if d and d.method in ("paired", "sequential") else None,
                "stopping_rule": cell.stopping_rule.value if cell.stopping_rule is not None else None,
                **_answer_fields(cell.answer),
                "design": c.design or None, "design_confounds": c.design in CONFOUNDED if c.design else None,
                "verdict": cell.verdict.value, "comparable": c.comparable, "reason": c.reason,
                "design_changed": changed,
                "baseline_bottleneck": c.baseline.bottleneck.kind.value,
                "candidate_bottleneck": c.candidate.bottleneck.kind.value,
                "baseline_bottleneck_evidence": c.baseline.bottleneck.evidence,
                "candidate_bottleneck_evidence": c.candidate.bottleneck.evidence,
            }, metric=cell.metric.field))
    return rows


def comparison_json(comparisons: Sequence[PointComparison], changed_runs: Collection[int] = ()) -> str:
    return json.dumps(comparison_rows(comparisons, changed_runs), indent=2) + "\n"


def comparison_csv(comparisons: Sequence[PointComparison], changed_runs: Collection[int] = ()) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(COMPARE_FIELDS), lineterminator="\n")
    writer.writeheader()
    for row in comparison_rows(comparisons, changed_runs):
        writer.writerow({k: "" if v is None else csv_cell(v) for k, v in row.items()})
    return buffer.getvalue()


def comparison_markdown(comparisons: Sequence[PointComparison], baseline: str, candidate: str,
                        notes: Sequence[str] = (), preamble: Sequence[str] = ()) -> str:
    """The comparison as a Markdown table; ``preamble``: lines said before it (where the sides came from, what
    their design leaves in the change), ``notes`` after it."""
    # where the time goes, when some point's storage reported it on both sides
    layers = [m for m in (*LAYER_METRICS, *FAILOVER_METRICS) if any(c.cell(m.field) is not None for c in comparisons)]
    rate = rate_unit(p.rw for c in comparisons for p in (c.baseline, c.candidate))  # ops/s for operations
    measured = compared_fields(comparisons, rate)
    lines = [
        *(f"{markdown_cell(line)}\n" for line in preamble),
        f"Baseline `{_code(baseline)}` vs candidate `{_code(candidate)}`: change of the candidate's mean, with its "
        f"interval ({interval_caption(comparisons)}). {VERDICT_LEGEND}",
        "",
        f"| point | {rate} baseline | {rate} candidate | " + "".join(f"{head} | " for _, head in measured)
        + "".join(f"{m.label} | " for m in layers) + "bottleneck |",
        "|---|---:|---:|" + "---:|" * (len(measured) + len(layers)) + "---|",
    ]
    lab_keys = varying_comparison_lab(comparisons)
    fields = (*(field for field, _ in measured), *(m.field for m in layers))
    for c in comparisons:
        label = comparison_label(c, lab_keys) + ("" if c.comparable else f" (x: {c.reason})")
        cells = [change_text(c, f)[0] for f in fields]
        lines.append(f"| {markdown_cell(label)} | {iops_with_ci(c.baseline.metric('iops'))} | "
                     f"{iops_with_ci(c.candidate.metric('iops'))} | " + " | ".join(cells)
                     + f" | {markdown_cell(bottleneck_change(c))} |")
    caveats = [*rule_answer_lines(comparisons), *stopping_rule_lines(comparisons), *design_lines(comparisons),
               *notes]
    if caveats:
        lines += ["", *(f"- {markdown_cell(line)}" for line in caveats)]
    cost = cost_change_markdown(cost_changes(comparisons))
    if cost:
        lines += ["", *cost]
    evidence = bottleneck_evidence_lines(comparisons)
    if evidence:
        lines += ["", "Bottlenecks (rules: storbench docs methodology bottleneck-verdicts):", ""]
        lines += [f"- {markdown_cell(line)}" for line in evidence]  # process names are anyone's to choose
    return safe_text("\n".join(lines) + "\n", multiline=True)


def _code(text: str) -> str:
    """Text for inside a Markdown code span: no backtick to end it early, on one line."""
    return text.replace("`", "'").replace("\n", " ")
