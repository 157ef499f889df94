"""Baseline vs candidate: matched points, % change with a confidence interval, and a verdict per cell."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from storbench.fio.allowlist import ENGINES_BY_TARGET_KIND
from storbench.model import CLUSTER_SETTINGS, Expectation, is_metadata
from storbench.stats import match
from storbench.stats.bottleneck import BottleneckVerdict
from storbench.stats.estimate import CONFIDENCE, Difference, Estimate, welch_difference
from storbench.stats.metrics import COMPARE_METRICS, LAYER_METRICS, Metric
from storbench.stats.observations import Observation, alternated_rounds, metric_value
from storbench.stats.point_summary import PointSummary
from storbench.stats.sequential import (
    Decision,
    PairedChange,
    SequentialPlan,
    decide,
    paired_change,
    paired_values,
    rounds_run,
)
from storbench.stats.summary import summarize_points
from storbench.units import format_block_size

# Fields that identify a point when matching baseline and candidate (unless a selector names them).
MATCH_FIELDS = ("target", "rw", "rwmixread", "bs", "iodepth", "numjobs", "clients", "direction")
# Fields that must be equal for a comparison to mean anything (unless forced or named by a selector).
# ``lat_percentiles_from``: what p95 and p99 are, total latency or completion latency standing in for it (an import
# whose fio output has no total-latency bins); a point with no percentiles differs from neither.
COMPARABLE_FIELDS = ("target_kind", "ioengine", "direct", "runtime_s", "ramp_s", "fio_options",
                     "lat_percentiles_from", "fio_versions")
_REASON_NAMES = {"lat_percentiles_from": "latency kind"}
_SELECTOR_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*([^,]+?)\s*$")


class Verdict(StrEnum):
    BETTER = "better"
    WORSE = "worse"
    SAME = "~"
    NOT_COMPARABLE = "x"


class StoppingRule(StrEnum):
    """How a cell stands to the stopping rule of a run that stopped when decided (`repeat: {until: decided}`);
    a cell on no such run has none (None)."""

    IN = "in"  # the plan's question (a named metric at a point its baseline/candidate matched): the rule's interval
    OUTSIDE = "outside"  # not the question; still the rule's interval, which holds at whichever look the run stopped
    NOT_COVERED = "not covered"  # a plain interval on repetitions whose number the rule chose: descriptive


# The marker a cell outside the plan's question carries in tables, and the line under them that explains it.
STOPPING_RULE_MARKS = {StoppingRule.IN: "", StoppingRule.OUTSIDE: "†", StoppingRule.NOT_COVERED: "‡"}


@dataclass(frozen=True)
class Selector:
    """Which results form one side of a comparison: every key=value must hold (`stats.match`). Keys are record
    fields, lab settings, ``run`` (run number), or ``tag`` (a tag of the run)."""

    text: str
    pairs: tuple[tuple[str, str], ...]

    @property
    def keys(self) -> frozenset[str]:
        return frozenset("run_id" if k == "run" else match.canonical_key(k) for k, _ in self.pairs)


def parse_selector(text: str) -> Selector:
    """``3`` (a run), ``run=3``, ``target=nvme``, ``tag=after``, ``bs=4k,rw=randread``, ``pool_size=2`` (a lab
    parameter). ValueError on bad text; unknown keys are found by ``unknown_keys`` against the data."""
    stripped = text.strip()
    if stripped.isdigit():
        return Selector(text, (("run", stripped),))
    pairs = []
    for part in stripped.split(","):
        match = _SELECTOR_RE.match(part)
        if not match:
            raise ValueError(f"{part.strip()!r} is not KEY=VALUE")
        key, value = match.groups()
        pairs.append((key, value))
    if not pairs:
        raise ValueError("empty selector")
    return Selector(text, tuple(pairs))


def unknown_keys(selector: Selector, observations: Sequence[Observation]) -> list[str]:
    """Selector keys that are neither fields, `run`/`tag`, nor lab settings of any observation."""
    return match.unknown_keys([k for k, _ in selector.pairs], observations)


def select(observations: Sequence[Observation], selector: Selector,
           tags: Mapping[int, tuple[str, ...]]) -> list[Observation]:
    return match.select(observations, selector.pairs, tags)


@dataclass(frozen=True)
class Question:
    """What a run that stopped when decided asked (its plan's `compare`): the metrics the rule decided at every
    point the two selectors matched in that run."""

    baseline: Selector
    candidate: Selector
    metrics: tuple[str, ...]

    def text(self, run_id: int) -> str:
        labels = {m.field: m.label for m in COMPARE_METRICS}
        named = ", ".join(labels.get(m, m) for m in self.metrics)
        return f"run {run_id}: {named} of {self.candidate.text} vs {self.baseline.text}"


def _pct(value: float) -> str:
    return f"{100 * value:+.1f}" if math.isfinite(value) else "+inf"


@dataclass(frozen=True)
class RuleAnswer:
    """The stopping rule's final verdict on one metric of a run's question (`repeat: {until: decided}`), as the
    run loop gave it on all the run's pairs, turned to the comparison's way round (baseline -> candidate): which
    way, the change with the interval of the last look, the rounds and the minutes the run took."""

    decision: Decision
    rounds: int  # rounds run (the last look's index)
    max_rounds: int
    margin: float | None
    change: PairedChange | None  # the candidate's change against the baseline; None below two pairs
    minutes: float | None  # the whole run, first repetition's start to the last one's end

    @property
    def reached_max(self) -> bool:
        return self.rounds >= self.max_rounds

    def text(self) -> str:
        """"equivalent within ±10 % (-1.8 % [-9.3, +6.3]) after 7 of at most 10 rounds, 12.5 min", "reached max 10
        rounds undecided (+2.0 % [-12.1, +18.3]), 25.0 min": what the run's stopping rule answered."""
        c = self.change
        shown = f" ({_pct(c.estimate)} % [{_pct(c.low)}, {_pct(c.high)}])" if c is not None else " (no pairs)"
        took = f", {self.minutes:.1f} min" if self.minutes is not None else ""
        if self.decision == Decision.UNDECIDED:
            if self.reached_max:
                return f"reached max {self.max_rounds} rounds undecided{shown}{took}"
            return (f"undecided after {self.rounds} of at most {self.max_rounds} rounds{shown}: the run ended "
                    f"before max (a --budget, or interrupted; --resume goes on){took}")
        what = self.decision.value
        if self.decision == Decision.EQUIVALENT:
            what += f" within ±{100 * (self.margin or 0.0):g} %"
        return f"{what}{shown} after {self.rounds} of at most {self.max_rounds} rounds{took}"


@dataclass(frozen=True)
class CellComparison:
    metric: Metric
    baseline: Estimate | None
    candidate: Estimate | None
    difference: Difference | None
    verdict: Verdict
    stopping_rule: StoppingRule | None = None  # None: no side ran under a rule that stopped when decided
    answer: RuleAnswer | None = None  # a cell of its run's question (StoppingRule.IN): the rule's final verdict

    @property
    def gated(self) -> bool:
        """Whether a regression gate may judge this cell: its interval holds at the error rate it claims (a plain
        interval on repetitions a stopping rule counted does not), and it is one of the metrics a gate is about
        (where the time goes, LAYER_METRICS, is descriptive)."""
        return self.stopping_rule != StoppingRule.NOT_COVERED and self.metric not in LAYER_METRICS


@dataclass(frozen=True)
class PointComparison:
    key: tuple[tuple[str, object], ...]  # the fields the two points were matched on, typed; lab settings as "lab.NAME"
    baseline: PointSummary
    candidate: PointSummary
    comparable: bool
    reason: str
    cells: tuple[CellComparison, ...]
    design: str = ""  # how the two sides ran (DESIGNS); "" when not known (built outside compare_observations)
    question: Question | None = None  # both sides in one run that stopped when decided: what that run asked

    def cell(self, field: str) -> CellComparison | None:
        return next((c for c in self.cells if c.metric.field == field), None)


# What a point is matched on (MATCH_FIELDS) and must agree in (COMPARABLE_FIELDS): typed values of its case and
# direction (the block size in bytes, fio options as pairs), so two points are told apart by the model.
POINT_VALUES: Mapping[str, Callable[[PointSummary], object]] = {
    "target": lambda p: p.case.target.name,
    "rw": lambda p: p.case.workload.rw,
    "rwmixread": lambda p: p.case.workload.rwmixread,
    "bs": lambda p: p.case.workload.bs_bytes,
    "iodepth": lambda p: p.case.workload.iodepth,
    "numjobs": lambda p: p.case.workload.numjobs,
    "clients": lambda p: p.case.clients,
    "direction": lambda p: p.direction,
    "target_kind": lambda p: p.case.target.kind,
    "ioengine": lambda p: p.case.workload.ioengine,
    "direct": lambda p: p.case.workload.direct,
    "runtime_s": lambda p: p.case.workload.runtime_s,
    "ramp_s": lambda p: p.case.workload.ramp_s,
    "fio_options": lambda p: p.case.workload.fio_options,
    "lat_percentiles_from": lambda p: p.lat_percentiles_from,
    "fio_versions": lambda p: p.fio_versions,
}


def _value(point: PointSummary, field: str) -> object:
    return POINT_VALUES[field](point)


def _text(point: PointSummary, field: str) -> str:
    """A field's value as the messages that name it show it (``4k``, ``rate_iops=100``, ``fio-3.33,fio-3.36``)."""
    value = _value(point, field)
    if field == "bs":
        return format_block_size(point.case.workload.bs_bytes)
    if field == "fio_options":
        return " ".join(f"{k}={v}" for k, v in point.case.workload.fio_options)
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return "" if value is None else str(value)


def _differs(base: PointSummary, cand: PointSummary, field: str) -> bool:
    if field == "lat_percentiles_from":  # no percentiles on a side: nothing set against anything
        return bool(base.lat_percentiles_from and cand.lat_percentiles_from) \
            and base.lat_percentiles_from != cand.lat_percentiles_from
    return _value(base, field) != _value(cand, field)


def _reason(base: PointSummary, cand: PointSummary, differing: Sequence[str]) -> str:
    """"different ioengine (libaio vs io_uring), latency kind (p95, p99: clat vs lat)": what keeps two points apart."""
    if not differing:
        return ""
    parts = []
    for field in differing:
        name = _REASON_NAMES.get(field, field.replace("_", " "))
        if field == "lat_percentiles_from":
            parts.append(f"{name} (p95, p99: {base.lat_percentiles_from} vs {cand.lat_percentiles_from})")
        elif field == "direct":
            parts.append(f"direct ({int(base.case.workload.direct)} vs {int(cand.case.workload.direct)})")
        elif field in ("ioengine", "target_kind"):
            parts.append(f"{name} ({_text(base, field)} vs {_text(cand, field)})")
        else:
            parts.append(name)
    return "different " + ", ".join(parts)


def engine_follows_from_kind(base: PointSummary, cand: PointSummary) -> bool:
    """Whether two points' engines differ because their target kinds dictate them (an rbd image is driven by the
    rbd engine, a local path by a kernel one): one side's engine could not drive the other side's kind. An
    `imported` target's kind is not known, so any engine could have driven it: its engine never follows."""
    engines_a = ENGINES_BY_TARGET_KIND.get(base.target_kind)
    engines_b = ENGINES_BY_TARGET_KIND.get(cand.target_kind)
    if engines_a is None or engines_b is None or base.target_kind == cand.target_kind:
        return False
    return cand.case.workload.ioengine not in engines_a or base.case.workload.ioengine not in engines_b


def _verdict(metric: Metric, difference: Difference | None) -> Verdict:
    if difference is None or not difference.significant:
        return Verdict.SAME
    improved = difference.diff > 0 if metric.higher_is_better else difference.diff < 0
    return Verdict.BETTER if improved else Verdict.WORSE


DERIVED_LAB_KEYS = {"db_device": {"db_size"}, "osds_per_device": {"osds", "osd_size", "devices", "device_size"}}


def compare_points(baseline: Sequence[PointSummary], candidate: Sequence[PointSummary],
                   ignore: frozenset[str], *, force: bool = False,
                   metrics: Sequence[Metric] = COMPARE_METRICS, confidence: float = CONFIDENCE
                   ) -> list[PointComparison]:
    """Pair points that agree on every match field not named by a selector; compare each metric.

    A candidate point is paired with the baseline point that also has the same workload (ioengine, direct,
    runtime, ramp, fio options, target kind, latency kind) when there is one — so a plan sweeping ioengine compares
    io_uring with io_uring — and otherwise with any point of the same match key, marked not comparable (with the
    reason) unless ``ignore`` (the fields the selectors name) holds each field that differs. Naming ``target``
    names its kind too, and an engine only where the kinds dictate it (``engine_follows_from_kind``): libaio on
    one local disk against io_uring on another, or on an imported target, stays not comparable.
    """
    match_fields = [f for f in MATCH_FIELDS if f not in ignore]
    if "target" in ignore:  # comparing targets: their kind (and the engine a kind dictates) is the question
        ignore = ignore | {"target_kind"}
    lab_ignored = {k for k in ignore if k not in match.FIELDS}
    for named, derived in DERIVED_LAB_KEYS.items():  # settings that follow from a named one differ with it
        if named in lab_ignored:
            lab_ignored |= derived

    def lab_key(point: PointSummary) -> tuple[tuple[str, object], ...]:
        return tuple(("lab." + k, v) for k, v in point.lab if k not in lab_ignored)

    workload_fields = [f for f in COMPARABLE_FIELDS if f not in ignore and f != "fio_versions"]
    by_key: dict[tuple[tuple[str, object], ...], PointSummary] = {}
    by_full_key: dict[tuple[tuple[str, object], ...], PointSummary] = {}
    for point in baseline:
        key = tuple((f, _value(point, f)) for f in match_fields) + lab_key(point)
        by_key.setdefault(key, point)
        by_full_key.setdefault(key + tuple((f, _value(point, f)) for f in workload_fields), point)
    out: list[PointComparison] = []
    for point in candidate:
        key = tuple((f, _value(point, f)) for f in match_fields) + lab_key(point)
        base = by_full_key.get(key + tuple((f, _value(point, f)) for f in workload_fields)) or by_key.get(key)
        if base is None:
            continue
        differing = [f for f in COMPARABLE_FIELDS if f not in ignore and _differs(base, point, f)]
        if "target" in ignore and "ioengine" in differing and engine_follows_from_kind(base, point):
            differing.remove("ioengine")  # rbd, nfs and s3 targets have their own engine
        comparable = force or not differing
        reason = _reason(base, point, differing)
        cells = []
        for metric in (*metrics, *LAYER_METRICS):
            if metric.field == "bw_bytes" and is_metadata(point.rw):
                continue  # a create, stat or delete moves no data: its "bandwidth" is operations x bs
            b, c = base.metric(metric.field), point.metric(metric.field)
            difference = welch_difference(b, c, confidence) if b is not None and c is not None and b.mean else None
            if metric in LAYER_METRICS and difference is None:
                continue  # where the time goes: only where both sides' storage reported it
            verdict = _verdict(metric, difference) if comparable else Verdict.NOT_COMPARABLE
            cells.append(CellComparison(metric, b, c, difference, verdict))
        out.append(PointComparison(key, base, point, comparable, reason, tuple(cells)))
    return out


def side_differences(baseline: Sequence[PointSummary], candidate: Sequence[PointSummary], ignore: frozenset[str]
                     ) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(field, the baseline's values, the candidate's) for every field points match on or must agree in whose
    values on one side are none of the other side's, the selectors' fields left out (``ignore``): what keeps
    the two sides' points apart, or makes them not comparable, everywhere."""
    fields = [f for f in (*MATCH_FIELDS, *COMPARABLE_FIELDS) if f not in ignore and f != "fio_versions"]
    if "target" in ignore:
        fields = [f for f in fields if f != "target_kind"]
    if "rw" in ignore:  # the direction follows from rw: reads and writes never compare
        fields = [f for f in fields if f != "direction"]
    found = []
    for field in fields:
        a = sorted({_text(p, field) for p in baseline} - {""} if field == "lat_percentiles_from"
                   else {_text(p, field) for p in baseline})
        b = sorted({_text(p, field) for p in candidate} - {""} if field == "lat_percentiles_from"
                   else {_text(p, field) for p in candidate})
        if a and b and not set(a) & set(b):
            found.append((field, tuple(a), tuple(b)))
    labs_a = {k: {v for p in baseline for key, v in p.lab if key == k} for p in baseline for k, _ in p.lab}
    labs_b = {k: {v for p in candidate for key, v in p.lab if key == k} for p in candidate for k, _ in p.lab}
    for key in sorted(set(labs_a) & set(labs_b)):
        if key not in ignore and not labs_a[key] & labs_b[key]:
            found.append((key, tuple(sorted(labs_a[key])), tuple(sorted(labs_b[key]))))
    return found


def _values_text(values: Sequence[str]) -> str:
    shown = [v if v else "none" for v in values[:3]]
    return ", ".join(shown) + (f" and {len(values) - 3} more" if len(values) > 3 else "")


def no_common_point(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                    tags: Mapping[int, tuple[str, ...]]) -> str:
    """Why two selectors' sides have no point in common, in one line: the fields whose values differ between
    every point of one side and every point of the other (``side_differences``), and that naming them in the
    selectors compares across them."""
    ignore = baseline.keys | candidate.keys
    found = side_differences(summarize_points(select(observations, baseline, tags)),
                             summarize_points(select(observations, candidate, tags)), ignore)
    if not found:  # the points differ in combinations of values (or in direction, where rw was selected on)
        return "baseline and candidate have no point in common"
    parts = [f"{field.replace('_', ' ') if field in COMPARABLE_FIELDS else field} "
             f"({_values_text(a)} vs {_values_text(b)})" for field, a, b in found]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    them = "it" if len(found) == 1 else "them"
    text = f"no point in common: the sides differ in {listed}; name {them} in the selectors to compare across {them}"
    if all(len(a) == 1 and len(b) == 1 for _, a, b in found):

        def named(selector: Selector, side: int) -> str:
            return ",".join([*(f"{k}={v}" for k, v in selector.pairs), *(f"{f}={v[side][0]}" for f, *v in found)])

        text += f" (--baseline {named(baseline, 0)} --candidate {named(candidate, 1)})"
    return text


def with_run_verdicts(points: Sequence[PointSummary], observations: Sequence[Observation],
                      mem_total_bytes: Mapping[int, int | None] | None = None,
                      expectations: Mapping[tuple[int, str], Expectation] | None = None) -> list[PointSummary]:
    """One side's points with the bottleneck verdicts their whole runs give them, as `show` and the report read
    them: a sweep's verdicts (capped, what more load did) need the sweep's other points, which a side's selector
    may leave out (``--baseline target=a`` of a sweep over iodepth keeps it; ``iodepth=16`` does not). Each point
    is summarised again among every point of the runs it comes from, pooled over those runs as it is, and takes
    that verdict; its figures stay the side's."""
    verdicts: dict[tuple[int, ...], dict[tuple[str, str], BottleneckVerdict]] = {}
    out = []
    for point in points:
        if point.run_ids not in verdicts:
            runs = set(point.run_ids)
            verdicts[point.run_ids] = {
                (p.case_id, p.direction_name): p.bottleneck
                for p in summarize_points([o for o in observations if o.run_id in runs], mem_total_bytes,
                                          expectations=expectations)}
        verdict = verdicts[point.run_ids].get((point.case_id, point.direction_name))
        out.append(point if verdict is None else replace(point, bottleneck=verdict))
    return out


def compare_observations(observations: Sequence[Observation], baseline: Selector, candidate: Selector,
                         tags: Mapping[int, tuple[str, ...]], mem_total_bytes: Mapping[int, int | None] | None = None,
                         *, force: bool = False, interleaved_runs: frozenset[int] = frozenset(),
                         sequential_plans: Mapping[int, SequentialPlan] | None = None,
                         bring_ups: Mapping[int, str] | None = None, alpha: float = 1 - CONFIDENCE,
                         questions: Mapping[int, Question] | None = None,
                         expectations: Mapping[tuple[int, str], Expectation] | None = None) -> list[PointComparison]:
    """Match the two sides' points and compare every metric. Where the design pairs repetitions (both sides in
    one run whose order alternates them, ``interleaved_runs``, and not across a setting that needs a cluster per
    value) the change and its interval come from the per-pair ratios (``paired_differences``); else Welch.
    ``alpha``: each interval's error rate (5 %; smaller for a family-wise rule, see ``family_regressions``).
    On runs that stopped when decided (``sequential_plans``) each cell says whether it was that run's question
    (``questions``: run -> what its plan's `compare` asked; ``stopping_rules``). Each point's bottleneck verdict is
    the one `show` gives it (``with_run_verdicts``; ``expectations``: (run, target) -> `expect:`, as `show` reads
    them)."""
    ignore = baseline.keys | candidate.keys
    base, cand = (with_run_verdicts(summarize_points(select(observations, side, tags), mem_total_bytes), observations,
                                    mem_total_bytes, expectations) for side in (baseline, candidate))
    comparisons = compare_points(base, cand, ignore, force=force, confidence=1 - alpha)
    blocked = bool(blocked_settings(baseline, candidate))
    if blocked:  # pairs only where the clusters alternated (A B B A)
        interleaved_runs = frozenset(r for r in interleaved_runs if (bring_ups or {}).get(r, "once") != "once")
    compared = paired_differences(comparisons, observations, interleaved_runs, sequential_plans or {}, alpha)
    designed = [replace(c, design=design_of(c, interleaved_runs, blocked, bring_ups or {})) for c in compared]
    return stopping_rules(designed, observations, sequential_plans or {}, questions or {}, tags)


# How the two sides of a comparison ran (said under every comparison, `report.tables.design_lines`), and whether
# that design separates the setting from everything else.
DESIGNS = {
    "paired": "both sides in one run, repetitions alternating (A B B A); intervals from the pairs: time drift "
              "cancels",
    "interleaved": "both sides in one run, repetitions alternating, but the rounds did not match: unpaired (Welch) "
                   "intervals",
    "fresh instance per round": "a fresh cluster per side and round (A B B A); intervals from the pairs: the "
                                "instance is sampled, its variation inside the interval",
    "one instance per side": "each side ran on one cluster instance: the setting is confounded with the instance",
    "blocked": "one run, all of one side before the other: the setting is confounded with time (drift reads as a "
               "change)",
    "two runs": "separate runs (before/after): the change is confounded with everything else that changed between "
                "them (time, the host's state, the instance where it differs)",
}
CONFOUNDED = frozenset({"one instance per side", "blocked", "two runs"})
# The A/A rate of one instance per side that the caveat cites: instances whose level differs with a standard
# deviation of INSTANCE_SPREAD_PCT, repetitions with run-to-run CV AA_CV_PCT (bench/instance_design.py, 10,000
# compares a cell; docs/methodology.md, "Comparisons"). A fresh instance per round: 5 %.
INSTANCE_SPREAD_PCT = 3
AA_CV_PCT = 5
AA_DIFFERENT_PCT = {10: 34, 30: 57}  # repetitions a side -> % of A/A compares called different
AA_RATE = (f"with a {INSTANCE_SPREAD_PCT} % spread between instances an A/A compare says \"different\" "
           f"{AA_DIFFERENT_PCT[10]} % of the time (n=10, CV {AA_CV_PCT} %")
DESIGN_CAVEATS = {
    "one instance per side": f"{AA_RATE}; {AA_DIFFERENT_PCT[30]} % at n=30: more repetitions do not help, a fresh "
                             "instance per round does, 5 %; docs/methodology.md); read a verdict as about these two "
                             "instances, not the setting",
    "blocked": "read a verdict as about these two stretches of time, not the setting alone (order: interleaved "
               "alternates the sides)",
    "two runs": f"read a verdict as about these runs, not the change alone; where they ran on different instances, "
                f"{AA_RATE})",
}


def design_of(comparison: PointComparison, interleaved_runs: frozenset[int], blocked: bool,
              bring_ups: Mapping[int, str]) -> str:
    """The design of one comparison (a key of DESIGNS)."""
    runs = {*comparison.baseline.run_ids, *comparison.candidate.run_ids}
    if len(runs) != 1:
        return "two runs"
    (run,) = runs
    if blocked:  # a cluster per value: side by side or brought up once, each side is one instance
        fresh = bring_ups.get(run, "once") == "each_repetition"
        return "fresh instance per round" if fresh else "one instance per side"
    if run not in interleaved_runs:
        return "blocked"
    paired = any(cell.difference is not None and cell.difference.method in ("paired", "sequential")
                 for cell in comparison.cells)
    return "paired" if paired else "interleaved"


def paired_differences(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
                       interleaved_runs: frozenset[int], sequential_plans: Mapping[int, SequentialPlan] | None = None,
                       alpha: float = 1 - CONFIDENCE) -> list[PointComparison]:
    """Comparisons whose two points ran in one interleaved run, repetition for repetition, get paired intervals:
    repetition i of the baseline and repetition i of the candidate ran next to each other (A B, B A, ...), so
    their ratio cancels slow drift; a round that failed on one side leaves its pair out (the run loop pairs the
    same rounds). Others keep Welch's interval. In a run that stopped when its answer was known
    (``sequential_plans``) the data were looked at round by round: the interval is the sequential rule's at the
    last look (its spent error rate, the look indexed by round as the run loop does), so a look-and-stop cannot
    pass for a fixed-size 95 % result."""
    sequential_plans = sequential_plans or {}
    by_run: dict[int, list[Observation]] = {}
    for o in observations:
        by_run.setdefault(o.run_id, []).append(o)
    # the one pairing rule (curves use it too), run by run: a plan run twice has its case ids twice
    rounds = {run: alternated_rounds(by_run.get(run, []), {run}) for run in interleaved_runs}
    out = []
    for comparison in comparisons:
        base, cand = comparison.baseline, comparison.candidate
        same_run = len(base.run_ids) == 1 and base.run_ids == cand.run_ids and base.run_ids[0] in rounds
        run_rounds = rounds[base.run_ids[0]] if same_run else {}
        a = run_rounds.get((base.case_id, base.direction_name), {})
        b = run_rounds.get((cand.case_id, cand.direction_name), {})
        if base.case_id == cand.case_id or len(set(a) & set(b)) < 2:  # rounds of one run both sides have
            out.append(comparison)
            continue
        sequential = sequential_plans.get(base.run_ids[0])
        # the error rate of this comparison's intervals: ``alpha``, or the sequential rule's at its look after the
        # last round either side has, for a rule whose overall error rate is scaled as ``alpha`` is to 5 %
        looked = rounds_run({i: o for (_, i), o in a.items()}, {i: o for (_, i), o in b.items()})
        error = alpha if sequential is None else _look_alpha(sequential, looked, alpha)
        cells = []
        for cell in comparison.cells:
            field = cell.metric.field
            pairs = paired_values({r: metric_value(o, field) for r, o in a.items()},
                                  {r: metric_value(o, field) for r, o in b.items()})
            change = paired_change(*pairs, 1 - error) if pairs is not None else None
            if change is None or cell.baseline is None:
                cells.append(cell)
                continue
            mean = cell.baseline.mean
            difference = Difference(diff=mean * change.estimate, ci_low=mean * change.low, ci_high=mean * change.high,
                                    change_pct=100 * change.estimate, change_ci_low_pct=100 * change.low,
                                    change_ci_high_pct=100 * change.high,
                                    method="sequential" if sequential else "paired", pairs=change.n)
            verdict = _verdict(cell.metric, difference) if comparison.comparable else Verdict.NOT_COMPARABLE
            cells.append(replace(cell, difference=difference, verdict=verdict))
        out.append(replace(comparison, cells=tuple(cells)))
    return out


def question_points(observations: Sequence[Observation], question: Question,
                    tags: Mapping[int, tuple[str, ...]]) -> frozenset[tuple[str, str, str]]:
    """The points a run's question matched, as (baseline case, candidate case, direction): the plan's two
    selectors over that run's observations, paired as the run loop paired them (``stats.adaptive``)."""
    found = compare_points(summarize_points(select(observations, question.baseline, tags)),
                           summarize_points(select(observations, question.candidate, tags)),
                           question.baseline.keys | question.candidate.keys, metrics=())
    return frozenset((c.baseline.case_id, c.candidate.case_id, c.baseline.direction_name) for c in found)


def _by_round(observations: Sequence[Observation], point: PointSummary, field: str) -> dict[int, float]:
    """A point's values of ``field`` by round (repetition index), as the run loop reads them (`stats.adaptive`)."""
    out = {}
    for o in observations:
        if o.ok and not o.client and o.direction is not None and o.case.case_id == point.case_id \
                and o.direction == point.direction and (value := metric_value(o, field)) is not None:
            out[o.rep_index] = float(value)
    return out


def _inverse(change: PairedChange) -> PairedChange:
    """The change A/B - 1 from B/A - 1: the same pairs the other way round."""
    def inv(x: float) -> float:
        return 1 / (1 + x) - 1 if 1 + x > 0 else math.inf
    return replace(change, estimate=inv(change.estimate), low=inv(change.high), high=inv(change.low))


def rule_answer(observations: Sequence[Observation], baseline: PointSummary, candidate: PointSummary, field: str,
                plan: SequentialPlan, *, forward: bool = True) -> RuleAnswer:
    """The stopping rule's final verdict on ``field`` of one run's question (``observations``: that run's), as
    its run loop gave it (`stats.adaptive.decided_verdicts`: the rule at the look after the rounds run, on the
    pairs of rounds both sides have), in the question's way round (``forward``: the comparison's baseline is the
    question's), then turned to the comparison's: higher and lower swap and the change is inverted, equivalent
    stays what the run decided."""
    a, b = _by_round(observations, baseline, field), _by_round(observations, candidate, field)
    first, second = (a, b) if forward else (b, a)
    common = sorted(set(first) & set(second))
    verdict = decide([first[i] for i in common], [second[i] for i in common], plan, rounds_run(first, second))
    decision, change = verdict.decision, verdict.change
    if not forward:
        decision = {Decision.HIGHER: Decision.LOWER, Decision.LOWER: Decision.HIGHER}.get(decision, decision)
        change = _inverse(change) if change is not None else None
    minutes = None
    if observations:
        minutes = (max(o.finished_at_s for o in observations) - min(o.started_at_s for o in observations)) / 60
    return RuleAnswer(decision=decision, rounds=verdict.rounds, max_rounds=plan.max_rounds, margin=plan.margin,
                      change=change, minutes=minutes)


def stopping_rules(comparisons: Sequence[PointComparison], observations: Sequence[Observation],
                   sequential_plans: Mapping[int, SequentialPlan], questions: Mapping[int, Question],
                   tags: Mapping[int, tuple[str, ...]]) -> list[PointComparison]:
    """Each cell with data of a run that stopped when decided, marked with how it stands to that run's rule.

    The rule looked only at the metrics its plan's `compare` named, at the points its selectors matched: those
    cells are ``IN`` (either way round: the interval of the inverse ratio is the inverse interval on the same
    pairs at the same look). Every other cell of one such run keeps the rule's interval, which still holds at
    whichever look the run stopped (its looks were fixed before the run and its error rate split over all of
    them, so which metric chose the look does not matter) but the run did not go on until it was decided:
    ``OUTSIDE``. A cell with a plain interval (Welch across runs, or pairs that could not be formed) on
    repetitions whose number the rule chose is ``NOT_COVERED``: descriptive."""
    stopped = set(sequential_plans)
    matched: dict[int, frozenset[tuple[str, str, str]]] = {}
    out = []
    for comparison in comparisons:
        base, cand = comparison.baseline, comparison.candidate
        if not stopped & {*base.run_ids, *cand.run_ids}:
            out.append(comparison)
            continue
        run = base.run_ids[0] if len(base.run_ids) == 1 and base.run_ids == cand.run_ids else None
        question = questions.get(run) if run is not None and run in stopped else None
        points: frozenset[tuple[str, str, str]] = frozenset()
        if question is not None and run is not None:
            if run not in matched:
                matched[run] = question_points([o for o in observations if o.run_id == run], question, tags)
            points = matched[run]
        forward = (base.case_id, cand.case_id, base.direction_name) in points
        asked_here = forward or (cand.case_id, base.case_id, cand.direction_name) in points
        cells = []
        for cell in comparison.cells:
            answer = None
            if cell.difference is not None and cell.difference.method != "sequential":
                rule = StoppingRule.NOT_COVERED
            elif asked_here and question is not None and cell.metric.field in question.metrics:
                rule = StoppingRule.IN
                if run is not None:
                    answer = rule_answer([o for o in observations if o.run_id == run], base, cand,
                                         cell.metric.field, sequential_plans[run], forward=forward)
            else:
                rule = StoppingRule.OUTSIDE
            cells.append(replace(cell, stopping_rule=rule, answer=answer))
        out.append(replace(comparison, cells=tuple(cells), question=question))
    return out


def stopping_rule_lines(comparisons: Sequence[PointComparison]) -> list[str]:
    """One line for each marker the cells carry (``STOPPING_RULE_MARKS``): what those cells' intervals are."""
    rules = {cell.stopping_rule for c in comparisons for cell in c.cells}
    lines = []
    if StoppingRule.OUTSIDE in rules:
        asked = sorted({c.question.text(c.baseline.run_ids[0]) for c in comparisons if c.question is not None})
        what = f"the question its stopping rule asked ({'; '.join(asked)})" if asked else \
            "the question its stopping rule asked"
        lines.append(f"{STOPPING_RULE_MARKS[StoppingRule.OUTSIDE]} not {what}: the run did not wait for these "
                     "to be decided, so ~ there means undecided when it stopped, not no difference; their interval "
                     "is still the stopping rule's, valid at whichever look the run stopped")
    if StoppingRule.NOT_COVERED in rules:
        lines.append(f"{STOPPING_RULE_MARKS[StoppingRule.NOT_COVERED]} a plain interval on repetitions whose "
                     "number a stopping rule chose (a run that stopped when decided, compared across runs or "
                     "without pairs): descriptive, not covered by the rule's error rate; --fail-on-regression "
                     "leaves these out")
    return lines


@dataclass(frozen=True)
class Regression:
    comparison: PointComparison
    cell: CellComparison


def regressions(comparisons: Sequence[PointComparison], threshold_pct: float) -> list[Regression]:
    """Cells that are significantly worse and whose estimated change is at least ``threshold_pct`` bad (of those a
    gate may judge: ``CellComparison.gated``)."""
    found = []
    for comparison in comparisons:
        for cell in comparison.cells:
            if cell.verdict != Verdict.WORSE or cell.difference is None or not cell.gated:
                continue
            if abs(cell.difference.change_pct) >= threshold_pct:
                found.append(Regression(comparison, cell))
    return found


def tested_cells(comparisons: Sequence[PointComparison]) -> int:
    """How many cells a regression gate tests: every comparable cell with a change whose interval holds at the
    error rate it claims (``CellComparison.gated``)."""
    return sum(1 for c in comparisons if c.comparable for cell in c.cells
               if cell.difference is not None and cell.gated)


def ungated_cells(comparisons: Sequence[PointComparison]) -> int:
    """Comparable cells with a change that a regression gate leaves out (``StoppingRule.NOT_COVERED``)."""
    return sum(1 for c in comparisons if c.comparable for cell in c.cells
               if cell.difference is not None and cell.stopping_rule == StoppingRule.NOT_COVERED)


def blocked_settings(*selectors: Selector) -> list[str]:
    """The Ceph settings the selectors name that need a cluster per value (so their sides cannot alternate)."""
    named = {k for selector in selectors for k, _ in selector.pairs}
    return sorted(named & CLUSTER_SETTINGS)


def design_note(baseline: Selector, candidate: Selector, *, bring_up: str = "once") -> str | None:
    """For two sides that differ in a Ceph setting that needs a cluster per value, how they ran (by
    `lab.ceph.bring_up`): brought up ``once``, each side ran on its own cluster at its own time, so the interval
    is about those two clusters, not about the setting (a warning); ``side_by_side``, time drift cancels but each
    side is still one cluster instance; ``each_repetition``, the instance is sampled."""
    named = blocked_settings(baseline, candidate)
    if not named:
        return None
    names = ", ".join(named)
    if bring_up == "each_repetition":
        return (f"design: blocked on {names}, a fresh cluster per value and round in the order A B B A: each pair is "
                "one instance of each side, so the interval covers the cluster instance too")
    if bring_up == "side_by_side":
        return (f"design: {names} on clusters side by side, repetitions A B B A: time drift cancels, but each side "
                "is one cluster instance (PG placement, primaries): read the interval as about these two clusters")
    return (f"design: blocked on {names} (one cluster per value, brought up once): the setting is "
            "confounded with the cluster instance and with time; read the interval as about these two clusters")


def _look_alpha(plan: SequentialPlan, rounds: int, alpha: float) -> float:
    """The error rate of the sequential rule's look after ``rounds`` (the last look's when beyond ``max``), with
    the rule's overall error rate scaled as ``alpha`` is to 5 % (a gate's share per cell). The looks are calibrated
    again at that rate: their chance of calling no change different at some look does not shrink in proportion to
    each look's error rate (the looks are correlated), so dividing the calibrated looks' rates would overshoot."""
    if not math.isclose(alpha, 1 - CONFIDENCE):
        plan = replace(plan, alpha=plan.alpha * alpha / (1 - CONFIDENCE))
    return plan.look_alpha(min(max(rounds, plan.min_rounds), plan.max_rounds))
