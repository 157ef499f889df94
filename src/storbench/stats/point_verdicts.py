"""A point's bottleneck verdict read further than its own figures: where its time went, by layer
(`with_time_split`), and what the sweeps it lies on show (`with_sweep_verdicts`): capped beyond this host along a
curve, or, for a point one reading leaves open (under-driven, not saturated), whether more load raised IOPS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from storbench.fio.allowlist import RATE_OPTIONS, SYNC_ENGINES
from storbench.stats.bottleneck import (
    NOT_SATURATED_UNTOLD,
    UNDER_DRIVEN_SYNC_UNTOLD,
    UNDER_DRIVEN_UNTOLD,
    Bottleneck,
    BottleneckVerdict,
    CurveStep,
    judge_curve,
)
from storbench.stats.compare_cells import cost_level
from storbench.stats.cost import COMPONENTS, KERNEL
from storbench.stats.curve import BLOCK_SIZE, LOAD_AXES, Axis, CurveKey, axis_value, outstanding_ios
from storbench.stats.estimate import CONFIDENCE, Estimate, welch_difference
from storbench.stats.layers import client_daemon
from storbench.stats.point_summary import PointSummary
from storbench.stats.trend import FLAT_MARGIN, Trend, changes_above, judge_change, round_pairs, what_would_tell
from storbench.units import format_block_size


def with_time_split(verdict: BottleneckVerdict, estimates: Mapping[str, Estimate], layer: str,
                    unseparated: str = "") -> BottleneckVerdict:
    """The verdict with where the point's time went, by layer (`stats.layers`), when the storage reported its own
    latency for the I/O: the verdict says what limited the point, this says in which layer its latency was; or,
    when the storage's counters were read but are not this I/O's (``unseparated``), why the time is not split."""
    storage, client = estimates.get("storage_lat_ns"), estimates.get("lat_mean_ns")
    if (storage is None or not layer) and unseparated:
        return replace(verdict, evidence=f"{verdict.evidence}; by layer: not split ({unseparated})")
    if storage is None or client is None or client.mean <= 0 or not layer:
        return verdict
    if storage.n < client.n:  # the two means over other repetitions: a cache answered some, or no counters
        whose = "the OSDs'" if layer == "OSDs" else f"the {layer}'s"
        return replace(verdict, evidence=f"{verdict.evidence}; by layer: not split ({whose} latency known in "
                       f"{storage.n} of {client.n} repetitions)")
    share = min(storage.mean / client.mean, 1.0)
    split = (f"; by layer: the {layer} answered in {storage.mean / 1e6:.2f} ms of the {client.mean / 1e6:.2f} ms "
             f"mean ({share:.0%}), {1 - share:.0%} outside the {layer} (client stack, network)")
    return replace(verdict, evidence=verdict.evidence + split)


def _step(point: PointSummary, load: float, label: str, field: str) -> CurveStep | None:
    throughput, latency = point.metric(field), point.metric("lat_mean_ns")
    if throughput is None:
        return None
    storage = point.metric("storage_lat_ns")
    if storage is not None and latency is not None and storage.n < latency.n:
        storage = None  # known in some repetitions only: set against the mean of all of them it splits nothing
    return CurveStep(load=load, label=label, throughput=throughput, lat_mean_ns=latency.mean if latency else None,
                     verdict=point.bottleneck, storage_lat_ns=storage.mean if storage else None,
                     storage_layer=point.storage_layer, client_daemon=client_daemon(point.process_cpu_cores),
                     storage_lat_high_ns=storage.ci_high if storage and storage.ci_high is not None else None,
                     lat_mean_low_ns=latency.ci_low if latency and latency.ci_low is not None else None)


def _remote_evidence(points: Sequence[PointSummary], members: Sequence[int]) -> str:
    """What the storage nodes' own telemetry says along a curve (lowest to highest load), for a capped verdict:
    their CPU and disks (Prometheus). (The storage's own latency for the I/O is read from the curve's steps.)"""
    def ends(field: str) -> tuple[float, float] | None:
        first, last = points[members[0]].metric(field), points[members[-1]].metric(field)
        return (first.mean, last.mean) if first is not None and last is not None else None

    parts = []
    for field, what in (("node_cpu_busy_pct", "node CPU"), ("node_disk_util_pct", "node disks")):
        both = ends(field)
        if both is not None:
            parts.append(f"{what} {both[0]:.0f} % to {both[1]:.0f} % busy")
    return "; ".join(parts)


def _self_limited(point: PointSummary) -> bool:
    """Whether fio was told to hold back (a rate limit or think time): then its throughput says nothing about
    the storage's limit."""
    return any(name in RATE_OPTIONS for name, _ in point.case.workload.fio_options)


