"""`storbench plan` and `storbench run`: a plan's cases and ETA, and running it with live progress."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from storbench.cli.common import (
    _console,
    _read_plan,
    above_zero,
    allowed_images,
    cluster_access,
    cluster_options,
    db_option,
    fio_option,
    fio_server_options,
    fio_servers,
    interrupted_once,
    s3_access,
    s3_options,
    whole_above_zero,
)
from storbench.errors import UserError
from storbench.units import count_of, format_block_size, format_duration

if TYPE_CHECKING:
    from storbench.checks import Checked
    from storbench.config import LoadedPlan
    from storbench.config.faults import CheckWritesConfig
    from storbench.config.workload import WorkloadConfig
    from storbench.model import Case
    from storbench.schedule import PlanEstimate


# `run`'s own limits on a plan's size, which --max-runs and --max-hours raise (plan.MAX_SWEEP_POINTS is the hard one)
MAX_RUNS = 10_000
MAX_HOURS = 24.0


def _duration(text: str) -> float:
    from storbench.units import parse_duration_s

    try:
        return parse_duration_s(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{exc} (e.g. 20m, 90s)") from None


def _summary(loaded: LoadedPlan, cases: Sequence[Case], checked: Checked) -> list[str]:
    """The plan's size, ETA and designs; for repetitions that stop when decided, the ETA of their most."""
    from storbench.config import RepeatConfig, repeat_bounds
    from storbench.report.plan_tables import depth_notes, plan_summary_lines
    least, most = repeat_bounds(loaded.config)
    lines = plan_summary_lines(_estimate(loaded, cases, most), most, checked.capabilities.version,
                               checked.capabilities.binary) + depth_notes(cases)
    repeat = loaded.config.repeat
    if isinstance(repeat, RepeatConfig):
        what = f"{loaded.config.compare.baseline} vs {loaded.config.compare.candidate} decided" if (
            repeat.until == "decided" and loaded.config.compare) else repeat.until
        raised = (f" (`min: {repeat.min}` raised: `until: ci` looks from round {least} on, see "
                  "storbench docs methodology paired-changes)" if least > repeat.min else "")
        lines.insert(1, f"repetitions: balanced rounds until {what}, at least {least}{raised}, at most {most} (the "
                     "time below is for the most)")
    compare = loaded.config.compare
    if compare is not None:  # the question the run is for: its last table
        lines.append(f"compare: baseline {compare.baseline} vs candidate {compare.candidate}, the run's last table "
                     "(and `storbench compare` with no sides)")
    from storbench.schedule import precondition_jobs, precondition_seconds, preconditions
    from storbench.stats.run_questions import steady_rule

    wanted = preconditions(loaded.config)
    first_jobs: dict[str, Case] = {}  # each target's job on its first lab configuration
    for job in precondition_jobs(wanted, cases):
        first_jobs.setdefault(job.target.name, job)
    for name, job in first_jobs.items():
        pre = wanted[name]
        prepared = checked.targets.get(name)
        device = dict(prepared.details).get("device_size_bytes") if prepared is not None else None
        seconds = precondition_seconds(pre, job, int(device) if device and str(device).isdigit() else None)
        took = f"about {format_duration(seconds)} each" if seconds is not None else "time unknown"
        counted = precondition_seconds(pre, job) is not None  # as the estimate has it (a device's size unknown there)
        lines.append(f"precondition {name}: {pre.text()} before its first measurement on each lab bring-up, "
                     f"{took}" + (" (in the time above)" if counted else " (not in the time above)"))
    for name, prepared in checked.targets.items():  # where each directory really lands
        details = dict(prepared.details)
        if details.get("directory") and details.get("filesystem"):
            lines.append(f"target {name}: {details['directory']} on {details['filesystem']} "
                         f"({details.get('source') or '?'}), mounted at {details.get('mount_point') or '?'}")
    search = loaded.config.search
    if search is not None:
        from storbench.plan import search_values

        grid = search_values(loaded.config)
        lines.insert(1, f"search: {search.axis} on a grid of {len(grid)} values ({', '.join(map(str, grid))}); "
                     f"only those that bracket the best IOPS within {search.slo} and the knee are measured, "
                     f"{most} repetitions each (the time below is for the whole grid)")
    rule = steady_rule(loaded.config)
    if rule is not None:
        lines.insert(1, f"steady state: each point round by round until {rule.text()}; at least "
                     f"{least} rounds (the time below is for the most)")
    return lines


def _estimate(loaded: LoadedPlan, cases: Sequence[Case], most: int) -> PlanEstimate:
    """The run's estimate at its most repetitions, its preconditions' time in it."""
    from storbench.config import run_order
    from storbench.schedule import estimate, preconditions_seconds

    ceph = loaded.config.lab.ceph if loaded.config.lab else None
    bring_up = ceph.bring_up if ceph else "once"
    return estimate(cases, most, bring_up=bring_up, order=run_order(loaded.config), seed=loaded.config.seed,
                    preconditions_s=preconditions_seconds(loaded.config, cases, most, bring_up=bring_up))


