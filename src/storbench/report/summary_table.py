"""The HTML report's summary table: a row per point and direction, made to fit a 1,400 px window. Pure."""

from __future__ import annotations

import html
from collections.abc import Sequence

from storbench.model import is_volume_operation, moves_data
from storbench.report.labels import (
    block_size,
    direction_label,
    distinct_text,
    interval_level,
    lab_text,
    options_text,
    rate_unit,
    several_runs,
    varying_lab_keys,
)
from storbench.report.tables import expected_cell, iops_with_ci, telemetry_cell, telemetry_columns
from storbench.report.warning_text import warning_tag
from storbench.safe_text import safe_text
from storbench.stats.point_summary import PointSummary
from storbench.units import format_latency_ns, format_percentile_ns


def escaped(value: object) -> str:
    """Text for HTML: markup escaped, control characters shown escaped (``safe_text``; lines stay lines)."""
    return html.escape(safe_text(str(value), multiline=True), quote=True)


WRAPPED = ("target", "varies", "fio options", "lab", "verdict", "warnings")  # the summary's text columns: they wrap


def _warning_tags(point: PointSummary) -> str:
    """A row's warnings as short tags, each linked to its advice under the table (said once there) and
    carrying the point's own figures as its tooltip."""
    return " ".join(f"<a class='tag' href='#warning-{escaped(w.code)}' title='{escaped(w.message)}'>"
                    f"{escaped(warning_tag(w.code))}</a>" for w in point.warnings)


CLAT_MARK = " (clat)"  # after a percentile that is completion latency standing in for total latency


def summary_table(points: Sequence[PointSummary]) -> str:
    """The summary, made to fit a 1,400 px window without scrolling sideways: small type, headers and text
    columns that wrap (numbers never do)."""
    with_options = any(p.case.workload.fio_options for p in points)
    with_clients = any(p.clients != 1 for p in points)
    lab_keys = varying_lab_keys(points)
    extra = telemetry_columns(points)
    with_expected = any(p.expected is not None for p in points)
    # hidden fields that tell rows apart (an ioengine sweep), as in the terminal: rows had read the same but numbers
    varies = {id(p): " ".join(distinct_text(p, options=with_options)) for p in points}
    with_varies = any(varies.values())
    rate, level = rate_unit(p.rw for p in points), interval_level(points)
    runs = several_runs(points)  # rows of several runs (a report that keeps runs apart): a row's run, as `show` has
    head = (*(("run",) if runs else ()), "target", "rw", "bs", "iodepth", "jobs",
            *(("clients",) if with_clients else ()),
            *(("varies",) if with_varies else ()),
            *(("fio options",) if with_options else ()), *(("lab",) if lab_keys else ()), "dir", "n",
            f"{rate} ± {level} CI", "CV", "MiB/s", *(("% exp",) if with_expected else ()), "mean", "p50",
            "p95", "p99", "p99.9", "cpu %", "disk %", *(name for name, _, _ in extra), "verdict", "warnings")
    rows = []
    for p in points:
        iops = p.metric("iops")
        bw = p.metric("bw_bytes_per_s") if moves_data(p.rw) else None  # a file created moves no data
        cv = iops.cv_pct if iops else None

        def lat(field: str, point: PointSummary = p) -> str:
            estimate = point.metric(field)
            if not estimate:
                return "-"
            stand_in = field != "lat_mean_ns" and "clat" in point.lat_percentiles_from.split(",")
            # a floor in fio's last bin; a volume operation's times are exact (no histogram)
            exact = field == "lat_mean_ns" or is_volume_operation(point.rw)
            shown = format_latency_ns if exact else format_percentile_ns
            return shown(estimate.mean) + (CLAT_MARK if stand_in else "")

        mix = p.case.workload.rwmixread
        cells = (*((",".join(map(str, p.run_ids)),) if runs else ()), p.target,
                 p.rw + (f" {mix}%" if mix is not None else ""), block_size(p), p.iodepth,
                 p.numjobs, *((p.clients,) if with_clients else ()), *((varies[id(p)],) if with_varies else ()),
                 *((options_text(p.case.workload),) if with_options else ()),
                 *((lab_text(p, lab_keys),) if lab_keys else ()), direction_label(p.rw, p.direction_name),
                 f"{p.repetitions_ok}/{p.repetitions_total}", iops_with_ci(iops),
                 "-" if cv is None else f"{cv:.1f}%", "-" if bw is None else f"{bw.mean / 1048576:,.1f}",
                 *((expected_cell(p),) if with_expected else ()), lat("lat_mean_ns"), lat("lat_p50_ns"),
                 lat("lat_p95_ns"), lat("lat_p99_ns"), lat("lat_p999_ns"),
                 telemetry_cell(p.metric("host_cpu_busy_pct"), ".0f"),
                 telemetry_cell(p.metric("disk_busiest_util_pct") or p.metric("disk_util_pct"), ".0f"),
                 *(telemetry_cell(p.metric(field), fmt) for _, field, fmt in extra),
                 p.bottleneck.kind.value)
        css = ' class="failed"' if p.repetitions_ok < p.repetitions_total else ""
        rows.append(f"<tr{css}>" + "".join(f"<td class='wrap'>{escaped(c)}</td>" if h in WRAPPED
                                           else f"<td>{escaped(c)}</td>" for h, c in zip(head[:-1], cells, strict=True))
                    + f"<td class='wrap'>{_warning_tags(p)}</td></tr>")  # tags; the advice once, below
    clat = sum("clat" in p.lat_percentiles_from.split(",") for p in points)
    note = (f"<p class='note'>Percentiles marked{CLAT_MARK} are completion latency, standing in for total latency: "
            f"the fio output of {clat} point{'s' if clat > 1 else ''} has no total-latency bins (fio writes them "
            "only with lat_percentiles=1)</p>") if clat else ""
    return ("<div class='wide'><table class='data summary'><thead><tr>"
            + "".join(f"<th>{escaped(h)}</th>" for h in head)
            + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table></div>" + note)