def with_sweep_verdicts(points: Sequence[PointSummary]) -> list[PointSummary]:
    """The points with the verdicts their sweeps give (``bottleneck.judge_curve``): along each load curve
    (iodepth, numjobs, clients; load = outstanding I/Os) on IOPS, and along each block-size curve on bandwidth.
    A point the sweep shows capped beyond this host gets that verdict instead of under-driven / not saturated."""
    out = list(points)
    curves: list[tuple[list[int], Axis, str]] = []  # (indexes sorted by load, axis, what)
    for axis in (*LOAD_AXES, BLOCK_SIZE):
        groups: dict[CurveKey, list[int]] = {}
        for i, point in enumerate(points):
            groups.setdefault(point.curve_key(axis, pool_runs=False), []).append(i)
        for members in groups.values():
            if len({axis_value(points[i].case, axis) for i in members}) >= 2:
                curves.append((sorted(members, key=lambda i: axis_value(points[i].case, axis)), axis,
                               "MiB/s" if axis == BLOCK_SIZE else "IOPS"))
    for members, axis, what in curves:
        if any(_self_limited(points[i]) for i in members):
            continue  # fio itself holds the rate: a flat curve is the plan's own limit, not the storage's
        if axis == "iodepth" and any(points[i].case.workload.ioengine in SYNC_ENGINES for i in members):
            continue  # a sync engine's iodepth keeps no more I/Os in flight: along it the load never changed
        steps = []
        for i in members:
            p = points[i]
            if axis == BLOCK_SIZE:
                step = _step(p, p.bs_bytes, f"bs {format_block_size(p.bs_bytes)}", "bw_bytes_per_s")
            else:
                step = _step(p, outstanding_ios(p.case), f"{axis} {axis_value(p.case, axis)}", "iops")
            if step is None:
                break
            steps.append(step)
        else:
            expected = points[members[0]].expected
            declared = None
            # a declared limit is of all directions: a direction of a mixed case is not held against it alone
            if expected is not None and not points[members[0]].case_totals:
                declared = expected.bw_bytes_per_s if axis == BLOCK_SIZE else expected.iops
            judged = sweep_verdicts(steps, [out[i].bottleneck for i in members], what, declared,
                                    _remote_evidence(points, members), [points[i].bottleneck for i in members])
            for i, verdict in zip(members, judged, strict=True):
                if verdict.kind == Bottleneck.CAPPED and axis != BLOCK_SIZE:
                    verdict = _cap_refuted(points, i, axis) or verdict
                out[i] = replace(out[i], bottleneck=verdict)
            first = points[members[0]]
            since = (f"bs {format_block_size(first.bs_bytes)}" if axis == BLOCK_SIZE
                     else f"{axis} {axis_value(first.case, axis)}")
            for i in members[1:]:
                grew = cost_growth(first, points[i], since) if out[i].bottleneck.kind == Bottleneck.CPU else ""
                if grew:
                    verdict = out[i].bottleneck
                    out[i] = replace(out[i], bottleneck=replace(verdict, evidence=f"{verdict.evidence}; {grew}"))
    return out