def _check_size(loaded: LoadedPlan, cases: Sequence[Case], max_runs: int, max_hours: float) -> None:
    """A plan above the run limits is refused before anything starts, with its numbers."""
    from storbench.config import repeat_bounds
    from storbench.schedule import size_refusal

    refusal = size_refusal(_estimate(loaded, cases, repeat_bounds(loaded.config)[1]), max_runs, max_hours)
    if refusal:
        raise UserError(refusal, hint="raise the limit (--max-runs N, --max-hours H) if you mean it, or sweep "
                        "fewer values")


def cmd_plan(args: argparse.Namespace) -> int:
    from storbench.checks import check_everything, check_fio_servers
    from storbench.config import with_namespace
    from storbench.execute.fio_binary import find_fio
    from storbench.lab.registry import check_faults
    from storbench.plan import expand
    from storbench.report.plan_tables import plan_table
    from storbench.store.db import check_location

    check_location(args.db)  # where run would store: refused here as run refuses it
    loaded = with_namespace(_read_plan(args.plan), args.namespace)
    cases = expand(loaded)
    _check_run_options(args, loaded)
    check_faults(loaded, cases)
    checked = check_everything(loaded, cases, find_fio(args.fio), create=False, dry_run=True, s3=s3_access(args),
                               images=allowed_images(args))
    out = _console()
    table, constants = plan_table(cases, f"plan '{loaded.config.name}' ({args.plan})")
    out.print(table)
    out.print(constants)
    for line in _summary(loaded, cases, checked):
        out.print(line)
    for line in _fault_lines(loaded, cases):
        out.print(line)
    try:  # what `run` would refuse at its limits (--max-runs, --max-hours): said here, where the plan is still cheap
        _check_size(loaded, cases, _max_runs(args), _max_hours(args))
    except UserError as exc:
        out.print(f"⚠ run would refuse it: {exc.message} (hint: {exc.hint})", markup=False)
    trusted = fio_servers(args)  # a --fio-server that is no host refused here as run refuses it
    try:  # the fio servers it would drive and those the operator trusts (--fio-server): plan drives none
        check_fio_servers(loaded, trusted)
    except UserError as exc:
        out.print(f"⚠ run would refuse it: {exc.one_line()}", markup=False)
    return 0


def check_writes_line(check: CheckWritesConfig, workload: WorkloadConfig) -> str:
    """What `check_writes` does in a repetition, and whether each acknowledged write is read back (its region holds
    a block for each write of the longest repetition) or only each block's last."""
    blocks, writes = check.region_blocks(workload), check.writes_in(workload)
    line = (f"check_writes: beside fio, {blocks:,} stamped blocks of {format_block_size(check.bs)} written at "
            f"{check.iops:,} a second at most ({check.depth} at a time, each synchronous, each block once before any "
            "again) on each target's storage, every block read back after each repetition")
    if writes <= blocks:
        return line + ": each acknowledged write is read back"
    room = check.most_blocks
    most = room // math.ceil(writes / check.iops)  # writes a second that many blocks hold over a repetition
    fix = (f"with blocks: {writes} each is read back" if writes <= room else
           f"at most {room:,} blocks: with iops: {most} each is read back" if most >= 1 else
           "no region holds a block for each: a shorter runtime")
    return (line + f"; a repetition may write about {writes:,}: a block is written again after about "
            f"{blocks / check.iops:,.0f} s and only its last write is read back, so a write lost and then replaced "
            f"goes unseen ({fix})")


def _fault_lines(loaded: LoadedPlan, cases: Sequence[Case]) -> list[str]:
    """What happens when in one repetition of a plan with `faults:` (its first case's ramp and runtime)."""
    from storbench.config.faults import FAULT_TIMELINE_WINDOW_MS, fault_steps
    from storbench.faults import fault_timeline
    from storbench.lab.registry import plan_fault_offers
    from storbench.model import is_size_based

    lines = []
    if (check := loaded.config.check_writes) is not None:
        lines.append(check_writes_line(check, loaded.config.workload))
    if not loaded.config.faults:
        return lines
    from storbench.lab.registry import KINDS

    w = cases[0].workload
    steps = fault_steps(loaded.config.faults)
    sized = sum(1 for c in cases if is_size_based(c.workload.rw))
    end = ("measuring ends" if not sized else "measuring ends at the latest (the runtime caps a case that does each "
           f"file or object once: {'it ends' if sized == len(cases) else 'those end'} with the last, and a fault after "
           "it reads nothing)")
    events = fault_timeline(steps, w.ramp_s, w.runtime_s, plan_fault_offers(loaded), end)
    lines += [f"faults in every repetition (seconds from its start; fio's logs give the I/O in "
              f"{FAULT_TIMELINE_WINDOW_MS} ms windows):",
              *(f"  {event.at_s:7.1f}s  {event.text}" for event in events)]
    added: dict[str, list[str]] = {}  # what the labs add from a case's settings, and the cases' settings that do
    for case in cases:
        for step in (extra for kind in KINDS.values() for extra in kind.timed_faults(case, steps)):
            added.setdefault(f"{step} at {step.at_s + w.ramp_s:.1f}s", []).append(case.lab.describe())
    lines += [f"  and {what} where {', '.join(dict.fromkeys(where))}" for what, where in added.items()]
    return lines


