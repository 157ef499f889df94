"""How the two sides of a comparison ran (`DESIGNS`: paired, interleaved, a fresh instance per round, one instance
per side, blocked, shuffled, two runs, paired by run (interleaved or blocked inside the runs), runs apart;
`design_of`), what a design that confounds the setting
means for its verdicts (`DESIGN_CAVEATS`, with the A/A rates bench/instance_design.py measured), and the note for
two sides that differ in a setting that needs a cluster per value (`design_note`)."""

from __future__ import annotations

from collections.abc import Mapping

from storbench.stats.compare_cells import PointComparison
from storbench.stats.selectors import Selector, blocked_settings

# How the two sides of a comparison ran (said under every comparison, `report.compare_tables.design_lines`), and whether
# that design separates the setting from everything else.
DESIGNS = {
    "paired": "both sides in one run, repetitions alternating (A B B A); intervals from the pairs: time drift "
              "cancels",
    "interleaved": "both sides in one run of alternating order, their repetitions in one stretch of time, but fewer "
                   "than two of their rounds ran together (repetitions run again ran apart): unpaired (Welch) "
                   "intervals",
    "fresh instance per round": "a fresh cluster per side and round (A B B A); intervals from the pairs: the "
                                "instance is sampled, its variation inside the interval",
    "one instance per side": "each side ran on one cluster instance: the setting is confounded with the instance",
    "blocked": "one run, all of one side before the other: the setting is confounded with time (drift reads as a "
               "change)",
    "shuffled": "one run, its repetitions in random order: drift widens the interval but favours neither side "
                "(unpaired Welch intervals)",
    "two runs": "separate runs (before/after): the change is confounded with everything else that changed between "
                "them (time, the host's state, the instance where it differs)",
    "paired by run": "both sides in each of several runs: each run's two means are one pair (what differs from run "
                     "to run cancels); n is runs",
    "paired by run, blocked": "both sides in each of several runs, but one side measured before the other inside a "
                              "run (order: sequential, a search's or steady state's points): each run's two means "
                              "are one pair, n is runs, and drift inside a run reads as a change in every pair alike",
    "paired by run, labs apart": "both sides in each of several runs, but each side on a lab of its own brought up "
                                 "in turn inside a run (all of one side, then the other): each run's two means are "
                                 "one pair, n is runs, and drift inside a run reads as a change in every pair alike",
    "runs apart": "each side over several runs of its own: each run's mean is one sample, n is runs (a side of one "
                  "run has no interval)",
}
CONFOUNDED = frozenset({"one instance per side", "blocked", "two runs", "runs apart", "paired by run, blocked",
                        "paired by run, labs apart"})
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
                             "instance per round does, 5 %; storbench docs methodology comparisons); read a verdict "
                             "as about these two instances, not the setting",
    "blocked": "read a verdict as about these two stretches of time, not the setting alone (order: interleaved "
               "alternates the sides)",
    "two runs": f"read a verdict as about these runs, not the change alone; where they ran on different instances, "
                f"{AA_RATE})",
    "runs apart": "the runs' own spread is in the interval, but whatever else changed between the two sets of runs "
                  "(a kernel, the instance) still reads as the change",
    "paired by run, blocked": "read a verdict as about the order inside the runs as well as the setting (order: "
                              "interleaved alternates the sides in each run)",
    "paired by run, labs apart": "read a verdict as about the order inside the runs as well as the setting (a Ceph "
                                 "setting alternates cluster by cluster with lab.ceph.bring_up: each_repetition)",
}


def design_of(comparison: PointComparison, interleaved_runs: frozenset[int], blocked: bool,
              bring_ups: Mapping[int, str], shuffled_runs: frozenset[int] = frozenset(), *, apart: bool = False) -> str:
    """The design of one comparison (a key of DESIGNS); ``apart``: one side's repetitions all ran before the
    other's began."""
    runs = {*comparison.baseline.run_ids, *comparison.candidate.run_ids}
    if comparison.per_run:  # each run's mean one sample (`stats.compare_runs`): paired where the sides share runs
        paired = any(cell.difference is not None and cell.difference.method == "paired by run"
                     for cell in comparison.cells)
        if not paired:
            return "runs apart"
        # each run's pair cancels what differs from run to run, not what one order inside every run adds: labs
        # brought up in turn inside each run (a cluster per value brought up once, a volume per cap) are in one order
        # whatever the run's (it had read "paired by run" with no caveat)
        if blocked and not all(bring_ups.get(run, "once") in ("each_repetition", "side_by_side") for run in runs):
            return "paired by run, labs apart"
        return "paired by run" if runs <= interleaved_runs | shuffled_runs else "paired by run, blocked"
    if len(runs) != 1:
        return "two runs"
    (run,) = runs
    if blocked:  # a cluster per value: side by side or brought up once, each side is one instance
        fresh = bring_ups.get(run, "once") == "each_repetition"
        return "fresh instance per round" if fresh else "one instance per side"
    if run not in interleaved_runs:
        return "shuffled" if run in shuffled_runs else "blocked"
    paired = any(cell.difference is not None and cell.difference.method in ("paired", "sequential")
                 for cell in comparison.cells)
    # a point a resume added ran after all the others: in an alternating run, but blocked against them in time
    return "paired" if paired else "blocked" if apart else "interleaved"


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