def _loads_text(point: PointSummary) -> str:
    w = point.case.workload
    return f"iodepth {w.iodepth}, numjobs {w.numjobs}" + (f", {point.case.clients} clients" if point.case.clients > 1
                                                           else "")


def _cap_refuted(points: Sequence[PointSummary], i: int, axis: Axis) -> BottleneckVerdict | None:
    """A point capped along one load axis whose IOPS another load of the same case (more jobs or clients at any
    depth: everything but the three loads the same, in the same runs) is shown to raise (`judge_change`, rising):
    the flat curve is a limit per job or per client, not one beyond this host. That verdict, or None."""
    point = points[i]

    def loads_apart(p: PointSummary) -> object:
        return replace(p.curve_key("iodepth", pool_runs=False), numjobs=None, clients=None)

    family = loads_apart(point)
    here = point.metric("iops")
    if here is None:
        return None

    def streams(p: PointSummary) -> int:  # the jobs submitting I/O, over every client
        return p.case.workload.numjobs * p.case.clients

    others = [(other, there) for other in points
              if other is not point and (there := other.metric("iops")) is not None
              and loads_apart(other) == family and streams(other) > streams(point)]
    w = point.case.workload
    # the higher loads of the numjobs and of the clients curve through this point
    on_jobs = [o for o, _ in others if (o.case.workload.iodepth, o.case.clients) == (w.iodepth, point.case.clients)]
    on_clients = [o for o, _ in others if (o.case.workload.iodepth, o.case.workload.numjobs) == (w.iodepth, w.numjobs)]

    def among(other: PointSummary) -> int:
        """The loads a rise over ``other`` is one of: those of the numjobs or clients curve through this point when
        ``other`` is on it (as the knee and the sweep reading of that curve count them, so that they and this check
        never disagree), else every other load (a rise over any of them)."""
        return next((len(curve) for curve in (on_jobs, on_clients) if any(o is other for o in curve)), len(others))

    for other, there in others:
        # paired where the two alternated; a rise over any of the others: the 5 % shared among them
        change = judge_change(here, there, round_pairs(here, there), among(other))
        if change.trend is Trend.RISING:
            return BottleneckVerdict(Bottleneck.UNDER_DRIVEN, (
                f"IOPS flat along {axis} ({_loads_text(point)}), yet {_loads_text(other)} gave {change.text()}: the "
                "flat curve is a limit per job or per client, not beyond this host; more jobs or clients, not more "
                "of it, raise IOPS"))
    return None


def cost_growth(first: PointSummary, point: PointSummary, since: str) -> str:
    """Which component's CPU per I/O grew from the curve's first point to ``point`` (a CPU-bound one), with the
    change's interval: of those whose interval lies above zero (at a 5 % error rate shared over the components
    compared: Bonferroni), the one that grew by the most µs; '' when none is shown to have grown."""
    pairs = [(component, b, c) for component in (*COMPONENTS, KERNEL)
             if (b := first.metric(f"{component.key}_cpu_us_per_io")) is not None
             and (c := point.metric(f"{component.key}_cpu_us_per_io")) is not None and b.mean > 0]
    if not pairs:
        return ""
    level = cost_level(CONFIDENCE, len(pairs))
    grown = [(c.mean - b.mean, component, b, c, difference) for component, b, c in pairs
             if (difference := welch_difference(b, c, level)).change_ci_low_pct is not None
             and difference.change_ci_low_pct > 0]
    if not grown:
        return ""
    _, component, b, c, d = max(grown, key=lambda g: g[0])
    return (f"{component.label}'s CPU per I/O grew {b.mean:,.{1 if b.mean < 100 else 0}f} -> "
            f"{c.mean:,.{1 if c.mean < 100 else 0}f} µs since {since} "
            f"({d.change_pct:+.0f} % [{d.change_ci_low_pct:+.0f}, {d.change_ci_high_pct:+.0f}])")


