"""Which stored results a command works on: runs, `--where` filters, selectors and latency objectives.

The query layer under `show`, `export`, `compare`, `saturation` and `report`. Parsing and resolving are pure;
`select` reads the results database. What a run's plan asked (expectations, steady-state rule, stopping rule,
bring-up mode, planned repetitions) is its stored design (``RunInfo.design``), never its plan text read again.
Mistakes are `UserError`s naming the flag that fixes them; nothing here prints.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING

from storbench.errors import UserError, did_you_mean
from storbench.model import Expectation, PreconditionRecord, RunInfo, StoredRepetition
from storbench.model.objective import parse_slo
from storbench.stats import match
from storbench.stats.match import no_match_line
from storbench.stats.metric_values import lat_percentiles_from
from storbench.stats.observations import attempts_of, observations
from storbench.stats.run_questions import (
    adaptive_questions,
    bring_ups,
    design_steady_rule,
    expectations,
    interleaved_runs,
    interval_levels,
    planned_repetitions,
    run_design_changes,
    sequential_plan,
    shuffled_runs,
)
from storbench.stats.selectors import Question, parse_selector
from storbench.stats.sequential import SequentialPlan
from storbench.stats.steady import steady_windows
from storbench.store import open_store
from storbench.units import RENAMED_METRICS

if TYPE_CHECKING:  # heavy modules (scipy, sqlite) load only for the commands that use them
    from storbench.model.objective import LatencyObjective
    from storbench.stats.observations import Observation
    from storbench.stats.selectors import Selector
    from storbench.stats.steady import SteadyState

SLO_HINT = "e.g. --slo p99<=10ms or --slo mean<=500us"


def incomplete_line(run: RunInfo, done: int, planned: int | None, db: str) -> str | None:
    """One line for a run whose plan is not done (repetitions missing or failed), with the command that finishes
    it; None for a complete run (and for imports). Pure."""
    if run.source != "run":
        return None
    finish = f"`storbench run {run.plan_path or 'PLAN.yaml'} --db {db} --resume {run.run_id}`"
    if planned is not None and done < planned:
        return (f"run {run.run_id} is incomplete: {done} of {planned} repetitions done"
                f"{' (interrupted, or still running)' if run.finished_at_s is None else ' (the others failed)'}; "
                f"finish it with {finish}")
    if planned is None and run.finished_at_s is None:
        return f"run {run.run_id} did not finish (interrupted, or still running); finish it with {finish}"
    return None


def repetition_keys(found: Iterable[Observation]) -> set[tuple[int, str, int]]:
    """(run, case, repetition index) of each observation: which stored repetitions they come from."""
    return {(o.run_id, o.case.case_id, o.rep_index) for o in found}


@dataclass(frozen=True)
class Selection:
    """What one read of the results database gave: the observations matching ``--where`` of the chosen runs,
    those runs, and their stored repetitions (raw: histograms and job texts for the report)."""

    observations: list[Observation]
    runs: list[RunInfo]
    label: str
    repetitions: list[StoredRepetition]
    steady: dict[tuple[int, str], SteadyState] = field(default_factory=dict)  # (run, case) of steady-state runs
    preconditions: dict[int, list[PreconditionRecord]] = field(default_factory=dict)  # run -> what ran first
    done: dict[int, int] = field(default_factory=dict)  # run -> repetitions stored with status ok
    # run -> how its stopping rule changed on a resume (`--accept-changed-design`): its answer lost its error rates
    design_changed: dict[int, list[str]] = field(default_factory=dict)
    # when --where matched nothing: which KEY=VALUE, and the values that field has ("no results match ...")
    no_match: str = ""

    @cached_property  # read by compare's cells and the report's replay alike: counted once
    def attempts(self) -> dict[tuple[int, str], frozenset[int]]:
        """(run, case) -> the rounds it was run in, ok or failed, whatever --where kept: what a run's stopping rule
        counts its looks by."""
        return attempts_of(self.repetitions)

    @property
    def tags(self) -> dict[int, tuple[str, ...]]:
        return {r.run_id: r.tags for r in self.runs}

    @property
    def memory(self) -> dict[int, int | None]:
        return {r.run_id: r.mem_total_bytes for r in self.runs}

    @property
    def sequential_plans(self) -> dict[int, SequentialPlan]:
        """Runs whose repetitions stopped when the comparison was decided (`repeat: {until: decided}`), with their
        looks: their data were looked at round by round by the sequential rule, so their intervals must be its.
        A run that stopped on `until: "ci <= N%"` ran no such rule, and its intervals are not labelled as one."""
        plans = {}
        for run in self.runs:
            plan = sequential_plan(run.design)
            if plan is not None:
                plans[run.run_id] = plan
        return plans

    @property
    def questions(self) -> dict[int, Question]:
        """What each run that stopped when decided asked (its plan's `compare`): the cells it did not ask about are
        outside its stopping rule (`stats.compare.stopping_rules`)."""

        return {q.run_id: Question(q.baseline, q.candidate, q.metrics) for q in adaptive_questions(self.runs)}

    @property
    def expectations(self) -> dict[tuple[int, str], Expectation]:
        """What each run's targets were declared as (`expect:`), by (run, target name)."""
        return expectations(self.runs)

    @property
    def interval_levels(self) -> dict[int, float]:
        """The t level of each run's intervals where it is not 95 % (``interval_levels``)."""
        return interval_levels(self.runs)

    @property
    def bring_ups(self) -> dict[int, str]:
        """Each run's `lab.ceph.bring_up` (once, each_repetition, side_by_side), from its stored design."""
        return bring_ups(self.runs)

    @property
    def interleaved_runs(self) -> frozenset[int]:
        """Runs whose repetitions alternate between cases (order: interleaved): their cases pair up."""
        return interleaved_runs(self.runs)

    @property
    def shuffled_runs(self) -> frozenset[int]:
        """Runs whose repetitions ran in random order (order: shuffled)."""
        return shuffled_runs(self.runs)


def parse_where(items: Sequence[str]) -> list[tuple[str, str]]:
    """`--where KEY=VALUE` items as (key, value) pairs; an item may hold several, comma-separated, as a selector
    does (`rw=randread,bs=4k`), when every part is KEY=VALUE."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        parts = item.split(",")
        for part in parts if all("=" in p for p in parts) else [item]:
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise UserError(f"--where {item!r} is not KEY=VALUE",
                                hint="e.g. --where rw=randread,bs=4k or --where rw=randread --where bs=4k")
            pairs.append((key.strip(), value.strip()))
    return pairs


LABEL_KEY_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
MAX_LABEL_CHARS = 200


def parse_labels(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """`run --label KEY=VALUE` items (a build, a git sha, a firmware) as sorted pairs: a key of letters, digits,
    '_', '.', '-'; a value of printable text up to MAX_LABEL_CHARS; each key once."""
    labels: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not LABEL_KEY_RE.match(key):
            raise UserError(f"--label {item[:80]!r} is not KEY=VALUE with a key of letters, digits, '_', '.' or '-'",
                            hint="e.g. --label build=1234 --label sha=3f2c1e0")
        if not value or len(value) > MAX_LABEL_CHARS or not value.isprintable():
            raise UserError(f"--label {key}: the value must be 1 to {MAX_LABEL_CHARS} printable characters",
                            hint="e.g. --label build=1234")
        if key in labels:
            raise UserError(f"--label {key} is given twice", hint="give each key once")
        labels[key] = value
    return tuple(sorted(labels.items()))


def where_items(where: Sequence[str], targets: Sequence[str] = ()) -> list[str]:
    """`--where` items with each `--target NAME` as one more `target=NAME`."""
    return [*where, *(f"target={t}" for t in targets)]


def resolve_runs(runs: Sequence[RunInfo], run: str, db: str, *, default_latest: bool) -> tuple[list[int], str]:
    """`--run` text ('', 'all', '3', '2,3') against the stored runs: (run ids, a label for titles)."""
    if run == "all" or (not run and not default_latest):
        return [r.run_id for r in runs], "all runs"
    if not run:  # the run started last (a run merged from another database has a higher id, not a later start)
        chosen = max(runs, key=lambda r: (r.started_at_s, r.run_id))
        # on a store runs of several machines share (a team's PostgreSQL, merged files), whose run it is
        made = f", made on {chosen.host}" if chosen.host and len({r.host for r in runs}) > 1 else ""
        return [chosen.run_id], f"run {chosen.run_id} (latest{made}; --run all for every run)"
    try:
        wanted = [int(part) for part in run.split(",")]
    except ValueError:
        raise UserError(f"--run {run!r} is not a run number", hint="e.g. --run 3, --run 2,3 or --run all") from None
    known = {r.run_id for r in runs}
    missing = [w for w in wanted if w not in known]
    if missing:
        raise UserError(f"no run {missing[0]} in {db}", hint="runs: " + ", ".join(str(r) for r in sorted(known)))
    return wanted, "run " + ",".join(map(str, wanted))


def filter_where(observations: Sequence[Observation], where: Sequence[str],
                 tags: Mapping[int, tuple[str, ...]] | None = None) -> list[Observation]:
    """The observations matching every `--where` item (`stats.match`, the matcher selectors use too); an
    unknown field is a UserError with a suggestion."""

    pairs = parse_where(where)
    unknown = match.unknown_keys([k for k, _ in pairs], observations)
    if unknown:
        known = [*match.known_keys(observations), *(a for a in match.ALIASES if a not in RENAMED_METRICS)]
        raise UserError(f"--where: unknown field {unknown[0]!r}",
                        hint=did_you_mean(unknown[0], known) or "fields are the export's (`storbench export "
                        "--format json` shows them), the table's column names (qd, jobs, dir), lab settings, run "
                        "and tag")
    targets = sorted({o.case.target.name for o in observations})
    for key, value in pairs:
        if key == "target" and value not in targets:
            raise UserError(f"no target '{value}' in the results", hint="targets: " + ", ".join(targets))
    return match.select(observations, pairs, tags or {})


def select(db: str, run: str, where: Sequence[str], *, default_latest: bool, per_client: bool = False) -> Selection:
    """Read the chosen runs from the results database ``db`` once and keep the observations matching ``where``."""

    store = open_store(db, read_only=True)
    runs = store.runs()
    if not runs:
        raise UserError(f"{db} holds no runs yet", hint="run `storbench run PLAN` first")
    run_ids, label = resolve_runs(runs, run, db, default_latest=default_latest)
    repetitions = store.repetitions(run_ids)
    preconditions = store.preconditions(run_ids)
    done = {run_id: store.repetition_counts(run_id)[0] for run_id in run_ids}
    changed = {run_id: run_design_changes(store.design_versions(run_id)) for run_id in run_ids}
    store.close()
    chosen = [r for r in runs if r.run_id in run_ids]
    kept, seen, steady = steady_view(chosen, repetitions, per_client=per_client)
    tags = {r.run_id: r.tags for r in chosen}
    found = filter_where(seen, where, tags)
    no_match = ""
    if where and not found:

        no_match = no_match_line(seen, parse_where(where), tags) if seen else "no results in the chosen runs"
    return Selection(found, chosen, label, kept, steady, {k: v for k, v in preconditions.items() if v}, done,
                     {run_id: what for run_id, what in changed.items() if what}, no_match)


def design_changed_line(run_id: int, changes: Sequence[str]) -> str:
    """The line under a table for a run whose stopping rule was changed on a resume. Pure."""
    return (f"run {run_id}: stopping rule changed after it started ({', '.join(changes)}; --accept-changed-design): "
            "its sequential answer does not hold the design's error rates")


def run_notes(selection: Selection, db: str) -> list[str]:
    """What every view of a selection says of its runs under its table (`show`, its Markdown and the report alike):
    p95 and p99 that are completion latency, a run not finished and how to finish it, a stopping rule changed on a
    resume. The Markdown and the report had left these out."""
    stand_in = {o.case.case_id for o in selection.observations if lat_percentiles_from(o.measurement) == "clat"}
    lines = [f"note: p95 and p99 of {len(stand_in)} point{'s' if len(stand_in) > 1 else ''} are completion latency "
             "(clat): their fio output has no total-latency bins (fio writes them only with lat_percentiles=1)"
             ] if stand_in else []
    lines += [line for run in selection.runs if (line := incomplete_line(run, selection.done.get(run.run_id, 0),
                                                                          planned_repetitions(run), db))]
    return lines + [design_changed_line(run_id, what) for run_id, what in sorted(selection.design_changed.items())]


def steady_view(runs: Sequence[RunInfo], repetitions: Sequence[StoredRepetition], *, per_client: bool = False
                ) -> tuple[list[StoredRepetition], list[Observation], dict[tuple[int, str], SteadyState]]:
    """The repetitions statistics use and their observations: for runs measured until steady (`steady_state`),
    only the rounds each point's figures come from (`SteadyState.figure_rounds`: the rounds after its steady
    window, or its window), every observation marked with its point's steady state and whether its figures are a
    window chosen for its small spread (no interval); the observations of runs that alternated their cases round
    by round marked ``alternated`` (their points pair along a curve). Pure."""

    rules = {}
    for run in runs:
        rule = design_steady_rule(run.design)
        if rule is not None:
            rules[run.run_id] = rule
    kept, states = steady_windows(repetitions, rules)
    alternating = interleaved_runs(runs)
    seen = [replace(o, alternated=True) if o.run_id in alternating else o
            for o in observations(kept, per_client=per_client, host_cpus={r.run_id: r.cpu_count for r in runs},
                                  run_hosts={r.run_id: r.host for r in runs})]
    if states:
        def marked(o: Observation) -> Observation:
            state = states.get((o.run_id, o.case.case_id))
            return o if state is None else replace(o, steady=state.status, window_only=state.window_only,
                                                          steady_state=state)

        seen = [marked(o) for o in seen]
    return kept, seen, states


def parse_selector_flag(text: str, flag: str) -> Selector:
    """A `--baseline`/`--candidate` selector; a malformed one is a UserError naming ``flag``."""

    try:
        return parse_selector(text)
    except ValueError as exc:
        raise UserError(f"{flag} {text!r}: {exc}",
                        hint="e.g. 3, run=3, target=nvme, tag=after, bs=4k,rw=randread, pool_size=2") from None


def check_selector_keys(selection: Selection, *selectors: Selector) -> None:
    """Every key a selector uses is a field, a lab setting of the selection, `run` or `tag`."""

    for selector in selectors:
        unknown = match.unknown_keys([k for k, _ in selector.pairs], selection.observations)
        if unknown:
            raise UserError(f"selector {selector.text!r}: unknown key {unknown[0]!r}",
                            hint=did_you_mean(unknown[0], match.known_keys(selection.observations))
                            or "keys: record fields (see export), lab parameters, run, tag")


def parse_objective(text: str | None) -> LatencyObjective | None:
    """An `--slo` latency objective (None when not given); a malformed one is a UserError."""
    if text is None:
        return None

    try:
        return parse_slo(text)
    except ValueError as exc:
        raise UserError(f"--slo: {exc}", hint=SLO_HINT) from None
