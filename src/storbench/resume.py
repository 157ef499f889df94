"""Resuming a run (shell): which run a `--resume` continues, the stopping rule it may not change, and the
steady-state points that start over (their lab or precondition is new).
"""

from __future__ import annotations

from storbench.config import LoadedPlan, check_writes_blocks, condition_changes, design_changes, plan_design
from storbench.errors import UserError
from storbench.events import PointRestarted, StoppingRuleChanged
from storbench.model import RunInfo, StoredRepetition
from storbench.run_state import RunObserver
from storbench.schedule import preconditions
from storbench.stats.run_questions import steady_rule
from storbench.stats.steady import SteadyStatus, judge_repetitions
from storbench.store import Store


def resumed_run(store: Store, plan_name: str, run_id: int | None, host: str) -> RunInfo:
    """The run a `--resume` continues: the latest run of the plan made here on this ``host`` (never another
    machine's in a store they share: its host, kernel and machine describe its repetitions), or run ``run_id`` when
    named (one of this plan's, stored by `run`: another machine's only when named, as a container renamed on a
    restart needs; whether that machine still runs it is its lease's to say). Never a run merged from another
    database: it goes on where it was made (a later merge of it replaces what it has here)."""
    if run_id is None:
        previous = store.latest_run_of_plan(plan_name, host)
        if previous is None:
            elsewhere = store.latest_run_of_plan(plan_name)
            raise UserError(f"nothing to resume: no earlier run of plan '{plan_name}' made on {host} in {store.path}"
                            + (f" (run {elsewhere.run_id} is {elsewhere.host}'s)" if elsewhere else ""),
                            hint="run without --resume to start one")
        return previous
    runs = {r.run_id: r for r in store.runs()}
    ours = sorted(r.run_id for r in runs.values()
                  if r.plan_name == plan_name and r.source == "run" and r.merged_from is None)
    found = runs.get(run_id)
    if found is not None and found.merged_from is not None:
        raise UserError(f"cannot resume run {run_id}: it was merged from {found.merged_from.database} (its run "
                        f"{found.merged_from.run_id}, on host {found.host}), and goes on there",
                        hint=f"resume it in {found.merged_from.database} and import that again"
                        + (f"; runs of plan '{plan_name}' made here: {', '.join(map(str, ours))}" if ours else ""))
    if found is None or found.plan_name != plan_name or found.source != "run":
        what = (f"no run {run_id} in {store.path}" if found is None else
                f"run {run_id} is {'an import' if found.source != 'run' else f'of plan {found.plan_name!r}'}, "
                f"not of plan '{plan_name}'")
        raise UserError(f"cannot resume: {what}",
                        hint=(f"runs of plan '{plan_name}': {', '.join(map(str, ours))}" if ours else
                              "run without --resume to start one"))
    return found  # named: another machine's too (a container whose name changed); its lease says if it still runs


def check_design_unchanged(loaded: LoadedPlan, store: Store, run_id: int, *, accept: bool,
                           observer: RunObserver | None) -> None:
    """A resume may not change a sequential design's stopping rule (`repeat: {min, max, until}`, `compare`) from
    the one the run last ran with (its latest plan version's stored design): its error rates hold only for a rule
    fixed before the data were seen. With ``accept`` the change is kept (as a new plan version, which marks the
    run's answer: ``run_design_changes``)."""

    versions = store.design_versions(run_id)
    if not versions:
        return
    version, before = versions[-1]
    if not before.from_plan:
        return  # a stored plan no storbench read a design in: nothing to compare the rule with
    now = plan_design(loaded.config, None)
    measured = {r.case.target.name for r in store.repetitions([run_id])}
    conditions = condition_changes(before, now, unmeasured=set(loaded.config.targets) - measured)
    if conditions:  # the repetitions left would measure something else, pooled with those stored as one point
        blocks, now_blocks = check_writes_blocks(before), check_writes_blocks(now)
        region = (f"; check_writes wrote over {blocks:,} blocks (its default follows the longest repetition): "
                  f"check_writes: {{blocks: {blocks}}} keeps that region" if "check_writes" in conditions
                  and blocks is not None and now_blocks is not None and blocks != now_blocks else "")
        raise UserError(f"plan '{loaded.config.name}' changed what run {run_id}'s repetitions run under since "
                        f"{'it started' if version == 1 else f'plan version {version}'} ({', '.join(conditions)}): "
                        "the repetitions left would not measure what the stored ones did",
                        hint="run without --resume to start a new run with it, or undo the change to resume; a "
                        f"resume may only add points{region}")
    changed = design_changes(before, now)
    if not changed:
        return
    since = "it started" if version == 1 else f"plan version {version}"
    what = ", ".join(changed)
    if not accept:
        raise UserError(f"plan '{loaded.config.name}' changed the stopping rule of run {run_id} since {since} "
                        f"({what}): its error rates hold only for the rule it started with",
                        hint="run without --resume to start a new run with this rule, or pass "
                        "--accept-changed-design to continue, its answer marked as not holding its error rates")
    if observer is not None:
        observer.event(StoppingRuleChanged(run_id, what))


def restart_unsettled_points(loaded: LoadedPlan, store: Store, run_id: int, observer: RunObserver) -> None:
    """Resuming a steady-state run on a lab or a preconditioned target: the lab comes up anew and the target is
    written again, so a point that was not yet steady, or not yet through its rounds after the steady window,
    starts over; its earlier rounds are dropped (a window or figures mixing rounds from before and after would
    judge two instances as one). A search's load whose repetitions were not all measured likewise (a search's
    points are on one cluster: its earlier and later repetitions had been pooled from two)."""

    rule = steady_rule(loaded.config)
    wanted = preconditions(loaded.config)
    count = loaded.config.repeat if isinstance(loaded.config.repeat, int) else None
    search = loaded.config.search is not None and count is not None
    if (rule is None and not search) or (loaded.config.lab is None and not wanted):
        return
    by_case: dict[str, list[StoredRepetition]] = {}
    for r in store.repetitions([run_id]):
        by_case.setdefault(r.case.case_id, []).append(r)
    for case_id, reps in by_case.items():
        case = reps[0].case
        if loaded.config.lab is None and case.target.name not in wanted:
            continue
        if rule is None:  # a search: the load it had begun pools its repetitions on one lab, one precondition
            if count is not None and len(reps) < count:
                observer.event(PointRestarted(case, False, store.drop_case_repetitions(run_id, case_id),
                                              searched=True))
            continue
        state = judge_repetitions(sorted(reps, key=lambda r: r.rep_index), rule)
        if not state.settled:
            dropped = store.drop_case_repetitions(run_id, case_id)
            observer.event(PointRestarted(case, state.status is not SteadyStatus.MEASURING, dropped))


def running_elsewhere(run_id: int) -> UserError:
    """The refusal of a resume of a run another storbench is running (it holds the run's lease)."""
    return UserError(f"cannot resume run {run_id}: another storbench is running it on this store (resumed now, its "
                     "repetitions would run twice at once, on one target)",
                     hint="let it end (or stop it), then --resume; or run without --resume to start a new run")