def left_untold(verdict: BottleneckVerdict) -> str | None:
    """What a point's verdict leaves for a sweep to tell (under-driven, not saturated), None if nothing."""
    for untold in (UNDER_DRIVEN_UNTOLD, UNDER_DRIVEN_SYNC_UNTOLD):
        if verdict.kind == Bottleneck.UNDER_DRIVEN and untold in verdict.evidence:
            return untold
    if verdict.kind == Bottleneck.NOT_SATURATED and NOT_SATURATED_UNTOLD in verdict.evidence:
        return NOT_SATURATED_UNTOLD
    return None


def sweep_reading(steps: Sequence[CurveStep], k: int) -> str | None:
    """What a load sweep shows about more load at its point ``k`` (``steps`` in increasing load). The point is
    judged against every higher load by `stats.trend.judge_change` (paired where the points alternated), as the
    knee and the capped verdict judge a curve (`stats.trend.plateau`), so that no section says otherwise:

    - some higher load is shown to raise IOPS over it: "more load raises IOPS: <the lowest such load> gave ...";
    - every higher load is shown flat or falling against it: "... gave the same IOPS within +-10 % ...: the limit is
      elsewhere";
    - otherwise undecided: the first change that could not be told, and what would tell it.

    At the highest load, the change from the load below it, by the same words (when it still rose, a deeper sweep
    would tell where it stops). None: a single point (the sweep tells nothing more)."""
    here = steps[k]
    if k + 1 < len(steps):
        changes = [(steps[j], change) for j, change in changes_above([s.throughput for s in steps], k)]
        rising = next(((there, change) for there, change in changes if change.trend is Trend.RISING), None)
        if rising is not None:
            return f"more load raises IOPS: {rising[0].label} gave {rising[1].text()}"
        pending = next(((there, change) for there, change in changes if not change.stopped), None)
        if pending is not None:
            there, change = pending
            return (f"more load may raise IOPS: {there.label} gave {change.text()}, which cannot tell yet "
                    f"({what_would_tell(change, here.throughput, there.throughput)})")
        there, change = max(changes, key=lambda item: item[1].ratio)  # the most any higher load gave
        if len(changes) > 1:
            return (f"yet no higher load gave more IOPS (the most, {there.label}: {change.text()}; each shown within "
                    f"+-{FLAT_MARGIN:.0%} or lower): the limit is elsewhere")
        fewer = "fewer IOPS" if change.trend is Trend.FALLING else f"the same IOPS within +-{FLAT_MARGIN:.0%}"
        return f"yet {there.label} gave {fewer} ({change.text()}): the limit is elsewhere"
    if k == 0:
        return None
    below = steps[k - 1]
    change = judge_change(below.throughput, here.throughput, round_pairs(below.throughput, here.throughput))
    if change.trend is Trend.RISING:
        return (f"more load may raise IOPS: it still rose into {here.label} ({change.text()} from {below.label}); "
                "a deeper sweep, or search:, would tell where it stops")
    if change.stopped:
        fewer = "fewer IOPS than" if change.trend is Trend.FALLING else f"the same IOPS within +-{FLAT_MARGIN:.0%} as"
        return f"yet it gave {fewer} {below.label} ({change.text()}): the limit is elsewhere"
    return (f"more load may raise IOPS: it gave {change.text()} over {below.label}, which cannot tell yet "
            f"({what_would_tell(change, below.throughput, here.throughput)})")


