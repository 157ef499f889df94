"""`storbench show` as JSON, CSV or Markdown: one row per point (case and direction). Pure.

Field names carry their units like `export`'s (`iops`, `bw_bytes_per_s`, `lat_p99_ns`, `disk_util_pct`). Each metric
`M` of the summary gives `M` (the mean over ok repetitions, so it equals the mean of `export`'s `M` over
that point's repetitions), `M_n`, `M_stddev`, `M_ci_low`, `M_ci_high` (Student t, `ci_confidence`) and
`M_cv_pct`; empty (null) where nothing was measured or n < 2. Then `pct_of_expected` (the mean as a percentage
of what the target declared, `expect:`: IOPS where declared, else throughput; empty when nothing was declared),
the bottleneck verdict with its evidence, and the warnings: in JSON a list of {code, message, fix}; in CSV their
codes plus `warning_text`. Numbers are rounded to what they mean, as in every export (`export.export_number`).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence

from storbench.model import LabPoint, PreconditionRecord, Status, is_volume_operation
from storbench.report.export import export_row, markdown_cell
from storbench.report.labels import (
    block_size,
    interval_level,
    options_text,
    point_label,
    rate_unit,
    run_prefix,
    varying_lab_keys,
)
from storbench.report.steady import METRIC_LABELS, change_words, status_word
from storbench.report.tables import expected_cell, iops_with_ci, pct_of_expected, verdict_lines
from storbench.report.warning_text import warning_lines
from storbench.safe_text import csv_cell, safe_text
from storbench.stats.drift import run_drifts
from storbench.stats.estimate import CONFIDENCE, Estimate
from storbench.stats.observations import Observation
from storbench.stats.point_summary import PointSummary
from storbench.stats.steady import SteadyState, SteadyStatus
from storbench.stats.summary import SUMMARY_FIELDS
from storbench.units import format_bytes, format_latency_ns, format_percentile_ns

POINT_FIELDS = (
    "case_id", "run_ids", "target", "target_kind", "rw", "rwmixread", "bs", "bs_bytes", "iodepth", "numjobs",
    "clients", "direction", "ioengine", "direct", "runtime_s", "ramp_s", "fio_options", "lab", "fio_versions",
    "repetitions_ok", "repetitions_total", "ci_confidence", "lat_percentiles_from",
)
ESTIMATE_SUFFIXES = ("", "_n", "_stddev", "_ci_low", "_ci_high", "_cv_pct")
METRIC_FIELDS = tuple(f"{metric}{suffix}" for metric in SUMMARY_FIELDS for suffix in ESTIMATE_SUFFIXES)
VERDICT_FIELDS = (
    "bottleneck", "bottleneck_evidence", "bottleneck_in_flight", "bottleneck_slots", "busiest_device",
    "busiest_interface", "process_cpu_cores", "warnings", "warning_text", "last_error",
)
SHOW_FIELDS = (*POINT_FIELDS, *METRIC_FIELDS, "pct_of_expected", *VERDICT_FIELDS)


def _estimate_fields(metric: str, value: Estimate | None) -> dict[str, object]:
    return {
        metric: value.mean if value else None,
        f"{metric}_n": value.n if value else None,
        f"{metric}_stddev": value.stddev if value else None,
        f"{metric}_ci_low": value.ci_low if value else None,
        f"{metric}_ci_high": value.ci_high if value else None,
        f"{metric}_cv_pct": value.cv_pct if value else None,
    }


def point_row(p: PointSummary) -> dict[str, object]:
    """One point as JSON-ready values (lists and mappings where the value has parts)."""
    case, w = p.case, p.case.workload
    row: dict[str, object] = {
        "case_id": case.case_id, "run_ids": list(p.run_ids), "target": case.target.name,
        "target_kind": case.target.kind, "rw": w.rw, "rwmixread": w.rwmixread, "bs": block_size(p),
        "bs_bytes": w.bs_bytes, "iodepth": w.iodepth, "numjobs": w.numjobs, "clients": case.clients,
        "direction": p.direction_name, "ioengine": w.ioengine, "direct": w.direct, "runtime_s": w.runtime_s,
        "ramp_s": w.ramp_s, "fio_options": options_text(w), "lab": dict(p.lab),
        "fio_versions": list(p.fio_versions), "repetitions_ok": p.repetitions_ok,
        "repetitions_total": p.repetitions_total,
        "ci_confidence": next((e.confidence for _, e in p.estimates), CONFIDENCE),
        # "lat", or "clat" where fio wrote no total-latency bins: what the lat_p*_ns percentiles are
        "lat_percentiles_from": p.lat_percentiles_from,
    }
    for metric in SUMMARY_FIELDS:
        row.update(_estimate_fields(metric, p.metric(metric)))
    verdict = p.bottleneck
    row["pct_of_expected"] = pct_of_expected(p)
    row.update({
        "bottleneck": verdict.kind.value, "bottleneck_evidence": verdict.evidence,
        "bottleneck_in_flight": verdict.in_flight, "bottleneck_slots": verdict.slots,
        "busiest_device": p.busiest_device, "busiest_interface": p.busiest_interface,
        "process_cpu_cores": dict(p.process_cpu_cores),
        "warnings": [{"code": w.code, "message": w.message, "fix": w.fix} for w in p.warnings],
        "warning_text": " | ".join(w.text() for w in p.warnings),
        "last_error": p.last_error,
    })
    return export_row(row)


def points_json(points: Sequence[PointSummary]) -> str:
    rows = []
    for p in points:
        row = point_row(p)
        del row["warning_text"]  # the warnings themselves are structured here
        rows.append(row)
    return json.dumps(rows, indent=2) + "\n"


def _flat_row(p: PointSummary) -> dict[str, object]:
    """One point as CSV cells: parts joined the way `export` joins them."""
    row = point_row(p)
    row["run_ids"] = " ".join(str(r) for r in p.run_ids)
    row["lab"] = " ".join(f"{k}={v}" for k, v in p.lab)
    row["fio_versions"] = " ".join(p.fio_versions)
    row["process_cpu_cores"] = " ".join(f"{name}={cores:.3g}" for name, cores in p.process_cpu_cores)
    row["warnings"] = " ".join(w.code for w in p.warnings)
    return {k: "" if v is None else csv_cell(v) for k, v in row.items()}


def points_csv(points: Sequence[PointSummary]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(SHOW_FIELDS), lineterminator="\n")
    writer.writeheader()
    for p in points:
        writer.writerow(_flat_row(p))
    return buffer.getvalue()


PERCENTILE_FIELDS = ("lat_p50_ns", "lat_p95_ns", "lat_p99_ns", "lat_p999_ns")  # the markdown table's columns


def _lat(value: Estimate | None, percentile: bool = True) -> str:
    """A latency cell; a percentile in fio's last histogram bin as the floor it is (`format_percentile_ns`)."""
    return "-" if value is None else (format_percentile_ns if percentile else format_latency_ns)(value.mean)