def plan_before_resume(argv: Sequence[str]) -> list[str]:
    """`storbench run --resume plan.yaml` read as the user meant it, `run plan.yaml --resume` (argparse would take
    the plan file for the run number): a YAML file name right after ``--resume`` is moved before it."""
    out = list(argv)
    if out[:1] in (["run"], ["plan"]) and "--resume" in out:
        at = out.index("--resume")
        if at + 1 < len(out) and out[at + 1].endswith((".yaml", ".yml")):
            out.insert(at, out.pop(at + 1))
    return out


def _run_number(text: str) -> int:
    """`--resume RUN`: a stored run's number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a run number (e.g. --resume 3; --resume alone continues "
                                         "the latest run)")
    return int(text)


def _max_runs(args: argparse.Namespace) -> int:
    return MAX_RUNS if args.max_runs is None else int(args.max_runs)


def _max_hours(args: argparse.Namespace) -> float:
    return MAX_HOURS if args.max_hours is None else float(args.max_hours)


def _check_run_options(args: argparse.Namespace, loaded: LoadedPlan) -> tuple[tuple[str, str], ...]:
    """run's options refused with this plan, by `run` and by `plan` alike; the labels."""
    from storbench.selection import parse_labels

    labels = parse_labels(args.label)
    if args.budget is not None and isinstance(loaded.config.repeat, int) and loaded.config.steady_state is None:
        raise UserError("--budget starts no new round once spent, in a run that decides its rounds (repeat: {until: "
                        "...}, or steady_state); this plan " + ("searches its load with a fixed repeat"
                                                              if loaded.config.search is not None else
                                                              "repeats a fixed number of times"),
                        hint="drop --budget, or give the plan repeat: {min: 3, max: 10, until: decided} or "
                             "steady_state")
    if loaded.config.lab is not None and loaded.config.lab.k8s is not None and (args.kubeconfig or args.context):
        raise UserError("the plan's lab.k8s runs its pvc targets on the lab's own cluster; --kubeconfig and "
                        "--context name another one", hint="drop --kubeconfig/--context, or drop lab.k8s to "
                        "measure your cluster")
    if args.resume is not None and labels:
        raise UserError("--label is given when a run starts: a resumed run keeps the labels it started with",
                        hint="drop --label, or run without --resume to start a new run")
    return labels


