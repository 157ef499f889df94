"""Commands over stored results: `show`, `export` and `saturation` (`compare` and `report`: `cli.compare`).

Which results they read is decided in `storbench.selection`; the numbers come from `stats`, the text from
`report`. Here: arguments in, printing and exit codes out.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING

from storbench.cli.common import (
    SafeConsole,
    _console,
    _write_output,
    db_option,
    file_console,
    filters,
)
from storbench.errors import UserError

if TYPE_CHECKING:  # heavy modules (scipy, sqlite) load only for the commands that use them
    from rich.console import Console

    from storbench.selection import Selection
    from storbench.stats.point_summary import PointSummary


def _print_results(db: str, run_ids: list[int], title: str) -> Selection:
    """A run's closing table: what `show` prints for that run, from one place; the runs as read (the closing
    comparison reads them too)."""
    from storbench.selection import select

    selection = select(db, ",".join(str(r) for r in run_ids), [], default_latest=True)
    if selection.observations:
        _show_table(selection, title, db)
    return selection


def _print_points(points: Sequence[PointSummary], title: str, out: Console | None = None, *,
                  wide: bool = False) -> None:
    """The results table (fitted to the console's width unless ``wide``); under it each point's bottleneck
    verdict with its evidence, and one line per kind of warning with its fix."""
    from storbench.report.tables import results_table, verdict_lines
    from storbench.report.warning_text import warning_lines

    out = out or _console()
    table = results_table(points, title, None if wide else out.width)
    if wide and out.width < 1000:  # every column whole: wider than the terminal if need be
        SafeConsole(file=out.file, width=1000, highlight=False, soft_wrap=False,
                    color_system="auto" if out.color_system else None).print(table)
    else:
        out.print(table)
    if any(p.bottleneck.kind != "unknown" for p in points):
        out.print("bottlenecks (rules: storbench docs methodology bottleneck-verdicts):", markup=False)
        for line in verdict_lines(points):
            out.print(f"  {line}", markup=False)
    elif points:  # a column of "?" and nothing under it had said why: each reason once (no telemetry, a fault)
        for evidence in dict.fromkeys(p.bottleneck.evidence for p in points if p.bottleneck.evidence):
            out.print(f"verdict ?: {evidence}", markup=False)
    for line in warning_lines(points):
        out.print(line, markup=False)


def require_results(selection: Selection, args: argparse.Namespace) -> None:
    """Something to show: else why not, in one line: what --where/--target matched nothing of, or the chosen runs
    that have no repetition stored yet."""
    if selection.observations:
        return
    if args.where or args.target:
        raise UserError(selection.no_match or "no results match", hint="loosen --where/--target, or try --run all")
    runs = ", ".join(str(r.run_id) for r in selection.runs)
    raise UserError(f"{'run ' + runs if runs else 'the runs chosen'} in {args.db}: no repetition stored yet",
                    hint="run its plan (or --resume it), or pick another run with --run (--run all for every one)")


def cmd_show(args: argparse.Namespace) -> int:
    from storbench.report.show_export import show_text
    from storbench.selection import run_notes, select, where_items
    from storbench.stats.summary import summarize_points

    if args.cost and args.format != "table":
        raise UserError(f"--cost is a table of its own; --format {args.format} gives each point's summary without it",
                        hint="drop --format for the cost table (-o FILE writes it), or drop --cost")
    if args.raw:
        return _show_raw(args)
    selection = select(args.db, args.run, where_items(args.where, args.target), default_latest=True)
    require_results(selection, args)
    title = f"{selection.label} — {args.db}"
    if args.format != "table":
        points = summarize_points(selection.observations, selection.memory, expectations=selection.expectations,
                                  levels=selection.interval_levels, by_run=not args.pool)
        notes = [*_interval_notes(selection, points), *run_notes(selection, args.db)]  # what the table says
        _write_output(show_text(points, args.format, title, notes), args.output)
        return 0
    if args.cost:
        from storbench.report.cost import cost_notes, cost_points, cost_table

        points = summarize_points(selection.observations, selection.memory, expectations=selection.expectations,
                                  levels=selection.interval_levels, by_run=not args.pool)
        if not cost_points(points):
            raise UserError("no point has a CPU cost: it needs telemetry (host CPU and processes) beside its runs",
                            hint="keep `telemetry: {enabled: true}` (the default) in the plan and run it again")
        out = _console() if args.output in ("", "-") else file_console()
        out.print(cost_table(points, title))
        for line in [*cost_notes(points), *_interval_notes(selection, points)]:
            out.print(line, markup=False)
        if args.output not in ("", "-"):
            _write_output(out.export_text(), args.output)
        return 0
    if args.output in ("", "-"):
        _show_table(selection, title, args.db, wide=args.wide, pool=args.pool)
    else:
        recorder = file_console()
        _show_table(selection, title, args.db, recorder, wide=True, pool=args.pool)
        _write_output(recorder.export_text(), args.output)
    return 0


def _show_raw(args: argparse.Namespace) -> int:
    """`show --raw WHAT`: each chosen repetition's job file, command, fio output or standard error, as stored."""
    from storbench.report.provenance import RepetitionTexts, fio_texts
    from storbench.selection import repetition_keys, select, where_items
    from storbench.store import open_store

    given = [flag for flag, on in (("--cost", args.cost), (f"--format {args.format}", args.format != "table"),
                                   ("--pool", args.pool), ("--wide", args.wide)) if on]
    if given:
        raise UserError(f"--raw gives each repetition's {args.raw} as stored; {given[0]} is for the results table",
                        hint="drop one of them (--where and --run choose the repetitions --raw shows)")
    selection = select(args.db, args.run, where_items(args.where, args.target), default_latest=True)
    require_results(selection, args)
    chosen = repetition_keys(selection.observations)
    repetitions = [r for r in selection.repetitions if (r.run_id, r.case.case_id, r.rep_index) in chosen]
    store = open_store(args.db, read_only=True)
    try:
        items = []
        for r in repetitions:
            job_text, command, output, stderr = store.repetition_provenance(r.repetition_id)
            items.append(RepetitionTexts(r.run_id, r.case, r.rep_index, r.status, r.error, job_text,
                                         tuple(command), output, stderr))
    finally:
        store.close()
    _write_output(fio_texts(items, args.raw), args.output)
    return 0


def _interval_notes(selection: Selection, points: Sequence[PointSummary]) -> list[str]:
    """What a table's intervals are, said under `show`'s and `show --cost`'s alike: points pooled over runs (the
    run the sample), each run's drift, and the level of a run repeated `until: ci`."""
    from storbench.report.show_export import drift_lines
    from storbench.report.tables import interval_level_lines, pooled_runs_line

    pooled = pooled_runs_line(points)
    return [*([pooled] if pooled else []),
            *drift_lines(selection.observations, [run.run_id for run in selection.runs]),
            *interval_level_lines(selection.interval_levels)]


def _show_table(selection: Selection, title: str, db: str, out: Console | None = None, *,
                wide: bool = False, pool: bool = False) -> None:
    """The results table with everything said under it: verdicts, warnings, drift, incomplete runs, what ran
    first and steady states. `show` and the end of `run` both print it. Each run's points are its own (a case
    several runs measured is a row per run, with a run column) unless ``pool``."""
    from storbench.report.failover import failover_lines
    from storbench.report.labels import point_label, varying_lab_keys
    from storbench.report.show_export import precondition_lines, steady_lines
    from storbench.report.write_checks import write_check_lines
    from storbench.selection import run_notes
    from storbench.stats.failover_points import point_failovers
    from storbench.stats.summary import summarize_points
    from storbench.stats.write_checks import point_write_checks

    points = summarize_points(selection.observations, selection.memory, expectations=selection.expectations,
                              levels=selection.interval_levels, by_run=not pool)
    out = out or _console()
    _print_points(points, title, out, wide=wide)
    for line in _interval_notes(selection, points):
        out.print(line, markup=False)
    for line in run_notes(selection, db):
        out.print(line, markup=False)
    shown = {p.case_id for p in points}
    varying = varying_lab_keys(points)
    labels = {p.case_id: point_label(p, direction=False, lab_keys=varying) for p in points}
    failovers = [p for p in point_failovers(selection.repetitions) if p.case_id in shown]
    checks = [c for c in point_write_checks(selection.repetitions) if c.case_id in shown]
    for line in [*precondition_lines(selection.preconditions),
                 *steady_lines({k: v for k, v in selection.steady.items() if k[1] in shown}, labels),
                 *failover_lines(failovers, labels, checks),
                 *write_check_lines(checks, labels)]:
        out.print(line, markup=False)


def cmd_export(args: argparse.Namespace) -> int:
    from storbench.records import export_records
    from storbench.report.export import export
    from storbench.selection import select, where_items

    selection = select(args.db, args.run, where_items(args.where, args.target), default_latest=False,
                       per_client=args.per_client)
    if args.where or args.target:  # a filter that matched nothing is a mistake to say, as show says it
        require_results(selection, args)
    records = export_records(selection.observations, selection.expectations)
    if args.format == "parquet":
        from storbench.report.parquet import records_parquet

        _write_output(records_parquet(records), args.output)
    else:
        _write_output(export(records, args.format), args.output)
    return 0


def cmd_saturation(args: argparse.Namespace) -> int:
    from storbench.report.saturation_tables import saturation_table
    from storbench.selection import parse_objective, select, where_items
    from storbench.stats.curve import LOAD_AXES
    from storbench.stats.knee import curves
    from storbench.stats.summary import summarize_points

    objective = parse_objective(args.slo)
    selection = select(args.db, args.run, where_items(args.where, args.target), default_latest=True)
    require_results(selection, args)
    points = summarize_points(selection.observations, selection.memory, expectations=selection.expectations,
                              levels=selection.interval_levels)
    axes = [args.axis] if args.axis else list(LOAD_AXES)
    found = [c for axis in axes for c in curves(points, axis)]
    if not found:
        raise UserError("no curve: no points differ only in " + " or ".join(axes),
                        hint=f"sweep {' or '.join(axes)} in the plan (e.g. {axes[0]}: [1, 4, 16, 64])")
    _console().print(saturation_table(found, objective))
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show", help="results as a table, one row per case and direction")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run)")
    p.add_argument("--format", choices=("table", "json", "csv", "markdown"), default="table",
                   help="table (default), or each point's summary (mean, CI, CV, n, percentiles, utilisation, "
                   "bottleneck and evidence, warnings) as json, csv or markdown")
    p.add_argument("-o", "--output", default="-", help="file to write, the table as plain text too (default: "
                   "standard output)")
    p.add_argument("--wide", action="store_true",
                   help="every column, however wide (default: the essential columns first, as many as fit)")
    p.add_argument("--pool", action="store_true",
                   help="with several runs of one plan, pool each case's repetitions over them into one row "
                   "(default: a row per run, with a run column)")
    p.add_argument("--cost", action="store_true",
                   help="what each I/O cost in CPU: µs per I/O by component (fio, the Ceph daemons, nfs-ganesha, "
                   "radosgw, the kernel) with intervals, and IOPS per core")
    p.add_argument("--raw", choices=("job", "command", "output", "stderr"), default=None,
                   help="each chosen repetition's exact fio job file, command line, fio output or standard error as "
                   "stored, after '#' lines naming it (one repetition's job file runs with fio as it is; choose it "
                   "with --where case_id=ID --where repeat=N)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="one record per repetition and direction as json, csv, markdown or parquet")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: all runs)")
    p.add_argument("--format", choices=("json", "csv", "markdown", "parquet"), default="json",
                   help="json (default), csv, markdown or parquet (typed columns, for dashboards and dataframes: "
                   "the parquet extra): one record per repetition and direction")
    p.add_argument("--per-client", action="store_true",
                   help="also each client's own records (field `client`) after the merged ones")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("saturation", help="IOPS against iodepth/numjobs/clients: the knee, and max IOPS within an SLO")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run)")
    p.add_argument("--axis", choices=("iodepth", "numjobs", "clients"), default=None,
                   help="load axis (default: every axis that forms a curve)")
    p.add_argument("--slo", default=None, metavar="OBJECTIVE", help="latency objective, e.g. p99<=10ms")
    p.set_defaults(func=cmd_saturation)