def _number(value: Estimate | None, fmt: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value.mean / scale, fmt)


def points_markdown(points: Sequence[PointSummary], title: str, notes: Sequence[str] = ()) -> str:
    """A table a person reads (the numbers of `show`, with p50), then each point's bottleneck with its evidence,
    one line per kind of warning with its fix, and ``notes`` (e.g. drift over a run)."""
    lab_keys = varying_lab_keys(points)
    with_expected = any(p.expected is not None for p in points)
    rate = rate_unit(p.rw for p in points)  # ops/s for files, objects and volume operations
    level = interval_level(points)
    lines = [
        f"Results: {markdown_cell(title)}. Means over repetitions; {rate} with its {level} confidence interval "
        f"(Student t); CV is the "
        f"run-to-run spread of {rate}" + ("; % exp is the share of what the target was declared to deliver "
                                          "(expect)." if with_expected else "."),
        "",
        f"| point | dir | n | {rate} ± {level} CI | CV | MiB/s | " + ("% exp | " if with_expected else "")
        + "lat mean | p50 | p95 | p99 | p99.9 | cpu % | disk % | bottleneck | warnings |",
        "|---|---|---:|---:|---:|---:|" + ("---:|" if with_expected else "")
        + "---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for p in points:
        iops = p.metric("iops")
        cv = iops.cv_pct if iops else None
        disk = p.metric("disk_busiest_util_pct") or p.metric("disk_util_pct")
        exact = is_volume_operation(p.rw)  # a volume operation's times are exact: no histogram, no last bin
        cells = [
            run_prefix(p, points) + point_label(p, lab_keys=lab_keys, direction=False, options=True),
            p.direction_name or "-",
            f"{p.repetitions_ok}/{p.repetitions_total}", iops_with_ci(iops), "-" if cv is None else f"{cv:.1f}%",
            _number(p.metric("bw_bytes_per_s"), ",.1f", 1048576), *((expected_cell(p),) if with_expected else ()),
            _lat(p.metric("lat_mean_ns"), percentile=False),
            *(_lat(p.metric(field), percentile=not exact) for field in PERCENTILE_FIELDS),
            _number(p.metric("host_cpu_busy_pct"), ".0f"), _number(disk, ".0f"),
            p.bottleneck.short, " ".join(w.code for w in p.warnings),
        ]
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    verdicts = verdict_lines(points) if any(p.bottleneck.kind != "unknown" for p in points) else []
    if verdicts:
        lines += ["", "Bottlenecks (rules: storbench docs methodology bottleneck-verdicts):", ""]
        lines += [f"- {markdown_cell(line)}" for line in verdicts]
    warnings = warning_lines(points)
    if warnings or notes:  # they name points by their labels, which carry plan text: escaped as the cells are
        lines += ["", "Warnings:", ""]
        lines += [f"- {markdown_cell(line.removeprefix('⚠ '))}" for line in [*warnings, *notes]]
    return safe_text("\n".join(lines) + "\n", multiline=True)


def drift_lines(observations: Sequence[Observation], run_ids: Sequence[int]) -> list[str]:
    """A line for each run and operation (read or write IOPS, creates/s, ...) whose rate drifted significantly from
    its first to its last repetition; the change and its interval are ratios, never below -100 %."""

    lines = []
    for run_id in run_ids:
        for d in run_drifts(observations, run_id):
            change = d.over_run()
            if d.significant and change is not None:
                lines.append(f"⚠ run {run_id}: {d.rate} drifted {change[0]:+.1f} % [95% CI {change[1]:+.1f}, "
                             f"{change[2]:+.1f}] from its first to its last repetition ({d.span_minutes:.1f} min): "
                             "the interleaved order spreads it over all cases; consider a longer ramp or "
                             "preconditioning")
    return lines


def precondition_text(r: PreconditionRecord) -> str:
    """One precondition that ran: target, lab configuration, what, how much, how long."""
    lab = f" on {LabPoint.from_pairs(r.lab).describe()}" if r.lab else ""
    outcome = (f"{format_bytes(r.written_bytes)} written in {r.finished_at_s - r.started_at_s:.0f} s"
               if r.status == Status.OK else f"{r.status.value}: {r.error}")
    return f"target {r.target}{lab} preconditioned with {r.precondition.text()}: {outcome}"


def precondition_lines(records: Mapping[int, Sequence[PreconditionRecord]]) -> list[str]:
    """One line per precondition that ran, with its run (``precondition_text``)."""
    return [f"run {run_id}: {precondition_text(r)}" for run_id, found in sorted(records.items()) for r in found]


def steady_lines(states: Mapping[tuple[int, str], SteadyState], labels: Mapping[str, str]) -> list[str]:
    """How the points of steady-state runs stand: the rule, then one line per point (``labels``: case id ->
    its label) with its rounds and its window's range and slope."""
    lines = []
    rules = {state.rule.text() for state in states.values()}
    for rule in sorted(rules):
        lines.append(f"steady state: {rule}. A point's figures come from the rounds measured after its steady "
                     "window (chosen by nothing): their interval is their spread, consecutive rounds on one "
                     "instance, not between instances. A window's own rounds are chosen for their small spread: "
                     "a point with only those gives no interval")
    for (run_id, case_id), state in sorted(states.items()):
        lines.append(f"  run {run_id} {labels.get(case_id, case_id)}: {status_word(state)} ({steady_detail(state)})")
    return lines


def steady_detail(state: SteadyState) -> str:
    """A point's rounds in words: its window (where, range, slope, mean) and where its figures come from."""
    w = state.window
    if w is None:
        return f"{len(state.rounds)} rounds"
    name, scale = METRIC_LABELS.get(state.rule.metric, (state.rule.metric, 1.0))  # a latency in µs, not ns bare
    text = (f"rounds {w.rounds[0] + 1}-{w.rounds[-1] + 1}, {len(state.rounds)} measured: range "
            f"{100 * w.range_fraction:.1f} %, slope {100 * w.slope_excursion_fraction:.1f} %, "
            f"window mean {w.mean * scale:,.4g} {name}")
    if state.status is not SteadyStatus.STEADY:
        return text
    if state.window_only:
        return f"{text}; figures from the window: rounds chosen for small spread, no interval"
    first, last = state.confirmation[0][0] + 1, state.confirmation[-1][0] + 1
    mean = sum(v for _, v in state.confirmation) / len(state.confirmation)
    return (f"{text}; figures from rounds {first}-{last} after it, mean {mean * scale:,.4g} {name}; "
            f"{change_words(state)}")


def show_text(points: Sequence[PointSummary], fmt: str, title: str, notes: Sequence[str] = ()) -> str:
    """``points`` as ``fmt`` (json, csv or markdown; the table is rich's, printed by the CLI)."""
    if fmt == "json":
        return points_json(points)
    if fmt == "csv":
        return points_csv(points)
    if fmt == "markdown":
        return points_markdown(points, title, notes)
    raise ValueError(f"unknown format {fmt!r}")
