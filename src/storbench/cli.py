"""The command line: the only place that reads argv, prints, and turns errors into exit codes.

Exit status: 0 success, 1 some repetitions failed, 2 a user error (one line, no traceback),
130 interrupted (everything finished so far is stored; continue with --resume).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.text import Text

from storbench import __version__
from storbench.config import LoadedPlan, load_plan_text
from storbench.errors import UserError, did_you_mean
from storbench.model import RepetitionOutcome, RunInfo, ScheduledRepetition, Status
from storbench.private_files import write_private
from storbench.records import Record

if TYPE_CHECKING:  # heavy modules (scipy, sqlite) load only for the commands that use them
    from storbench.stats.compare import Selector
    from storbench.stats.summary import PointSummary
    from storbench.store.db import Store
from storbench.units import format_block_size, format_latency_ns

DEFAULT_DB = "results.db"


def _console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr, highlight=False, soft_wrap=False)
    if not console.is_terminal:  # a file or a pipe: do not squeeze tables into 80 columns
        console = Console(stderr=stderr, highlight=False, soft_wrap=False, width=240)
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
    from storbench.fio.parse import merge_clients

    parts = []
    for m in merge_clients(outcome.clients):  # all clients: I/O summed, latency bins added
        p99 = m.lat.percentile_ns(99.0)
        parts.append(f"{m.direction.value} {m.iops:,.0f} IOPS {m.bw_bytes / 1048576:,.1f} MiB/s "
                     f"mean {format_latency_ns(m.lat.mean_ns)} p99 {format_latency_ns(p99)}")
    clients = f" ({len(outcome.clients)} clients)" if len(outcome.clients) > 1 else ""
    return f"{label}: " + "; ".join(parts) + clients


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

    def lab_event(self, message: str) -> None:
        self.console.print(message, markup=False)

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
        result = run_plan(loaded, cases, checked, store, LocalExecutor(fio_binary), observer, resume=args.resume,
                          keep_lab=args.keep_lab)
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


@dataclass(frozen=True)
class Selection:
    records: list[Record]
    runs: list[RunInfo]
    label: str

    @property
    def tags(self) -> dict[int, tuple[str, ...]]:
        return {r.run_id: r.tags for r in self.runs}

    @property
    def memory(self) -> dict[int, int | None]:
        return {r.run_id: r.mem_total_bytes for r in self.runs}


def _select(db: str, run: str, where: Sequence[str], *, default_latest: bool, per_client: bool = False) -> Selection:
    from storbench.records import RECORD_FIELDS, filter_records, repetition_records
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
    records = repetition_records(store.repetitions(run_ids), per_client=per_client)
    store.close()
    pairs = _parse_where(where)
    try:
        records = filter_records(records, pairs)
    except ValueError as exc:
        key = str(exc)
        raise UserError(f"--where: unknown field {key!r}",
                        hint=did_you_mean(key, RECORD_FIELDS) or "fields: " + ", ".join(RECORD_FIELDS)) from None
    return Selection(list(records), [r for r in runs if r.run_id in run_ids], label)


def _print_results(store: Store, run_ids: list[int], title: str) -> None:
    from storbench.records import repetition_records
    from storbench.stats.summary import summarize_points

    memory = {r.run_id: r.mem_total_bytes for r in store.runs()}
    _print_points(summarize_points(repetition_records(store.repetitions(run_ids)), memory), title)


def _print_points(points: Sequence[PointSummary], title: str) -> None:
    """The results table; under it each point's bottleneck verdict with its evidence, and one line per kind
    of warning with its fix."""
    from storbench.report.tables import results_table, verdict_lines, warning_lines

    out = _console()
    out.print(results_table(points, title))
    if any(p.bottleneck.kind != "unknown" for p in points):
        out.print("bottlenecks (rules: docs/methodology.md#bottleneck-verdicts):", markup=False)
        for line in verdict_lines(points):
            out.print(f"  {line}", markup=False)
    for line in warning_lines(points):
        out.print(line, markup=False)


def cmd_show(args: argparse.Namespace) -> int:
    from storbench.stats.drift import drift
    from storbench.stats.summary import summarize_points

    where = list(args.where) + [f"target={t}" for t in args.target]
    selection = _select(args.db, args.run, where, default_latest=True)
    if not selection.records:
        raise UserError("no results match", hint="loosen --where/--target, or try --run all")
    _print_points(summarize_points(selection.records, selection.memory), f"{selection.label} — {args.db}")
    out = _console()
    for run in selection.runs:
        for direction in ("read", "write"):
            d = drift(selection.records, run.run_id, direction)
            change = d.over_run()
            if d.significant and change is not None:
                out.print(f"⚠ run {run.run_id}: {direction} IOPS drifted {change[0]:+.1f} % [95% CI {change[1]:+.1f}, "
                          f"{change[2]:+.1f}] from its first to its last repetition ({d.span_minutes:.1f} min): the "
                          "interleaved order spreads it over all cases; consider a longer ramp or preconditioning",
                          markup=False)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from storbench.report.export import export

    where = list(args.where) + [f"target={t}" for t in args.target]
    selection = _select(args.db, args.run, where, default_latest=False, per_client=args.per_client)
    _write_output(export(selection.records, args.format), args.output)
    return 0


def _write_output(text: str, output: str) -> None:
    if output and output != "-":
        try:
            write_private(output, text)
        except OSError as exc:
            raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
    else:
        sys.stdout.write(text)


def _selector(text: str, flag: str) -> Selector:
    from storbench.stats.compare import parse_selector

    try:
        return parse_selector(text)
    except ValueError as exc:
        raise UserError(f"{flag} {text!r}: {exc}",
                        hint="e.g. 3, run=3, target=nvme, tag=after, bs=4k,rw=randread, pool_size=2") from None


def _check_selector_keys(selection: Selection, *selectors: Selector) -> None:
    from storbench.records import RECORD_FIELDS, lab_parameters
    from storbench.stats.compare import unknown_keys

    for selector in selectors:
        unknown = unknown_keys(selector, selection.records)
        if unknown:
            lab_keys = sorted({k for r in selection.records for k in lab_parameters(r)})
            raise UserError(f"selector {selector.text!r}: unknown key {unknown[0]!r}",
                            hint=did_you_mean(unknown[0], [*RECORD_FIELDS, *lab_keys, "run", "tag"])
                            or "keys: record fields (see export), lab parameters, run, tag")


def cmd_compare(args: argparse.Namespace) -> int:
    from storbench.report.compare_export import comparison_csv, comparison_json, comparison_markdown
    from storbench.report.tables import bottleneck_evidence_lines, compare_table
    from storbench.stats.compare import compare_records, regressions, select

    baseline, candidate = _selector(args.baseline, "--baseline"), _selector(args.candidate, "--candidate")
    selection = _select(args.db, "all", args.where, default_latest=False)
    _check_selector_keys(selection, baseline, candidate)
    for side, selector in (("baseline", baseline), ("candidate", candidate)):
        if not select(selection.records, selector, selection.tags):
            raise UserError(f"--{side} {selector.text!r} matches no results in {args.db}",
                            hint="see `storbench show --run all` for what is stored")
    comparisons = compare_records(selection.records, baseline, candidate, selection.tags, selection.memory,
                                  force=args.force)
    if not comparisons:
        raise UserError("baseline and candidate have no point in common",
                        hint="they must share rw, bs, iodepth, numjobs and direction (and target, unless selected on)")
    if args.format == "table":
        out = _console()
        out.print(compare_table(comparisons, baseline.text, candidate.text))
        evidence = bottleneck_evidence_lines(comparisons)
        if evidence:
            out.print("bottlenecks (rules: docs/methodology.md#bottleneck-verdicts):", markup=False)
            for line in evidence:
                out.print(f"  {line}", markup=False)
    elif args.format == "markdown":
        _write_output(comparison_markdown(comparisons, baseline.text, candidate.text), args.output)
    elif args.format == "csv":
        _write_output(comparison_csv(comparisons), args.output)
    else:
        _write_output(comparison_json(comparisons), args.output)
    if args.fail_on_regression is not None:
        found = regressions(comparisons, args.fail_on_regression)
        if found:
            worst = max(found, key=lambda r: abs(r.cell.difference.change_pct if r.cell.difference else 0))
            change = worst.cell.difference.change_pct if worst.cell.difference else 0.0
            _console(stderr=True).print(
                f"regression: {len(found)} significantly worse cells beyond {args.fail_on_regression:g} %; worst "
                f"{worst.cell.metric.label} {change:+.1f} % at {worst.comparison.key}", markup=False)
            return 1
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from plotly.offline import get_plotlyjs

    from storbench.report.build import build_report
    from storbench.report.html import render_html
    from storbench.report.images import render_image
    from storbench.stats.compare import compare_records
    from storbench.stats.knee import parse_slo
    from storbench.store import open_store

    objective = None
    if args.slo:
        try:
            objective = parse_slo(args.slo)
        except ValueError as exc:
            raise UserError(f"--slo: {exc}", hint="e.g. --slo p99<=10ms") from None
    if bool(args.baseline) != bool(args.candidate):
        raise UserError("--baseline and --candidate go together", hint="give both, or neither")
    where = list(args.where) + [f"target={t}" for t in args.target]
    run = "all" if args.baseline and not args.run else args.run
    selection = _select(args.db, run, where, default_latest=True)
    if not selection.records:
        raise UserError("no results match", hint="loosen --where/--target, or try --run all")
    comparisons = []
    if args.baseline:
        baseline, candidate = _selector(args.baseline, "--baseline"), _selector(args.candidate, "--candidate")
        _check_selector_keys(selection, baseline, candidate)
        comparisons = compare_records(selection.records, baseline, candidate, selection.tags, selection.memory)
    store = open_store(args.db)
    case_ids = {r.case_id for r in selection.records}
    repetitions = [r for r in store.repetitions([r.run_id for r in selection.runs]) if r.case.case_id in case_ids]
    store.close()
    title = args.title or "storbench report: " + ", ".join(sorted({r.plan_name for r in selection.runs}))
    document = build_report(title, selection.runs, repetitions, selection.records, comparisons=comparisons,
                            baseline=args.baseline or "", candidate=args.candidate or "", objective=objective)
    _write_output(render_html(document, get_plotlyjs()), args.output)
    out = _console(stderr=args.output in ("", "-"))
    out.print(f"report: {args.output} ({len(document.figures)} figures, {len(document.points)} points)",
              markup=False)
    if args.images:
        directory = Path(args.images)
        directory.mkdir(parents=True, exist_ok=True)
        for figure in document.figures:
            for fmt in ("png", "svg"):
                write_private(directory / f"{figure.figure_id}.{fmt}", render_image(figure, fmt))
        out.print(f"images: {len(document.figures)} figures as PNG and SVG in {directory}", markup=False)
    return 0


def cmd_lab_ceph(args: argparse.Namespace) -> int:
    from storbench.lab.ceph import CephLab
    from storbench.lab.ceph_conf import CephLabSpec
    from storbench.units import parse_size_bytes

    lab = CephLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
        return 0
    if args.action == "down":
        lab.down()
        out.print(f"ceph lab: down; {lab.root} removed", markup=False)
        return 0
    pools = []
    for item in args.pool or ["rbd:3"]:
        name, _, size = item.partition(":")
        if not name or not size.isdigit():
            raise UserError(f"--pool {item!r} is not NAME:SIZE", hint="e.g. --pool rbd2:2 --pool rbd3:3")
        pools.append((name, int(size)))
    try:
        spec = CephLabSpec(
            osds=args.osds, osd_size_bytes=parse_size_bytes(args.osd_size), objectstore=args.objectstore,
            cache_size_bytes=parse_size_bytes(args.cache_size) if args.cache_size else None,
            osd_memory_target_bytes=parse_size_bytes(args.osd_memory_target) if args.osd_memory_target else None,
            pools=tuple(pools), cephfs=args.cephfs)
    except ValueError as exc:
        raise UserError(str(exc), hint="sizes look like 2GiB, 512MiB") from None
    if any(size > spec.osds for _, size in spec.pools):
        raise UserError(f"a pool of size {max(s for _, s in spec.pools)} needs as many OSDs, --osds is {spec.osds}")
    out.print(f"ceph lab: bringing up {spec.osds} OSDs ({spec.objectstore}) in {lab.root} ...", markup=False)
    info = lab.up(spec)
    out.print(f"ceph lab: up; conf {info.conf}", markup=False)
    out.print("pools: " + ", ".join(f"{n} (size {s})" for n, s in spec.pools), markup=False)
    if info.cephfs_mount:
        out.print(f"cephfs: mounted at {info.cephfs_mount}", markup=False)
    out.print(f"try: CEPH_CONF={info.conf} ceph -s", markup=False)
    return 0


def cmd_lab_nfs(args: argparse.Namespace) -> int:
    from storbench.lab.nfs import NfsLab

    lab = NfsLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"nfs lab: down; namespace, veth pair and {lab.root} removed", markup=False)
    else:
        info = lab.up()
        out.print(f"nfs lab: up; {info.url} exports {info.export} (nfs-ganesha, VFS; NFSv3 and v4)", markup=False)
        out.print(f"plan target: {{kind: nfs, url: {info.url}, size: 256MiB}}", markup=False)
    return 0


def cmd_lab_hosts(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.lab.hosts import HostsLab

    lab = HostsLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"hosts lab: down; namespaces, bridge and {lab.root} removed", markup=False)
    else:
        info = lab.up(args.count, find_fio())
        out.print(f"hosts lab: up; {info.count} fio servers: {info.servers[0]} .. {info.servers[-1]}", markup=False)
        out.print(f"plan: hosts: {{servers: [{', '.join(s.replace(',', ':') for s in info.servers[:3])}"
                  f"{', ...' if info.count > 3 else ''}]}}  (or lab: {{hosts: {{count: {info.count}}}}})",
                  markup=False)
    return 0


def cmd_lab_k8s(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.lab.k8s import K8sLab

    lab = K8sLab(Path(args.dir) if args.dir else None)
    out = _console()
    if args.action == "status":
        out.print(lab.status(), markup=False)
    elif args.action == "down":
        lab.down()
        out.print(f"k8s lab: down; pods, daemons, mounts, bridges and {lab.root} removed", markup=False)
    else:
        started = time.time()
        info = lab.up(find_fio())
        out.print(f"k8s lab: up in {time.time() - started:.0f}s; KUBECONFIG={info.kubeconfig}", markup=False)
        out.print(f"StorageClass {info.storage_class} (host-path, dynamic); fio image {info.fio_image}", markup=False)
    return 0


def cmd_k8s_cleanup(args: argparse.Namespace) -> int:
    from storbench.execute.kubernetes import cleanup

    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        from storbench.lab.k8s import K8sLab

        info = K8sLab().info()
        kubeconfig = info.kubeconfig if info is not None and not os.environ.get("KUBECONFIG") else None
    deleted = cleanup(kubeconfig)
    out = _console()
    for line in deleted:
        out.print(f"deleted {line}", markup=False)
    out.print(f"k8s cleanup: {len(deleted)} objects labelled app.kubernetes.io/managed-by=storbench deleted",
              markup=False)
    return 0


def cmd_saturation(args: argparse.Namespace) -> int:
    from storbench.report.tables import saturation_table
    from storbench.stats.knee import LOAD_AXES, curves, parse_slo
    from storbench.stats.summary import summarize_points

    objective = None
    if args.slo:
        try:
            objective = parse_slo(args.slo)
        except ValueError as exc:
            raise UserError(f"--slo: {exc}", hint="e.g. --slo p99<=10ms or --slo mean<=500us") from None
    where = list(args.where) + [f"target={t}" for t in args.target]
    selection = _select(args.db, args.run, where, default_latest=True)
    points = summarize_points(selection.records, selection.memory)
    axes = [args.axis] if args.axis else list(LOAD_AXES)
    found = [c for axis in axes for c in curves(points, axis)]
    if not found:
        raise UserError("no curve: no points differ only in " + " or ".join(axes),
                        hint="sweep iodepth (e.g. [1, 4, 16, 64]) or numjobs in the plan")
    _console().print(saturation_table(found, objective))
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
    p.add_argument("--keep-lab", action="store_true",
                   help="leave the plan's last lab configuration up after the run (tear down with `storbench lab`)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("show", help="results as a table, one row per case and direction")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run)")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("export", help="one record per repetition and direction as json, csv or markdown")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: all runs)")
    p.add_argument("--format", choices=("json", "csv", "markdown"), default="json")
    p.add_argument("--per-client", action="store_true",
                   help="also each client's own records (field `client`) after the merged ones")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("compare", help="baseline vs candidate per matching point: change with 95%% CI and a verdict")
    db_option(p)
    p.add_argument("--baseline", required=True, metavar="SELECTOR",
                   help="a run number, or KEY=VALUE[,KEY=VALUE]: run=3, target=a, tag=before, bs=4k ...")
    p.add_argument("--candidate", required=True, metavar="SELECTOR", help="same syntax as --baseline")
    p.add_argument("--where", action="append", default=[], metavar="FIELD=VALUE",
                   help="only points whose FIELD equals VALUE (repeatable)")
    p.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table")
    p.add_argument("-o", "--output", default="-", help="file for markdown/csv/json (default: standard output)")
    p.add_argument("--force", action="store_true", help="compare even when fio version, workload or target kind differ")
    p.add_argument("--fail-on-regression", type=float, default=None, metavar="PCT",
                   help="exit 1 when any metric is significantly worse by PCT percent or more")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("saturation", help="IOPS against iodepth/numjobs/clients: the knee, and max IOPS within an SLO")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run)")
    p.add_argument("--axis", choices=("iodepth", "numjobs", "clients"), default=None,
                   help="load axis (default: every axis that forms a curve)")
    p.add_argument("--slo", default=None, metavar="OBJECTIVE", help="latency objective, e.g. p99<=10ms")
    p.set_defaults(func=cmd_saturation)

    p = sub.add_parser("report", help="one self-contained HTML report (figures, comparisons, provenance)")
    db_option(p)
    filters(p, "run number(s), e.g. 3 or 2,3, or 'all' (default: the latest run; all runs with --baseline)")
    p.add_argument("-o", "--output", default="report.html", help="HTML file to write (default report.html)")
    p.add_argument("--images", default=None, metavar="DIR", help="also write every figure as PNG and SVG into DIR")
    p.add_argument("--baseline", default=None, metavar="SELECTOR", help="add a comparison: baseline selector")
    p.add_argument("--candidate", default=None, metavar="SELECTOR", help="add a comparison: candidate selector")
    p.add_argument("--slo", default=None, metavar="OBJECTIVE", help="latency objective for the saturation table")
    p.add_argument("--title", default=None, help="report title")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("lab", help="real one-machine test beds: `storbench lab ceph|nfs up|down|status`")
    lab_sub = p.add_subparsers(dest="lab_kind", metavar="LAB", required=True)
    ceph = lab_sub.add_parser("ceph", help="a Ceph cluster (mon, mgr, OSDs) from Debian's packages on this machine")
    ceph.add_argument("action", choices=("up", "down", "status"))
    ceph.add_argument("--osds", type=int, default=3, help="number of OSDs (default 3)")
    ceph.add_argument("--osd-size", default="2GiB", help="size of each OSD (default 2GiB, sparse file)")
    ceph.add_argument("--objectstore", choices=("bluestore", "memstore"), default="bluestore")
    ceph.add_argument("--pool", action="append", metavar="NAME:SIZE", help="a pool and its replica size "
                      "(repeatable; default rbd:3)")
    ceph.add_argument("--cache-size", default=None, help="BlueStore cache per OSD, autotune off (e.g. 256MiB)")
    ceph.add_argument("--osd-memory-target", default=None, help="osd_memory_target (>= 896MiB)")
    ceph.add_argument("--cephfs", action="store_true", help="also run an MDS and mount CephFS with ceph-fuse")
    ceph.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/ceph or "
                      "/var/lib/storbench/lab/ceph)")
    ceph.set_defaults(func=cmd_lab_ceph)
    nfs = lab_sub.add_parser("nfs", help="an NFS server (nfs-ganesha, VFS backend) in a network namespace")
    nfs.add_argument("action", choices=("up", "down", "status"))
    nfs.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/nfs or "
                     "/var/lib/storbench/lab/nfs)")
    nfs.set_defaults(func=cmd_lab_nfs)
    hosts = lab_sub.add_parser("hosts", help="client hosts: fio servers in network namespaces on a private bridge")
    hosts.add_argument("action", choices=("up", "down", "status"))
    hosts.add_argument("--count", type=int, default=8, choices=range(1, 251), metavar="N",
                       help="how many hosts (1-250, default 8)")
    hosts.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/hosts or "
                       "/var/lib/storbench/lab/hosts)")
    hosts.set_defaults(func=cmd_lab_hosts)
    k8s = lab_sub.add_parser("k8s", help="a single-node Kubernetes cluster (scripts/build-kubernetes.sh first)")
    k8s.add_argument("action", choices=("up", "down", "status"))
    k8s.add_argument("--dir", default=None, help="lab directory, kept 0700 (default $STORBENCH_LAB_DIR/k8s or "
                     "/var/lib/storbench/lab/k8s)")
    k8s.set_defaults(func=cmd_lab_k8s)

    p = sub.add_parser("k8s", help="Kubernetes housekeeping")
    k8s_sub = p.add_subparsers(dest="k8s_command", required=True)
    clean = k8s_sub.add_parser("cleanup", help="delete every pod, claim, config map and namespace storbench made")
    clean.add_argument("--kubeconfig", default=None, help="default: $KUBECONFIG, the k8s lab's, ~/.kube/config")
    clean.set_defaults(func=cmd_k8s_cleanup)

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
