"""The command line: the only place that reads argv, prints, and turns errors into exit codes.

Exit status: 0 success, 1 some repetitions failed, 2 a user error (one line, no traceback),
130 interrupted (everything finished so far is stored; continue with --resume).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from storbench import __version__
from storbench.config import LoadedPlan, load_plan_text
from storbench.errors import UserError, did_you_mean
from storbench.model import RepetitionOutcome, ScheduledRepetition, Status
from storbench.units import format_block_size, format_latency_ns

DEFAULT_DB = "results.db"


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:  # a file or a pipe: do not squeeze tables into 80 columns
        console = Console(stderr=stderr, highlight=False, soft_wrap=False, width=200)
    return console


def _read_plan(path: str) -> LoadedPlan:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        raise UserError(f"plan file {path} does not exist", hint="see examples/quickstart.yaml") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read plan file {path}: {exc}") from None
    return load_plan_text(text, path)


def _parse_where(items: Sequence[str]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--where {item!r} is not KEY=VALUE", hint="e.g. --where rw=randread --where bs=4k")
        pairs.append((key.strip(), value.strip()))
    return pairs


# ---- plan -------------------------------------------------------------------------------------


def cmd_plan(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.orchestrate import check_everything
    from storbench.plan import estimate, expand
    from storbench.report.tables import plan_summary_lines, plan_table

    loaded = _read_plan(args.plan)
    cases = expand(loaded)
    checked = check_everything(loaded, cases, find_fio(args.fio), create=False)
    out = _console()
    table, constants = plan_table(cases, f"plan '{loaded.config.name}' ({args.plan})")
    out.print(table)
    out.print(constants)
    for line in plan_summary_lines(estimate(cases, loaded.config.repeat), loaded.config.repeat,
                                   checked.capabilities.version, checked.capabilities.binary):
        out.print(line)
    return 0


# ---- run --------------------------------------------------------------------------------------


def _outcome_line(item: ScheduledRepetition, outcome: RepetitionOutcome) -> str:
    w = item.case.workload
    label = (f"{item.case.target.name} {w.rw} bs={format_block_size(w.bs_bytes)} qd={w.iodepth} "
             f"jobs={w.numjobs} #{item.rep_index + 1}")
    if outcome.status != Status.OK:
        return f"{label}: {outcome.status.value.upper()} {outcome.error}"
    parts = []
    for client in outcome.clients[:1]:
        for m in client.directions:
            p99 = m.lat.percentile_ns(99.0)
            parts.append(f"{m.direction.value} {m.iops:,.0f} IOPS {m.bw_bytes / 1048576:,.1f} MiB/s "
                         f"mean {format_latency_ns(m.lat.mean_ns)} p99 {format_latency_ns(p99)}")
    return f"{label}: " + "; ".join(parts)


class ConsoleObserver:
    """Progress bar with ETA and the last result, live on a terminal; one line per result otherwise."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.interactive = console.is_terminal
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            TextColumn("eta"), TimeRemainingColumn(), console=console,
        )
        self.last = Text("")
        self.live: Live | None = None
        self.task = self.progress.add_task("running", total=1)
        self.failed = 0

    def run_started(self, run_id: int, to_run: int, already_done: int, eta_s: float) -> None:
        self.progress.update(self.task, total=to_run, description=f"run {run_id}")
        note = f" ({already_done} already stored, skipped)" if already_done else ""
        self.console.print(f"run {run_id}: {to_run} repetitions to go{note}, about {eta_s:.0f}s")
        if self.interactive:
            self.live = Live(Group(self.progress, self.last), console=self.console, refresh_per_second=4,
                             transient=True)
            self.live.start()

    def repetition_started(self, item: ScheduledRepetition, position: int) -> None:
        w = item.case.workload
        self.progress.update(self.task, description=f"{w.rw} {format_block_size(w.bs_bytes)} qd{w.iodepth}")

    def repetition_finished(self, item: ScheduledRepetition, position: int, outcome: RepetitionOutcome) -> None:
        self.progress.advance(self.task)
        line = _outcome_line(item, outcome)
        if outcome.status != Status.OK:
            self.failed += 1
        if self.live is not None:
            self.last.plain = "last: " + line
            if outcome.status != Status.OK:
                self.console.print(f"[red]{line}[/red]")
        else:
            self.console.print(f"[{position + 1}/{self.progress.tasks[0].total:.0f}] {line}", markup=False)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None


