"""The self-contained HTML report: summary, comparisons, figures, provenance. Pure: data in, one string out.

plotly.js is embedded (gzip-compressed, unpacked by the browser's DecompressionStream), so the file opens
without a network; the figures' shared plotly template is embedded once. Every text that came from a plan, a fio output
or a database is escaped. A small script records JavaScript errors and empty charts in
``body[data-report-status]`` (used by the tests in headless Chromium) and shows them on the page.
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
from collections.abc import Sequence
from dataclasses import dataclass

from storbench import __version__
from storbench.model import RunInfo
from storbench.model.objective import LatencyObjective
from storbench.report.compare_tables import (
    VERDICT_LEGEND,
    bottleneck_change,
    change_text,
    compared_fields,
    design_lines,
    interval_caption,
    rule_answer_lines,
)
from storbench.report.cost import COST_SECTION, cost_table_html
from storbench.report.cost_compare import cost_change_html, cost_changes
from storbench.report.failover import SCORECARD_CAPTION, SCORECARD_HEAD
from storbench.report.failover import SECTION as FAILOVER_SECTION
from storbench.report.figures import BOTTLENECK_SECTION, FigureSpec
from storbench.report.labels import (
    comparison_label,
    curve_lab_keys,
    curve_label,
    curves_runs_apart,
    plans_of,
    rate_unit,
    varying_comparison_lab,
)
from storbench.report.plotly_render import plotly_json, template_json
from storbench.report.saturation_tables import knee_text, runs_apart_text, unshown_text
from storbench.report.summary_table import escaped as _e
from storbench.report.summary_table import summary_table
from storbench.report.tables import case_verdicts, iops_with_ci
from storbench.report.warning_text import warning_groups, warning_tag
from storbench.stats.compare_cells import PointComparison, stopping_rule_lines
from storbench.stats.knee import Curve, best_under_objective
from storbench.stats.point_summary import PointSummary
from storbench.units import format_latency_ns


@dataclass(frozen=True)
class ReportDocument:
    title: str
    runs: tuple[RunInfo, ...]
    points: tuple[PointSummary, ...]
    figures: tuple[FigureSpec, ...]
    warnings: tuple[str, ...] = ()
    comparisons: tuple[PointComparison, ...] = ()
    baseline: str = ""
    candidate: str = ""
    asked_by: tuple[int, ...] = ()  # runs whose plans' `compare:` the sides are; (): the command line's
    curves: tuple[Curve, ...] = ()
    objective: LatencyObjective | None = None
    job_texts: tuple[tuple[str, str, str], ...] = ()  # (case id, label, job file) per case
    preconditions: tuple[tuple[int, str, str], ...] = ()  # (run id, what ran in words, its job file)
    failover: tuple[tuple[str, ...], ...] = ()  # the failover scorecard's rows (`report.failover.scorecard_rows`)
    failover_verdicts: tuple[str, ...] = ()  # each point's verdict in a sentence (`report.failover.failover_verdict`)
    # each point's figures in full, as `show` says them (`report.failover.failover_line`): the recovery time, what was
    # within chance, what was undecided, an undoing's error, which the table has no room for
    failover_details: tuple[str, ...] = ()


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "unfinished"
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _warnings(doc: ReportDocument) -> str:
    """The summary's warnings under its table: each kind once, with its tag (the rows carry only the tag), the
    points it concerns and its fix; then the other notes (``doc.warnings`` lines that are not a kind's)."""
    groups = warning_groups(doc.points)
    said = {line for _, line in groups}
    items = "".join(f"<li id='warning-{_e(code)}'><span class='tag'>{_e(warning_tag(code))}</span> {_e(line)}</li>"
                    for code, line in groups)
    return ((f"<ul class='warn'>{items}</ul>" if items else "")
            + "".join(f"<p class='warn'>{_e(w)}</p>" for w in doc.warnings if w not in said))


def _bottleneck_table(points: Sequence[PointSummary]) -> str:
    """One row per case: the verdict and the figures behind it."""
    rows = []
    for label, verdict in case_verdicts(points):
        kind = verdict.kind.value
        rows.append(f"<tr><td>{_e(label)}</td><td class='bottleneck-{_e(kind.split()[0])}'>"
                    f"{_e(kind)}</td><td>{_e(verdict.evidence)}</td></tr>")
    return ("<p>Each point's bottleneck, from CPU, device, network and client figures sampled during its "
            "measured window (rules and thresholds: "
            "storbench docs methodology bottleneck-verdicts).</p>"
            "<table class='data bottlenecks'><thead><tr><th>point</th><th>verdict</th><th>evidence</th></tr>"
            "</thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _failover_table(rows: Sequence[tuple[str, ...]]) -> str:
    """What each point's faults did: its scorecard row (`report.failover.scorecard_rows`)."""
    head = "".join(f"<th>{_e(name)}</th>" for name in SCORECARD_HEAD)
    body = "".join("<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return (f"<p>{_e(SCORECARD_CAPTION)}</p>"
            f"<table class='data failover'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def _evidence_title(c: PointComparison) -> str:
    return (f"baseline: {c.baseline.bottleneck.evidence}\ncandidate: {c.candidate.bottleneck.evidence}")


def _comparison_table(doc: ReportDocument) -> str:
    rate = rate_unit(p.rw for c in doc.comparisons for p in (c.baseline, c.candidate))  # ops/s for operations
    measured = compared_fields(doc.comparisons, rate)  # volume operations: their time and slowest client
    head = ("point", f"{rate} baseline", f"{rate} candidate", *(name for _, name in measured), "bottleneck")
    rows = []
    lab_keys = varying_comparison_lab(doc.comparisons)
    for c in doc.comparisons:
        cells = []
        for field, _ in measured:
            text, verdict = change_text(c, field)
            cells.append(f"<td class='verdict-{_e(verdict.name.lower())}'>{_e(text)}</td>")
        label = comparison_label(c, lab_keys) + ("" if c.comparable else f" (x: {c.reason})")
        rows.append(f"<tr><td>{_e(label)}</td><td>{_e(iops_with_ci(c.baseline.metric('iops')))}</td>"
                    f"<td>{_e(iops_with_ci(c.candidate.metric('iops')))}</td>" + "".join(cells)
                    + f"<td title='{_e(_evidence_title(c))}'>{_e(bottleneck_change(c))}</td></tr>")
    asked = (f", the comparison {plans_of(doc.asked_by, 'ask')} ({'their' if len(doc.asked_by) > 1 else 'its'} "
             "<code>compare:</code>)" if doc.asked_by else "")
    return (f"<p>Baseline <code>{_e(doc.baseline)}</code> vs candidate <code>{_e(doc.candidate)}</code>{asked}: change "
            f"of the candidate's mean with its interval ({_e(interval_caption(doc.comparisons))}). "
            f"{_e(VERDICT_LEGEND)}</p><table class='data compare'><thead><tr>"
            + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>" + "".join(f"<p>{_e(line)}</p>" for line in [
                *rule_answer_lines(doc.comparisons), *stopping_rule_lines(doc.comparisons)])
            + "".join(f"<p class='warn'>{_e(line)}</p>" if line.startswith("⚠") else f"<p>{_e(line)}</p>"
                      for line in design_lines(doc.comparisons))
            + cost_change_html(cost_changes(doc.comparisons)))


def _saturation_table(doc: ReportDocument) -> str:
    rate = rate_unit(c.point.rw for curve in doc.curves for c in curve.points)
    head = ["curve", "knee", f"max {rate}"]
    if doc.objective:
        head.append(f"max {rate} with {doc.objective.label} ≤ {format_latency_ns(doc.objective.limit_ns)}")
    rows = []
    lab_keys, runs = curve_lab_keys(doc.curves), curves_runs_apart(doc.curves)
    for curve in doc.curves:
        peak = max(curve.points, key=lambda c: c.iops)
        cells = [curve_label(curve, lab_keys, runs=runs), knee_text(curve),
                 f"{curve.axis}={peak.load}: {peak.iops:,.0f} {rate}, p99 {format_latency_ns(peak.lat_p99_ns)}"]
        if doc.objective:
            best = best_under_objective(curve, doc.objective, doc.curves)
            cells.append("none shown to meet it" if best is None
                         else f"{curve.axis}={best.load}: {best.iops:,.0f} {rate}" + unshown_text(best, doc.objective))
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in cells) + "</tr>")
    apart = runs_apart_text(doc.curves)
    return ("<table class='data saturation'><thead><tr>" + "".join(f"<th>{_e(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
            + (f"<p>{_e(apart)}</p>" if apart else ""))


def _provenance(doc: ReportDocument) -> str:
    parts = []
    for run in doc.runs:
        parts.append(
            f"<h3>Run {run.run_id}: plan <code>{_e(run.plan_name)}</code></h3><table class='kv'>"
            + "".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in (
                ("source", run.source), ("storbench", run.storbench_version), ("fio", run.fio_version),
                ("host", run.host), ("kernel", run.kernel), ("CPUs", run.cpu_count or "?"),
                ("memory", f"{run.mem_total_bytes / 2**30:.1f} GiB" if run.mem_total_bytes else "?"),
                ("order", f"{run.run_order} (seed {run.seed})"), ("tags", ", ".join(run.tags) or "-"),
                ("labels", " ".join(f"{k}={v}" for k, v in run.labels) or "-"),
                *((("merged from", f"run {run.merged_from.run_id} of {run.merged_from.database}, "
                                   f"{_time(run.merged_from.merged_at_s)}"),) if run.merged_from else ()),
                ("started", _time(run.started_at_s)), ("finished", _time(run.finished_at_s))))
            + f"</table><details><summary>plan text</summary><pre>{_e(run.plan_text)}</pre></details>"
            + "".join(f"<p>{_e(said)}</p><details><summary>its fio job file</summary><pre>{_e(job)}</pre></details>"
                      for run_id, said, job in doc.preconditions if run_id == run.run_id))
    jobs = "".join(f"<details><summary>case <code>{_e(case_id)}</code> {_e(label)}</summary><pre>{_e(text)}</pre>"
                   "</details>" for case_id, label, text in doc.job_texts if text)
    return "".join(parts) + ("<h3>Exact fio job files</h3>" + jobs if jobs else "")


_CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1d2733;background:#f6f7f9}
header{background:#1d2733;color:#fff;padding:18px 32px}header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#b8c2cc;font-size:13px}
main{padding:8px 32px 40px;max-width:1500px}section{background:#fff;border-radius:6px;padding:12px 20px;
margin:16px 0;box-shadow:0 1px 2px rgba(0,0,0,.08)}h2{font-size:18px;margin:8px 0}
div.wide{overflow-x:auto}
table.summary td:last-child,table.summary th:last-child{white-space:normal;text-align:left;min-width:11em}
table.data.summary,table.data.compare,table.data.failover{font-size:11.5px}
table.data.failover th,table.data.failover td{white-space:normal;padding:3px 4px}
table.data.summary th,table.data.compare th{white-space:normal;vertical-align:bottom}
table.data.summary th,table.data.summary td,table.data.compare th,table.data.compare td{padding:3px 4px}
table.data.summary td.wrap{white-space:normal;text-align:left;overflow-wrap:break-word}
table.data.compare td{white-space:normal}table.data.compare td:first-child{min-width:12em}
table.saturation td:nth-child(2),table.saturation th:nth-child(2),table.cost-change td:nth-child(2),
table.cost-change th:nth-child(2){white-space:normal;text-align:left}
table.data{border-collapse:collapse;font-size:12.5px;width:100%}table.data th,table.data td{padding:3px 7px;
border-bottom:1px solid #e3e6ea;text-align:right;white-space:nowrap}table.data th{background:#eef1f4}
table.data td:first-child,table.data th:first-child{text-align:left}tr.failed td{color:#b00020}
td.verdict-better{color:#13795b;font-weight:600}td[class^=bottleneck-]{font-weight:600;white-space:nowrap}
td.bottleneck-cpu-bound,td.bottleneck-media-bound,td.bottleneck-network-bound,td.bottleneck-client-bound{color:#b35900}
td.bottleneck-under-driven{color:#1f5fa8}td.bottleneck-capped{color:#7a3fa8}
table.bottlenecks td,table.bottlenecks th{text-align:left}table.bottlenecks td:last-child{white-space:normal}
table.bottlenecks+div.grid{margin-top:14px}td.verdict-worse{color:#b00020;font-weight:600}
td.verdict-undecided{color:#6b7785}td.verdict-not_comparable{color:#a66a00}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(640px,100%),1fr));gap:12px}
.figure{border:1px solid #e3e6ea;border-radius:4px;padding:4px}.figure p{font-size:12px;color:#5b6673;margin:2px 8px}
pre{background:#f3f4f6;padding:8px;font-size:12px;overflow:auto}table.kv th{text-align:left;padding-right:12px}
table.notes{font-size:12.5px;margin:4px 8px;border-collapse:collapse}table.notes th{text-align:left;
vertical-align:top;padding:2px 10px 2px 0;color:#5b6673;font-weight:600;white-space:nowrap}
table.notes td{padding:2px 0}
.warn{color:#8a5a00;font-size:13px}ul.warn{padding-left:18px}ul.warn li{margin:3px 0}
.tag{display:inline-block;font-size:10.5px;color:#8a5a00;background:#fff4dc;border:1px solid #f0d9a8;
border-radius:3px;padding:0 4px;margin:1px 2px 1px 0;white-space:nowrap;text-decoration:none}
#report-status{font-size:12px;color:#5b6673}#report-status.bad{color:#b00020}
p.note{font-size:12px;color:#3d4752;margin:6px 0}
"""

_STATUS_JS = """
window.__reportErrors = [];
window.addEventListener('error', function (e) { window.__reportErrors.push(String(e.message || e)); });
window.addEventListener('unhandledrejection', function (e) { window.__reportErrors.push(String(e.reason)); });
"""

_DRAW_JS = """
function drawReport() {
  var specs = document.querySelectorAll('script.figure-spec');
  var template = JSON.parse(document.getElementById('plotly-template').textContent);
  var jobs = [];
  specs.forEach(function (node) {
    try {
      var fig = JSON.parse(node.textContent);
      fig.layout = fig.layout || {};
      fig.layout.template = template;
      var target = document.getElementById(node.dataset.target);
      jobs.push(Plotly.newPlot(target, fig.data, fig.layout, {displaylogo: false, responsive: true}));
    } catch (err) { window.__reportErrors.push('figure ' + node.dataset.target + ': ' + err); }
  });
  Promise.all(jobs).then(finish, function (err) { window.__reportErrors.push(String(err)); finish(); });
  function finish() {
    var plots = Array.prototype.slice.call(document.querySelectorAll('div.figure-plot'));
    var empty = plots.filter(function (d) {
      var hasData = (d.data || []).some(function (t) { return (t.x && t.x.length) || (t.y && t.y.length); });
      return !hasData || !d.querySelector('.main-svg');
    }).map(function (d) { return d.id; });
    // tables that scroll sideways or run past their section in this window (the tests open it 1,400 px wide)
    var overflow = Array.prototype.slice.call(document.querySelectorAll('table.data')).filter(function (t) {
      var box = t.parentElement.classList.contains('wide') ? t.parentElement : t.closest('section');
      return t.parentElement.scrollWidth > t.parentElement.clientWidth + 1 ||
        t.getBoundingClientRect().right >
          box.getBoundingClientRect().right - parseFloat(getComputedStyle(box).paddingRight) + 1;
    }).map(function (t) { return t.className; });
    var status = {figures: plots.length, rendered: plots.length - empty.length, empty: empty,
                  errors: window.__reportErrors, overflow: overflow, width: window.innerWidth};
    document.body.setAttribute('data-report-status', JSON.stringify(status));
    var line = document.getElementById('report-status');
    line.textContent = status.rendered + ' of ' + status.figures + ' figures rendered' +
      (status.errors.length ? '; errors: ' + status.errors.join('; ') : '') +
      (status.empty.length ? '; empty: ' + status.empty.join(', ') : '');
    if (status.errors.length || status.empty.length) { line.className = 'bad'; }
  }
}
"""

# plotly.js travels gzip-compressed (base64) and is unpacked by the browser's own DecompressionStream: a third
# of the size of the plain source, still one file that opens without a network.
_LOAD_JS = """
(function () {
  var packed = document.getElementById('plotly-gz').textContent.trim();
  if (typeof DecompressionStream === 'undefined') {
    window.__reportErrors.push('this browser cannot unpack the embedded plotly.js (it needs DecompressionStream: ' +
                               'Chrome 80, Firefox 113, Safari 16.4 or later)');
    drawReport();
    return;
  }
  var text = atob(packed);
  var bytes = new Uint8Array(text.length);
  for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
  var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  new Response(stream).text().then(function (source) {
    var script = document.createElement('script');
    script.textContent = source;
    document.head.appendChild(script);
    drawReport();
  }, function (err) { window.__reportErrors.push('unpacking plotly.js: ' + err); drawReport(); });
})();
"""


def packed_js(source: str) -> str:
    """``source`` gzip-compressed (reproducibly: no timestamp) and base64-encoded, for _LOAD_JS to unpack."""
    return base64.b64encode(gzip.compress(source.encode(), compresslevel=9, mtime=0)).decode("ascii")


def _figure_block(figure: FigureSpec) -> str:
    notes = "".join(f"<tr><th>{_e(what)}</th><td>{_e(text)}</td></tr>" for what, text in figure.notes)
    return (f"<div class='figure'><div id='{_e(figure.figure_id)}' class='figure-plot'></div>"
            + (f"<table class='notes'>{notes}</table>" if notes else "")
            + f"<p>{_e(figure.caption)}</p><script type='application/json' class='figure-spec' "
            f"data-target='{_e(figure.figure_id)}'>{plotly_json(figure)}</script></div>")


def render_html(doc: ReportDocument, plotly_js: str) -> str:
    """The whole report as one HTML string; ``plotly_js`` is the plotly.js source to embed."""
    sections: list[str] = []
    warnings = _warnings(doc)
    sections.append(f"<section><h2>Summary</h2>{summary_table(doc.points)}{warnings}</section>")
    tabled: dict[str, int] = {}  # sections that open with a table: their figures go under it, one heading
    if any(p.bottleneck.kind != "unknown" for p in doc.points):
        tabled[BOTTLENECK_SECTION] = len(sections)
        sections.append(f"<section><h2>{BOTTLENECK_SECTION}</h2>{_bottleneck_table(doc.points)}</section>")
    if doc.comparisons:
        tabled["Comparison"] = len(sections)
        sections.append(f"<section><h2>Comparison</h2>{_comparison_table(doc)}</section>")
    if cost := cost_table_html(doc.points):
        tabled[COST_SECTION] = len(sections)
        # its own scroll when wider than the page (it had run out of its section)
        sections.append(f"<section><h2>{COST_SECTION}</h2><div class='wide'>{cost}</div></section>")
    if doc.curves:
        tabled["Saturation"] = len(sections)
        sections.append(f"<section><h2>Saturation</h2>{_saturation_table(doc)}</section>")
    if doc.failover:
        tabled[FAILOVER_SECTION] = len(sections)
        verdicts = "".join(f"<li>{_e(v)}</li>" for v in doc.failover_verdicts)
        sections.append(f"<section><h2>{FAILOVER_SECTION}</h2>"
                        + (f"<ul class='verdicts'>{verdicts}</ul>" if verdicts else "")
                        + _failover_table(doc.failover)
                        + "".join(f"<p class='note'>{_e(line.strip())}</p>" for line in doc.failover_details)
                        + "</section>")
    by_section: dict[str, list[FigureSpec]] = {}
    for figure in doc.figures:
        by_section.setdefault(figure.section or "Figures", []).append(figure)
    for name, figures in by_section.items():
        grid = f"<div class='grid'>{''.join(_figure_block(figure) for figure in figures)}</div>"
        if name in tabled:  # e.g. the capped pictures under the verdicts, the change bars under the table
            sections[tabled[name]] = sections[tabled[name]].replace("</section>", grid + "</section>")
            continue
        sections.append(f"<section><h2>{_e(name)}</h2>{grid}</section>")
    sections.append(f"<section><h2>Provenance</h2>{_provenance(doc)}</section>")
    runs = ", ".join(str(r.run_id) for r in doc.runs)
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta name='viewport' content='width=device-width, initial-scale=1'><title>{_e(doc.title)}</title>"
        f"<style>{_CSS}</style><script>{_STATUS_JS}</script></head><body>"
        f"<header><h1>{_e(doc.title)}</h1><p>storbench {_e(__version__)} · runs {_e(runs)} · "
        f"{len(doc.points)} points <span id='report-status'>rendering…</span></p></header>"
        f"<main>{''.join(sections)}</main>"
        f"<script type='application/json' id='plotly-template'>{template_json()}</script>"
        f"<script type='application/octet-stream' id='plotly-gz'>{packed_js(plotly_js)}</script>"
        f"<script>{_DRAW_JS}{_LOAD_JS}</script></body></html>"
    )
