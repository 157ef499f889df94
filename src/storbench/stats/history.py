"""A point's figures run by run, the steps in them (change points), and the last run judged against its level
(pure). docs/methodology.md#history-and-change-points says why each rule is what it is, with its simulated error
rates.

The sample unit across runs is the run: repetitions inside one run share its instance, its hour and its machine
state, so the level's noise is the spread of the runs' means. A run's own repetitions still bound that noise from
below (a few runs that happen to agree closely do not make a step inside one run's spread significant).

A point across runs is its target, workload, clients and direction: lab settings, labels and versions are not part
of it, they are what may have changed at a step, and each change point names them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from storbench.case_ids import target_identity
from storbench.model import Case, RunInfo
from storbench.stats.estimate import t_quantile
from storbench.stats.metric_values import metric_value
from storbench.stats.metrics import BIN_RESOLUTION, QUANTISED_FIELDS
from storbench.stats.observations import Observation
from storbench.stats.special import t_sf

ALPHA = 0.01  # a change point's p-value, Bonferroni over the splits it was chosen among
MIN_HOST_RUNS = 3  # a machine's runs of a point are a history of their own from this many (each machine's)
MIN_SEGMENT_RUNS = 2  # a level is at least two runs: one run alone is not a level
CONFIDENCE = 0.95  # the step's interval, and the last run's prediction interval


@dataclass(frozen=True)
class RunContext:
    """What a run says of itself besides its figures: a user's labels (`run --label`) and what storbench recorded.
    Compared run to run, it names what else changed at a step."""

    run_id: int
    started_at_s: float
    labels: tuple[tuple[str, str], ...]
    recorded: tuple[tuple[str, str], ...]  # storbench, fio, kernel, host, lab software and the case's lab settings

    def items(self) -> dict[str, str]:
        return {**{f"label {k}": v for k, v in self.labels}, **dict(self.recorded)}

    @property
    def host(self) -> str:
        return dict(self.recorded).get("host", "")


def run_context(run: RunInfo) -> RunContext:
    """What a stored run recorded of itself: its labels, storbench's and fio's versions, the kernel, the host and its
    labs' software (Ceph, nfs-ganesha)."""
    return RunContext(run.run_id, run.started_at_s, run.labels,
                      (("storbench", run.storbench_version), ("fio", run.fio_version), ("kernel", run.kernel),
                       ("host", run.host), *run.software))