def cmd_run(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.execute.local import LocalExecutor
    from storbench.orchestrate import check_everything, run_plan
    from storbench.plan import estimate, expand
    from storbench.report.tables import plan_summary_lines
    from storbench.store import open_store

    loaded = _read_plan(args.plan)
    cases = expand(loaded)
    fio_binary = find_fio(args.fio)
    checked = check_everything(loaded, cases, fio_binary, create=True)
    store = open_store(args.db)
    out = _console()
    for line in plan_summary_lines(estimate(cases, loaded.config.repeat), loaded.config.repeat,
                                   checked.capabilities.version, checked.capabilities.binary):
        out.print(line)
    observer = ConsoleObserver(out)
    try:
        result = run_plan(loaded, cases, checked, store, LocalExecutor(fio_binary), observer, resume=args.resume)
    except KeyboardInterrupt:
        observer.close()
        _console(stderr=True).print(
            f"interrupted: every finished repetition is stored in {args.db}; continue with "
            f"`storbench run {args.plan} --db {args.db} --resume`", markup=False)
        return 130
    finally:
        observer.close()
    _print_results(store, [result.run_id], title=f"results of run {result.run_id} ({args.db})")
    store.close()
    out.print(f"{result.ran} repetitions run, {result.skipped} already stored, {result.failed} failed; "
              f"stored in {args.db}")
    return 1 if result.failed else 0


# ---- show / export / import --------------------------------------------------------------------


def _select_records(db: str, run: str, where: Sequence[str], *, default_latest: bool) -> tuple[list[object], str]:
    from storbench.report.records import RECORD_FIELDS, filter_records, repetition_records
    from storbench.store import open_store

    if not Path(db).exists():
        raise UserError(f"no results database {db}", hint="run a plan first, or pass --db PATH")
    store = open_store(db)
    runs = store.runs()
    if not runs:
        raise UserError(f"{db} holds no runs yet", hint="run `storbench run PLAN` first")
    if run == "all" or (not run and not default_latest):
        run_ids = [r.run_id for r in runs]
        label = "all runs"
    elif not run:
        run_ids = [runs[-1].run_id]
        label = f"run {run_ids[0]} (latest; --run all for every run)"
    else:
        try:
            wanted = [int(part) for part in run.split(",")]
        except ValueError:
            raise UserError(f"--run {run!r} is not a run number", hint="e.g. --run 3, --run 2,3 or --run all") from None
        known = {r.run_id for r in runs}
        missing = [w for w in wanted if w not in known]
        if missing:
            raise UserError(f"no run {missing[0]} in {db}", hint="runs: " + ", ".join(str(r) for r in sorted(known)))
        run_ids = wanted
        label = "run " + ",".join(map(str, wanted))
    records = repetition_records(store.repetitions(run_ids))
    store.close()
    pairs = _parse_where(where)
    try:
        records = filter_records(records, pairs)
    except ValueError as exc:
        key = str(exc)
        raise UserError(f"--where: unknown field {key!r}",
                        hint=did_you_mean(key, RECORD_FIELDS) or "fields: " + ", ".join(RECORD_FIELDS)) from None
    return list(records), label


def _print_results(store: object, run_ids: list[int], title: str) -> None:
    from storbench.report.records import repetition_records, summarize_cases
    from storbench.report.tables import results_table
    from storbench.store import Store

    assert isinstance(store, Store)
    rows = summarize_cases(repetition_records(store.repetitions(run_ids)))
    _console().print(results_table(rows, title))


def cmd_show(args: argparse.Namespace) -> int:
    from storbench.report.records import Record, summarize_cases
    from storbench.report.tables import results_table

    where = list(args.where) + [f"target={t}" for t in args.target]
    records, label = _select_records(args.db, args.run, where, default_latest=True)
    typed = [r for r in records if isinstance(r, Record)]
    if not typed:
        raise UserError("no results match", hint="loosen --where/--target, or try --run all")
    _console().print(results_table(summarize_cases(typed), f"{label} — {args.db}"))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from storbench.report.export import export
    from storbench.report.records import Record

    where = list(args.where) + [f"target={t}" for t in args.target]
    records, _label = _select_records(args.db, args.run, where, default_latest=False)
    text = export([r for r in records if isinstance(r, Record)], args.format)
    if args.output and args.output != "-":
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    import platform
    import time

    from storbench.fio.parse import load_fio_json_lenient
    from storbench.importer import import_fio_output
    from storbench.store import open_store

    parsed = []
    for name in args.files:
        try:
            text = Path(name).read_text(errors="replace")
        except OSError as exc:
            raise UserError(f"cannot read {name}: {exc.strerror}") from None
        parsed.append((name, text, load_fio_json_lenient(text, name)))
    store = open_store(args.db)
    versions = sorted({output.fio_version for _, _, output in parsed})
    run_id = store.create_run(
        plan_name=args.name, plan_text="# imported from:\n" + "\n".join(f"# {n}" for n, _, _ in parsed) + "\n",
        plan_sha256="", source="import", storbench_version=__version__, fio_version=",".join(versions),
        host=platform.node(), kernel=platform.release(), run_order="imported", seed=0, tags=[],
        started_at_s=time.time(),
    )
    counts: dict[str, int] = {}
    total = 0
    for name, text, output in parsed:
        for item in import_fio_output(output, text, args.target):
            rep_index = counts.get(item.case.case_id, 0)
            counts[item.case.case_id] = rep_index + 1
            store.save_repetition(run_id, item.case, rep_index, item.outcome, (("imported_from", name),))
            total += 1
    store.finish_run(run_id, time.time())
    store.close()
    _console().print(f"imported {total} repetitions of {len(counts)} cases from {len(parsed)} files as run {run_id} "
                     f"in {args.db}")
    return 0


# ---- argument parsing ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="storbench",
        description="Declarative, reproducible, statistically honest storage benchmarks on real fio.",
    )
    parser.add_argument("--version", action="version", version=f"storbench {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def db_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=os.environ.get("STORBENCH_DB", DEFAULT_DB),
                       help=f"results database (SQLite; default {DEFAULT_DB} or $STORBENCH_DB)")

    def fio_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--fio", default=None, help="fio binary (default: $STORBENCH_FIO or fio on PATH)")

    def filters(p: argparse.ArgumentParser, run_help: str) -> None:
        p.add_argument("--run", default="", help=run_help)
        p.add_argument("--target", action="append", default=[], help="only this target (repeatable)")
        p.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                       help="only records whose FIELD equals VALUE, e.g. rw=randread, bs=4k (repeatable)")

    p = sub.add_parser("plan", help="show the expanded cases, their count, data volume and ETA; no I/O")
    p.add_argument("plan", help="plan file (YAML)")
    fio_option(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("run", help="run a plan with fio, storing each repetition as it finishes")
    p.add_argument("plan", help="plan file (YAML)")
    db_option(p)
    fio_option(p)
    p.add_argument("--resume", action="store_true",
                   help="continue the latest run of this plan: run only repetitions not yet stored as ok")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("show", help="results as a table, one row per case and direction")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="one record per repetition and direction as json, csv or markdown")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: all runs)")
    p.add_argument("--format", choices=("json", "csv", "markdown"), default="json")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import", help="ingest existing fio json/json+ output files")
    p.add_argument("files", nargs="+", metavar="FIO_JSON")
    db_option(p)
    p.add_argument("--target", default="imported", help="target name to file the results under")
    p.add_argument("--name", default="import", help="plan name for the imported run")
    p.set_defaults(func=cmd_import)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except UserError as exc:
        _console(stderr=True).print(f"storbench: error: {exc.one_line()}", markup=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        _console(stderr=True).print("interrupted", markup=False)
        return 130