def cmd_run(args: argparse.Namespace) -> int:
    from storbench.checks import check_everything
    from storbench.cli.progress import ConsoleObserver
    from storbench.cli.results import _print_results
    from storbench.config import with_namespace
    from storbench.execute.fio_binary import find_fio
    from storbench.execute.local import LocalExecutor
    from storbench.orchestrate import run_plan
    from storbench.plan import expand
    from storbench.store import open_store, store_exists

    loaded = with_namespace(_read_plan(args.plan), args.namespace)
    cases = expand(loaded)
    labels = _check_run_options(args, loaded)
    _check_size(loaded, cases, _max_runs(args), _max_hours(args))
    resume = args.resume is not None
    if resume and not store_exists(args.db):  # refused before a database file is made
        raise UserError(f"nothing to resume: no results database {args.db}", hint=f"run `storbench run "
                        f"{args.plan} --db {args.db}` without --resume to start")
    if resume:  # the run to continue, and its stopping rule, refused before anything is checked or laid out
        import platform

        from storbench.resume import check_design_unchanged, resumed_run, running_elsewhere

        stored = open_store(args.db)  # for writing: a database an older storbench wrote is migrated first
        try:
            resuming = resumed_run(stored, loaded.config.name, args.resume or None, platform.node())
            if stored.leases.held_elsewhere(resuming.run_id):  # refused before its target is touched
                raise running_elsewhere(resuming.run_id)
            if not args.accept_changed_design:
                check_design_unchanged(loaded, stored, resuming.run_id, accept=False, observer=None)
        finally:
            stored.close()
    fio_binary = find_fio(args.fio)
    from storbench.execute.jobdirs import remove_stale_job_dirs

    remove_stale_job_dirs()  # job files a killed storbench (kill -9) left in the temporary directory
    from storbench.lab.registry import check_faults

    check_faults(loaded, cases)  # what the plan's labs offer (the labs' registry: checks stays below the labs)
    checked = check_everything(loaded, cases, fio_binary, create=True, s3=s3_access(args),
                               fio_servers=fio_servers(args), images=allowed_images(args))
    store = open_store(args.db)
    out = _console()
    for line in _summary(loaded, cases, checked):
        out.print(line)
    if not resume:
        import platform

        from storbench.selection import incomplete_line
        from storbench.stats.run_questions import planned_repetitions

        previous = store.latest_run_of_plan(loaded.config.name, platform.node())  # this machine's, which it resumes
        unfinished = previous and incomplete_line(previous, store.repetition_counts(previous.run_id)[0],
                                                  planned_repetitions(previous), args.db)
        if unfinished:
            out.print(f"{unfinished}; starting a new run instead", markup=False)
    from storbench.report.labels import varying_case_texts

    observer = ConsoleObserver(out, varying_case_texts(cases))
    # held until the line that says how to go on is out: a press after the first must not cut that short either
    with interrupted_once("stopping fio, tearing down the labs and removing the test files"):
        try:
            result = run_plan(loaded, cases, checked, store, LocalExecutor(fio_binary), observer, resume=resume,
                              resume_run=args.resume or None, accept_changed_design=args.accept_changed_design,
                              keep_lab=args.keep_lab, budget_s=args.budget, cluster=cluster_access(args),
                              labels=labels)
        except KeyboardInterrupt:
            observer.close()
            which = f" {observer.run_id}" if observer.run_id is not None else ""
            _console(stderr=True).print(
                f"interrupted: every finished repetition is stored in {args.db}; continue with "
                f"`storbench run {args.plan} --db {args.db} --resume{which}`", markup=False)
            return 130
        finally:
            observer.close()
            store.close()  # and the run's lease with it (`store.run_lease`), however the run ended
    selection = _print_results(args.db, [result.run_id], title=f"results of run {result.run_id} ({args.db})")
    if loaded.config.compare is not None:  # the question the plan was run to answer
        from storbench.cli.compare import print_asked_comparison

        print_asked_comparison(selection, args.db, result.run_id, out)
    not_needed = f", {result.not_needed} not needed (answer known)" if result.not_needed else ""
    out.print(f"{count_of(result.ran, 'repetition')} run, {result.skipped} already stored, {result.failed} failed"
              f"{not_needed}; "
              f"stored in {args.db}")
    return 1 if result.failed else 0


def run_options(p: argparse.ArgumentParser) -> None:
    """run's command line, the plan file and every option; `plan` takes it too (its limits apply to what it says
    run would refuse, the rest are checked against the plan as run checks them), so that run's command line works
    there."""
    p.add_argument("plan", help="plan file (YAML)")
    db_option(p)
    fio_option(p)
    s3_options(p)
    cluster_options(p)
    fio_server_options(p)
    p.add_argument("--resume", nargs="?", type=_run_number, const=0, default=None, metavar="RUN",
                   help="continue run RUN of this plan (without RUN: its latest run made on this machine): run only "
                   "repetitions not yet stored as ok")
    p.add_argument("--accept-changed-design", action="store_true",
                   help="with --resume, continue although the plan changed its stopping rule (repeat: {min, max, "
                   "until}, compare, or steady_state); the run's answer is then marked as not holding its error "
                   "rates")
    p.add_argument("--budget", type=_duration, default=None, metavar="DURATION",
                   help="with repeat: {until: ...} or steady_state, start no new round after this long (e.g. 20m); "
                   "the answer so far is printed")
    p.add_argument("--max-runs", type=whole_above_zero, default=None, metavar="N",
                   help=f"refuse a plan of more fio runs than this (default {MAX_RUNS:,})")
    p.add_argument("--max-hours", type=above_zero, default=None, metavar="H",
                   help=f"refuse a plan estimated to take longer than this (default {MAX_HOURS:g})")
    p.add_argument("--keep-lab", action="store_true",
                   help="leave the plan's last lab configuration up after the run (tear down with `storbench lab`)")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="a label stored with the run (a build, a git sha, a firmware; repeatable): `storbench "
                   "history` names it where a point's figures changed")


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("plan", help="show the expanded cases, their count, data volume and ETA; no I/O",
                       description="Show the expanded cases, their count, data volume and ETA; no I/O. It takes "
                       "run's options, so that run's command line works here too, and checks them as run does, "
                       "but opens no database, reads no key and connects nowhere.")
    run_options(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser("run", help="run a plan with fio, storing each repetition as it finishes")
    run_options(p)
    p.set_defaults(func=cmd_run)