@dataclass(frozen=True)
class RunLevel:
    """One run's repetitions of a point and metric."""

    context: RunContext
    values: tuple[float, ...]
    # the level its own interval is shown at (a run repeated `until: ci`: its rule's, which covers 95 % after such a
    # stop), and whether its values are a steady window's rounds (chosen for their small spread: no interval)
    confidence: float = 0.95
    window_only: bool = False

    @property
    def mean(self) -> float:
        return statistics.fmean(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def within_variance_of_mean(self) -> float | None:
        """The variance of this run's mean from its own repetitions (s² / n); None below two."""
        return statistics.variance(self.values) / len(self.values) if len(self.values) >= 2 else None


@dataclass(frozen=True)
class ChangePoint:
    """A step: the level from ``at`` (the first run of the new level) differs from the level before it."""

    at: int  # index into the series
    run_id: int
    before_mean: float
    after_mean: float
    change_pct: float | None  # None: from a level of 0, where no percent change exists
    change_ci_pct: tuple[float, float] | None  # the change's 95 % interval, relative to the level before
    p_value: float  # Bonferroni-adjusted over the splits considered, when it was found
    what_changed: tuple[str, ...]  # "label build: a1 -> b2", "lab volume iops: 2000 -> 1000", "kernel: ..."
    found_with: int = 0  # how many runs the series had when it was found (its size and interval use every run)


@dataclass(frozen=True)
class LastRunCheck:
    """The newest run against the level since the last change point: its mean and the prediction interval of one
    more run at that level."""

    run_id: int
    mean: float
    level_mean: float
    level_runs: int
    low: float
    high: float
    change_pct: float | None  # None: against a level of 0

    def below(self, higher_is_better: bool) -> bool:
        """Worse than any run at that level would be 95 % of the time."""
        return self.mean < self.low if higher_is_better else self.mean > self.high


@dataclass(frozen=True)
class PointHistory:
    case: Case  # the first run's case of the point (its lab settings are that run's)
    direction: str
    metric: str
    runs: tuple[RunLevel, ...]
    changes: tuple[ChangePoint, ...]
    last: LastRunCheck | None
    swept: tuple[tuple[str, str], ...] = ()  # lab settings a run swept: part of the point (`swept_lab_settings`)
    host: str | None = None  # the machine whose runs these are, when kept apart from other machines' (else None)
    hosts: int = 1  # how many machines' runs it holds (several: pooled, too few runs on some to keep apart)
    among: int = 1  # the histories of its table its change points' ALPHA is shared among (Bonferroni)


def history_key(case: Case, direction: str) -> tuple[object, ...]:
    """A point across runs: everything of the case but its lab settings (and its id, which includes them). The
    target as a case's identity takes it (`case_ids.target_identity`: its name, kind, path or device, size, ...;
    not a pod's security level or start budget): two of one name (two imports both "imported", of /dev/a and
    /dev/b; a path changed between runs) are two histories, where their runs' values had been pooled as one."""
    return (tuple(sorted(target_identity(case.target).items())), case.workload, case.clients, direction)


def swept_lab_settings(observations: Sequence[Observation]) -> dict[tuple[object, ...], frozenset[str]]:
    """For each point across runs, the lab settings some run swept (two values inside one run, as a pool_size
    axis): those stay part of the point, each value its own history; the others may change only between runs."""
    seen: dict[tuple[tuple[object, ...], int], dict[str, set[str]]] = {}
    for o in observations:
        if o.direction is not None:
            values = seen.setdefault((history_key(o.case, o.direction.value), o.run_id), {})
            for name, value in o.case.lab.pairs():
                values.setdefault(name, set()).add(value)
    swept: dict[tuple[object, ...], set[str]] = {}
    for (key, _run), values in seen.items():
        swept.setdefault(key, set()).update(name for name, found in values.items() if len(found) > 1)
    return {key: frozenset(names) for key, names in swept.items()}


def _noise_variance(levels: Sequence[RunLevel], segments: Sequence[tuple[int, int]]) -> tuple[float, int]:
    """The variance of one run's mean: the runs' means around their segments' means (pooled, df = runs -
    segments), never below the mean of the runs' own s² / n. (variance, df)."""
    residual = 0.0
    for start, end in segments:
        means = [levels[i].mean for i in range(start, end)]
        centre = statistics.fmean(means)
        residual += sum((m - centre) ** 2 for m in means)
    df = sum(end - start for start, end in segments) - len(segments)
    between = residual / df if df > 0 else 0.0
    within = [w for level in levels if (w := level.within_variance_of_mean) is not None]
    return max(between, statistics.fmean(within) if within else 0.0), df


def _best_split(levels: Sequence[RunLevel], start: int, end: int, quantised: bool = False
                ) -> tuple[int, float] | None:
    """The split of runs [start, end) into two levels of at least MIN_SEGMENT_RUNS with the largest pooled t, and
    its two-sided p-value times the number of splits considered; None when no split is possible. Running sums make
    each split O(1). ``quantised``: a percentile read from histogram bins, whose runs without spread sit in one
    bin each: a step between bins is below its resolution, not a change shown."""
    candidates = range(start + MIN_SEGMENT_RUNS, end - MIN_SEGMENT_RUNS + 1)
    if not candidates:
        return None
    means = [level.mean for level in levels[start:end]]
    within = [w for level in levels[start:end] if (w := level.within_variance_of_mean) is not None]
    floor = statistics.fmean(within) if within else 0.0
    total, total_sq = sum(means), sum(m * m for m in means)
    count = len(means)
    scale = max(abs(m) for m in means) or 1.0
    left_sum = left_sq = 0.0
    best: tuple[int, float] | None = None
    for i, mean in enumerate(means[:-MIN_SEGMENT_RUNS], start=1):
        left_sum += mean
        left_sq += mean * mean
        if i < MIN_SEGMENT_RUNS:
            continue
        right_n = count - i
        right_sum, right_sq = total - left_sum, total_sq - left_sq
        residual = (left_sq - left_sum ** 2 / i) + (right_sq - right_sum ** 2 / right_n)
        df = count - 2
        variance = max(residual / df, floor)
        step = right_sum / right_n - left_sum / i
        if quantised and within_a_bin(left_sum / i, right_sum / right_n):
            continue  # a percentile's step within a bin is its resolution, whatever a stray repetition's spread
        if variance <= (1e-12 * scale) ** 2:  # runs that repeat exactly (a cap held to the I/O): any real step is
            # beyond their noise; what is left of rounding in the sums is none; a percentile's runs each in one bin:
            # a step to the next bin is its resolution, a step of more bins a change
            if abs(step) <= 1e-9 * scale:
                continue
            p = 0.0
        else:
            t = step / math.sqrt(variance * (1 / i + 1 / right_n))
            p = min(1.0, 2 * t_sf(abs(t), df) * len(candidates))
        if best is None or p < best[1]:
            best = (start + i, p)
    return best


def within_a_bin(a: float, b: float) -> bool:
    """Whether two values of a percentile read from fio's bins are at most a bin apart (its resolution)."""
    return abs(a - b) <= BIN_RESOLUTION * max(abs(a), abs(b)) * (1 + 1e-9)


def _segments(levels: Sequence[RunLevel], alpha: float, quantised: bool = False) -> list[tuple[int, float, int]]:
    """The change points, found run by run as a nightly job adds runs: after each run, the runs since the last
    change point are split where the step is most significant, when it is significant (p times the splits tried
    <= ``alpha``), and the runs after a split found are searched again at once. A change point once found keeps its
    place (later runs refine its size and interval, not where it is), so the change points of the first k runs are
    always those of the whole series found by run k: deterministic and incremental. (split, p when found, runs
    there were then)."""
    found: list[tuple[int, float, int]] = []
    start = 0
    for end in range(2 * MIN_SEGMENT_RUNS, len(levels) + 1):
        while end - start >= 2 * MIN_SEGMENT_RUNS:
            best = _best_split(levels, start, end, quantised)
            if best is None or best[1] > alpha:
                break
            found.append((*best, end))
            start = best[0]
    return found


def _what_changed(before: RunContext, after: RunContext) -> tuple[str, ...]:
    old, new = before.items(), after.items()
    return tuple(f"{name}: {old.get(name, '-')} -> {new.get(name, '-')}" for name in sorted({*old, *new})
                 if old.get(name) != new.get(name))


def change_points(levels: Sequence[RunLevel], alpha: float = ALPHA, *, quantised: bool = False
                  ) -> tuple[ChangePoint, ...]:
    """The steps in a point's series of runs, each with its size, interval and what else changed at that run.
    Deterministic and incremental (for one ``alpha``): a run added can add a change point after the last one,
    never move or remove one (`_segments`); sizes and intervals use every run of the levels on either side."""
    segments = {split: (p, found_with) for split, p, found_with in _segments(levels, alpha, quantised)}
    splits = sorted(segments)
    bounds = [0, *splits, len(levels)]
    changes = []
    for i, split in enumerate(splits):
        before, after = levels[bounds[i]:split], levels[split:bounds[i + 2]]
        variance, df = _noise_variance([*before, *after], [(0, len(before)), (len(before), len(before) + len(after))])
        before_mean = statistics.fmean(level.mean for level in before)
        after_mean = statistics.fmean(level.mean for level in after)
        quantile = t_quantile(CONFIDENCE, df)
        if before_mean > 0 and after_mean > 0:  # the ratio's interval, on the log scale (the delta method, as
            # `estimate.ratio_interval`): never below -100 % (the level before is an estimate too, not exact)
            log_half = quantile * math.sqrt(variance * (1 / (len(before) * before_mean ** 2)
                                                        + 1 / (len(after) * after_mean ** 2)))
            if quantised:  # each level's percentile is known to a bin: the step to the two bins' widths
                log_half = max(log_half, 2 * BIN_RESOLUTION)
            ratio = after_mean / before_mean
            interval = (100.0 * (ratio * math.exp(-log_half) - 1), 100.0 * (ratio * math.exp(log_half) - 1))
        elif before_mean > 0:  # to a level of 0 (a blackout gone): the difference's interval, cut at -100 %
            half = quantile * math.sqrt(variance * (1 / len(before) + 1 / len(after)))
            step = 100.0 * (after_mean - before_mean) / before_mean
            interval = (max(-100.0, step - 100.0 * half / before_mean), step + 100.0 * half / before_mean)
        else:
            interval = None  # from a level of 0: no percent
        changes.append(ChangePoint(
            at=split, run_id=levels[split].context.run_id, before_mean=before_mean, after_mean=after_mean,
            change_pct=100.0 * (after_mean - before_mean) / before_mean if before_mean else None,
            change_ci_pct=interval,
            p_value=segments[split][0], what_changed=_what_changed(levels[split - 1].context, levels[split].context),
            found_with=segments[split][1]))
    return tuple(changes)


def last_run_check(levels: Sequence[RunLevel], confidence: float = CONFIDENCE,
                   alpha: float = ALPHA, *, quantised: bool = False) -> LastRunCheck | None:
    """The newest run against the level before it: the runs since the last change point found among the runs
    before it (the newest run left out, so it cannot make its own level), at least MIN_SEGMENT_RUNS of them; the
    prediction interval (at ``confidence``, two-sided) of one more run's mean at that level. None with too few."""
    if len(levels) < MIN_SEGMENT_RUNS + 1:
        return None
    start = max((c.at for c in change_points(levels[:-1], alpha, quantised=quantised)), default=0)
    level = levels[start:-1]
    if len(level) < MIN_SEGMENT_RUNS:
        return None
    variance, df = _noise_variance(level, [(0, len(level))])
    if df < 1:
        return None
    level_mean = statistics.fmean(run.mean for run in level)
    last = levels[-1]
    if quantised and variance == 0:  # a percentile in one bin every run: one more run there is within a bin of it
        half = BIN_RESOLUTION * abs(level_mean)
        return LastRunCheck(run_id=last.context.run_id, mean=last.mean, level_mean=level_mean,
                            level_runs=len(level), low=level_mean - half, high=level_mean + half,
                            change_pct=100.0 * (last.mean - level_mean) / level_mean if level_mean else None)
    # one more run's mean: the level's noise of a run (its own repetitions' share included) plus the level's error,
    # and what the newest run's fewer repetitions add (its own mean is noisier than the level's runs' were)
    spreads = [statistics.variance(run.values) for run in level if len(run.values) >= 2]
    within = statistics.fmean(spreads) if spreads else 0.0
    typical = len(level) / sum(1 / len(run.values) for run in level)  # the level's runs' repetitions (harmonic)
    fewer = within * max(0.0, 1 / len(last.values) - 1 / typical)
    half = t_quantile(confidence, df) * math.sqrt(variance * (1 + 1 / len(level)) + fewer)
    if quantised:  # a percentile is known to a bin: never narrower than one (a spread from one stray repetition)
        half = max(half, BIN_RESOLUTION * abs(level_mean))
    return LastRunCheck(run_id=last.context.run_id, mean=last.mean, level_mean=level_mean, level_runs=len(level),
                        low=level_mean - half, high=level_mean + half,
                        change_pct=100.0 * (last.mean - level_mean) / level_mean if level_mean else None)


def new_step(history: PointHistory) -> ChangePoint | None:
    """The change point found with the newest run (not there without it), if any: a regression the newest-run
    check no longer sees once its level is two runs, or a small step that took more runs to show."""
    return next((c for c in history.changes if c.found_with == len(history.runs)), None)


def point_histories(observations: Sequence[Observation], contexts: Mapping[int, RunContext],
                    metrics: Sequence[str], alpha: float = ALPHA, last_confidence: float = CONFIDENCE,
                    pool_hosts: bool = False, levels_of_runs: Mapping[int, float] | None = None
                    ) -> list[PointHistory]:
    """Every point's history for each metric, over the runs that measured it (in run order), with its change
    points and its last run judged. ``alpha`` is the table's: each history's change points are searched at
    ``alpha`` / the number of histories (Bonferroni), so that a table of 40 points and metrics without a step shows
    a change point about as seldom as one history does (at 1 % each, 89 % of such tables over 20 nights showed
    one). A run's value is its successful repetitions' (all clients merged); ``levels_of_runs``: the runs whose own
    intervals are shown at another level than 95 % (`stats.run_questions.interval_levels`). Runs of
    different machines (merged stores) are different instances: a point measured by several machines, each with
    at least MIN_HOST_RUNS runs of it, is a history per machine; the runs of machines with fewer (CI runners named
    anew each night, a machine new to the point), or all with ``pool_hosts``, are one history, where a change of
    machine is one more thing that may change at a step."""
    by_point: dict[tuple[object, ...], dict[int, list[Observation]]] = {}
    cases: dict[tuple[object, ...], tuple[Case, str]] = {}
    measured = [o for o in observations if not o.client and o.direction is not None and o.measurement is not None]
    swept = swept_lab_settings(measured)

    def point_of(o: Observation) -> tuple[object, ...]:
        assert o.direction is not None
        point = history_key(o.case, o.direction.value)
        return (*point, tuple(pair for pair in o.case.lab.pairs() if pair[0] in swept[point]))

    points = [(o, point_of(o)) for o in measured]
    hosts: dict[tuple[object, ...], dict[str, set[int]]] = {}
    for o, point in points:
        hosts.setdefault(point, {}).setdefault(contexts[o.run_id].host, set()).add(o.run_id)
    # each machine with MIN_HOST_RUNS runs of the point a history of its own; the others' runs (a runner named
    # anew each night, a machine new to it) one history together: one run elsewhere does not merge the machines'
    apart = {(point, host) for point, runs in hosts.items() for host, ids in runs.items()
             if not pool_hosts and len(runs) > 1 and len(ids) >= MIN_HOST_RUNS}
    for o, point in points:
        assert o.direction is not None
        host = contexts[o.run_id].host
        key = (*point[:-1], host if (point, host) in apart else None, point[-1])
        by_point.setdefault(key, {}).setdefault(o.run_id, []).append(o)
        cases.setdefault(key, (o.case, o.direction.value))
    series: list[tuple[tuple[object, ...], str, list[RunLevel]]] = []
    for key, runs in by_point.items():
        for metric in metrics:
            levels = []
            for run_id in sorted(runs, key=lambda r: (contexts[r].started_at_s, r)):
                values = tuple(float(v) for o in runs[run_id] if (v := metric_value(o, metric)) is not None)
                if values:
                    lab = tuple((f"lab {name}", value) for name, value in runs[run_id][0].case.lab.pairs()
                                if name != "lab")
                    base = contexts[run_id]
                    levels.append(RunLevel(RunContext(base.run_id, base.started_at_s, base.labels,
                                                      (*base.recorded, *lab)), values,
                                           (levels_of_runs or {}).get(run_id, CONFIDENCE),
                                           any(o.window_only for o in runs[run_id])))
            if levels:
                series.append((key, metric, levels))
    histories = []
    share = alpha / max(1, len(series))  # the table's alpha, shared among its histories
    for key, metric, levels in series:
        case, direction = cases[key]
        changes = change_points(levels, share, quantised=metric in QUANTISED_FIELDS)
        swept_pairs = key[-1]
        assert isinstance(swept_pairs, tuple)
        series_host = key[-2]
        assert series_host is None or isinstance(series_host, str)
        last = last_run_check(levels, last_confidence, share, quantised=metric in QUANTISED_FIELDS)
        histories.append(PointHistory(case, direction, metric, tuple(levels), changes, last, swept_pairs,
                                      series_host, len({level.context.host for level in levels}), len(series)))
    return histories