def under_driven_readings(steps: Sequence[CurveStep], verdicts: Sequence[BottleneckVerdict],
                          before: Sequence[BottleneckVerdict] | None = None) -> list[str | None]:
    """Each point on a load sweep whose verdict left open whether more load raises IOPS (under-driven, not
    saturated: "one point cannot show it") says what the sweep shows instead (``sweep_reading``): its evidence
    with that in place of what one point cannot show. A point another curve through it read as "the limit is
    elsewhere" (``before``: its verdicts before any curve read them) takes this curve's reading where that one is
    not: a rise on any curve wins (more jobs shown to raise IOPS, where iodepth did not). None: keep."""
    out: list[str | None] = [None] * len(steps)
    for k, verdict in enumerate(verdicts):
        untold = left_untold(verdict)
        first = before[k] if before is not None else verdict
        first_untold = left_untold(first)
        if untold is None and (first_untold is None or first.kind is not verdict.kind
                               or not (ELSEWHERE in verdict.evidence or UNTOLD_YET in verdict.evidence)):
            continue  # read by no curve yet is above; one shown rising, or read otherwise (a refuted cap), stays
        reading = sweep_reading(steps, k)
        if reading is None:
            continue
        if untold is not None:
            out[k] = verdict.evidence.replace(untold, reading)
        elif first_untold is not None and ((ELSEWHERE in verdict.evidence and ELSEWHERE not in reading)
                                           or (UNTOLD_YET in verdict.evidence and reading.startswith(RISES))):
            out[k] = first.evidence.replace(first_untold, reading)  # a rise shown, or a curve not read as elsewhere
    return out


ELSEWHERE = "the limit is elsewhere"  # how a sweep reads a point whose higher loads gave no more IOPS
RISES = "more load raises IOPS"  # how it reads one whose higher load is shown to give more
UNTOLD_YET = "which cannot tell yet"  # and one whose next load's change is not yet told


# Verdicts that name a resource of this host as the point's limit: a load sweep can show otherwise
RESOURCE_LIMITS = frozenset({Bottleneck.CPU, Bottleneck.MEDIA})
BUSY = {Bottleneck.CPU: "CPU", Bottleneck.MEDIA: "device"}


def outraised(steps: Sequence[CurveStep], verdicts: Sequence[BottleneckVerdict]) -> list[BottleneckVerdict | None]:
    """A point called cpu- or media-bound at which a higher load is shown to raise IOPS (`sweep_reading`, the
    knee's judgement) was not at that resource's limit: a busy device still took more I/Os at once, a busy CPU
    still found time for more. It becomes under-driven, its resource figures kept, with the rise that shows it, so
    the point's verdict and the curve say the same. None: keep."""
    out: list[BottleneckVerdict | None] = [None] * len(steps)
    for k, verdict in enumerate(verdicts[:-1]):
        if verdict.kind not in RESOURCE_LIMITS:
            continue
        reading = sweep_reading(steps, k)
        if reading is not None and reading.startswith("more load raises IOPS"):
            busy = BUSY[verdict.kind]
            out[k] = replace(verdict, kind=Bottleneck.UNDER_DRIVEN,
                             evidence=f"{verdict.evidence}, yet {reading}: the busy {busy} was not its limit")
    return out


def sweep_verdicts(steps: Sequence[CurveStep], verdicts: Sequence[BottleneckVerdict], what: str,
                   declared: float | None = None, remote: str = "",
                   before: Sequence[BottleneckVerdict] | None = None) -> list[BottleneckVerdict]:
    """The verdicts of one sweep's points (``steps`` in increasing load; ``verdicts`` what the points hold so far,
    ``what`` "IOPS" along a load curve, "MiB/s" along a block-size one): the curve's capped or client-stack verdict
    where `bottleneck.judge_curve` gives one (a point already capped by another of its curves keeps that), then,
    along a load curve, what the sweep shows at each point left open (``under_driven_readings``), and a resource
    limit that a higher load is shown to out-raise made under-driven (``outraised``)."""
    out = list(verdicts)
    for i, verdict in enumerate(judge_curve(steps, what, declared, remote)):
        if verdict is not None and out[i].kind not in (Bottleneck.CAPPED, Bottleneck.CLIENT_STACK):
            out[i] = verdict
    if what == "IOPS":
        for i, evidence in enumerate(under_driven_readings(steps, out, before)):
            if evidence is not None:
                out[i] = replace(out[i], evidence=evidence)
        for i, changed in enumerate(outraised(steps, out)):
            if changed is not None:
                out[i] = changed
    return out
