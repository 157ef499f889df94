"""A plan's cases in time (pure): the run order, the lab designs a run follows, preconditions, and the estimate of what
a run takes.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from storbench.case_ids import case_id_for
from storbench.config import (
    PlanConfig,
)
from storbench.errors import UserError
from storbench.fio.barrier import barrier_lead_s
from storbench.fio.layout import has_fill_section
from storbench.lab.ceph_conf import osd_options
from storbench.model import (
    NFS_METADATA_ENGINE,
    SIDE_BY_SIDE_SETTINGS,
    Case,
    Precondition,
    ScheduledRepetition,
    WorkloadPoint,
    cluster_of,
    interleaved_setting,
    is_metadata,
    is_size_based,
    is_volume_operation,
    rw_writes,
)
from storbench.working_set import working_set_bytes

# Estimated fixed cost of one fio invocation (start, layout check, JSON) used for the ETA.
FIO_STARTUP_S = 0.6
# Conservative layout speed for creating test files, used for the ETA only.
LAYOUT_BYTES_PER_S = 300 * 1024 * 1024
# Bringing a lab configuration up and down (measured: 10-20 s for 3 OSDs, about 1 s for NFS), and the
# speed at which new RBD images and NFS files are written before measuring, for the ETA.
LAB_SECONDS = {"ceph": 20.0, "nfs": 2.0}
# Applying OSD options to a running cluster: set, restart the OSDs, wait for active+clean (measured: about 15 s).
OSD_RESTART_S = 20.0
LAB_LAYOUT_BYTES_PER_S = 150 * 1024 * 1024
T = TypeVar("T")


def live_settings_together(cases: Sequence[Case]) -> list[Case]:
    """The cases reordered (stably) so that those with the same live OSD options are next to each other: within
    a round each option set then needs one OSD restart, not one per workload."""


    first: dict[object, int] = {}
    keys = [osd_options(case.lab.ceph) if case.lab.ceph is not None else () for case in cases]
    for key in keys:
        first.setdefault(key, len(first))
    return [case for _, case in sorted(zip(keys, cases, strict=True), key=lambda item: first[item[0]])]


def _option_blocks(cases: Sequence[Case]) -> list[list[Case]]:
    """``live_settings_together``'s order cut where the live OSD options change: the cases one restart serves."""
    blocks: list[list[Case]] = []
    last: object = None
    for case in live_settings_together(cases):
        key = osd_options(case.lab.ceph) if case.lab.ceph is not None else ()
        if not blocks or key != last:
            blocks.append([])
        blocks[-1].append(case)
        last = key
    return blocks


def _rotated(items: Sequence[T], by: int) -> list[T]:
    by %= len(items)
    return [*items[by:], *items[:by]]


def interleaved_round(cases: Sequence[Case], rep: int) -> list[Case]:
    """Round ``rep`` of the interleaved order: rounds in mirrored pairs, P_k then P_k reversed (k = rep // 2), so
    every case's positions in a pair of rounds add up alike and linear drift cancels pair by pair; P_k turns the
    cases (the option blocks first, then the cases within them), so the case that ends one round and begins the
    next, running right after itself, is each case in turn, and so is each block's first case after an OSD restart,
    meeting a cold cache (over 2 x cases rounds each case gets each handicap equally often, when the blocks hold as
    many cases each). Two cases keep A B B A."""
    return _round(_option_blocks(cases), rep)


def round_order(items: Sequence[T], rep: int) -> list[T]:
    """Round ``rep`` of items with no live settings between them (one block), as `interleaved_round` orders them:
    what the simulations in bench/ run."""
    return _round([list(items)], rep)


def _round(blocks: Sequence[Sequence[T]], rep: int) -> list[T]:
    """`interleaved_round` of the option blocks (`_option_blocks`, worked out once per order); of any blocks of
    items alike (the lab groups, each a block of one, take turns so)."""
    if not blocks:
        return []
    k = rep // 2 if sum(len(block) for block in blocks) >= 3 else 0
    turned = _rotated(blocks, k % len(blocks))
    ordered = [item for block in turned for item in _rotated(block, k // len(blocks))]
    return ordered if rep % 2 == 0 else ordered[::-1]


def grouped(cases: Sequence[Case], key: Callable[[Case], object]) -> list[list[Case]]:
    """``cases`` grouped by ``key``, groups in order of their first case, the cases' order kept within each."""
    groups: dict[object, list[Case]] = {}
    for case in cases:
        groups.setdefault(key(case), []).append(case)
    return list(groups.values())


def schedule(cases: Sequence[Case], repeat: int, order: str, seed: int,
             group: Callable[[Case], object] = lambda case: None) -> list[ScheduledRepetition]:
    """The order repetitions run in.

    interleaved: every case once per round, rounds in mirrored pairs (`interleaved_round`: A B C, C B A, then the
    cases turned: B C A, A C B, ...), so slow drift and "the second run is slower" effects spread evenly over the
    cases, and so do carry-over at a round's ends and the cold cache after an OSD restart; cases whose live OSD
    options differ are grouped within a round (``live_settings_together``). Cases on different labs (``group``:
    `demands.lab_group_key`, the cases that share a running cluster) are interleaved each group on its own, so the
    balance holds on every cluster, and the groups take turns the same way (a fresh cluster per round: A B B A).
    sequential: each case's repetitions back to back. shuffled: a random order from ``seed``.
    """
    if order == "sequential":
        return [ScheduledRepetition(case, rep) for case in cases for rep in range(repeat)]
    if order == "interleaved":
        blocks = [_option_blocks(members) for members in grouped(cases, group)]
        out: list[ScheduledRepetition] = []
        for rep in range(repeat):
            for index in _round([[i] for i in range(len(blocks))], rep):
                out.extend(ScheduledRepetition(case, rep) for case in _round(blocks[index], rep))
        return out
    if order == "shuffled":
        items = [ScheduledRepetition(case, rep) for rep in range(repeat) for case in cases]
        random.Random(seed).shuffle(items)
        return items
    raise ValueError(f"unknown order {order!r}")


@dataclass(frozen=True)
class PlanEstimate:
    cases: int
    repetitions: int
    seconds: float
    layout_bytes: int
    destructive_cases: int
    lab_designs: tuple[str, ...] = ()  # how each swept lab setting is run, for people
    metadata_cases: int = 0  # file operations (create, stat, delete): size based, each file once


def size_refusal(estimate: PlanEstimate, max_runs: int, max_hours: float) -> str | None:
    """Why a plan is too large to run without the user raising the limits, or None."""
    if estimate.repetitions > max_runs:
        return (f"the plan has {estimate.repetitions:,} fio runs ({estimate.cases:,} cases), more than "
                f"--max-runs {max_runs:,}")
    if estimate.seconds > max_hours * 3600:
        return f"the plan would take about {estimate.seconds / 3600:,.1f} h, more than --max-hours {max_hours:g}"
    return None


# how a setting's values take their turns on one cluster (or the same hosts) by the plan's order, and what that
# order means for it: `plan` had said "interleaved ... A B B A" whatever the order
SHARED = {"interleaved": ("interleaved", ", repetitions A B B A"),
          "shuffled": ("in random order", "; order: shuffled"),
          "sequential": ("blocked in time", "; order: sequential runs each value's repetitions together, so the "
                                            "setting is confounded with time")}


def lab_designs(cases: Sequence[Case], *, bring_up: str = "once", rounds: int = 0,
                order: str = "interleaved") -> tuple[str, ...]:
    """How each swept Ceph setting is run: on one cluster, its values taking turns as the plan's ``order`` has
    them (A B B A when interleaved; `plan` had said so whatever the order), or, for settings that need a cluster
    per value, by `lab.ceph.bring_up`: brought up once (which confounds the setting with the cluster instance and
    with time), a fresh cluster per value and round, A B B A (``rounds`` of them: bring-ups per arm), or the
    clusters side by side with their repetitions alternating (time cancels, the instance does not)."""
    how, turns = SHARED.get(order, SHARED["interleaved"])
    cluster = f"{how} on one cluster"
    values: dict[str, set[object]] = {}
    for case in cases:
        if case.lab.ceph is not None:
            for name, value in case.lab.ceph.settings():
                values.setdefault(name, set()).add(value)
    if len(values.get("osds_per_device", ())) > 1:  # the OSD count and size follow from it: not axes of their own
        values.pop("osds", None)
        values.pop("osd_size", None)
    lines = []
    delays = {case.lab.k8s.out_of_service_after_s for case in cases if case.lab.k8s is not None}
    if len(delays) > 1:
        lines.append(f"out_of_service_after: {cluster} (the taint's delay after a node fails"
                     f"{turns.replace(', r', '; r')})")
    links = {case.lab.link_bits_per_s for case in cases}
    if len(links) > 1:
        lines.append(f"link: {how} (each client host's link shaped with traffic control before each value's "
                     f"turn{turns})")
    for name, seen in values.items():
        if len(seen) < 2:
            continue
        if name in SIDE_BY_SIDE_SETTINGS:
            lines.append(f"{name}: {cluster} (a pool per value{turns})")
        elif name == "osd_cpuset":
            lines.append(f"{name}: {cluster} (a cpuset per OSD, changed live without a restart before each "
                         f"value's turn{turns})")
        elif name == "osd_cpus":
            lines.append(f"{name}: {cluster} (a cgroup CPU quota per OSD, changed live without a restart "
                         f"before each value's turn{turns})")
        elif interleaved_setting(name):
            lines.append(f"{name}: {cluster} (applied with `ceph config set` and an OSD restart before each "
                         f"value's turn{turns})")
        elif bring_up == "side_by_side":
            lines.append(f"{name}: clusters side by side, one per value, up at once on their own ports, repetitions "
                         "A B B A (time drift cancels; each value is still one cluster instance)")
        elif bring_up == "each_repetition":
            per_arm = f"{rounds} bring-ups per arm" if rounds else "a bring-up per arm and round"
            lines.append(f"{name}: blocked, a fresh cluster per value and round, A B B A ({per_arm}): the cluster "
                         "instance is sampled, repetitions paired round by round")
        else:
            lines.append(f"{name}: blocked, one cluster per value brought up once (the setting is confounded "
                         "with the cluster instance and with time)")
    if "db_device" in values:
        lines.append("db_device: fast is emulated: BlueStore's RocksDB and WAL on tmpfs (memory), the one-machine "
                     "stand-in for an Optane or NVMe DB device")
    return tuple(lines)


# Size-based file and object operations (a rough, conservative rate per job, for the ETA only): their runtime is
# only a cap, and a 60 s cap on a 2 s job made estimates twenty times too long.
ESTIMATE_OPS_PER_JOB_S = 500.0


ESTIMATE_VOLUME_OPERATION_S = 10.0  # a Kubernetes volume operation with what it needs made first (for the ETA)


def repetition_seconds(case: Case) -> float:
    """A repetition's time for the ETA: its fio's, and a pod's start budget (a pvc target's pods start first) or,
    on fio servers, the start barrier's lead (its first allowance: 9 s for 100 servers); and an NFS export's clear after
    deletes its runtime cut (`clear_seconds`)."""
    if is_volume_operation(case.workload.rw):  # no fio pods to start: the operation's own time
        return fio_seconds(case)
    budget = getattr(case.target, "start_budget_s", None)  # pods: they start at a common moment, no barrier
    if budget is not None:
        return fio_seconds(case) + float(budget)
    return (fio_seconds(case) + (barrier_lead_s(case.clients, None) if case.clients >= 2 else 0.0)
            + clear_seconds(case))


def clear_seconds(case: Case) -> float:
    """Deletes on an NFS export through storbench's engine (`rw: delete`, the metadata cycle) whose runtime cuts
    them leave files, deleted by name after every repetition (`targets.nfs.clear_after`): a job over every name,
    at the conservative rate (for the ETA only)."""
    w = case.workload
    if w.ioengine != NFS_METADATA_ENGINE or w.rw not in ("delete", "metadata") or w.files is None:
        return 0.0
    every_file_s = w.files / ESTIMATE_OPS_PER_JOB_S
    return every_file_s + FIO_STARTUP_S if w.runtime_s < every_file_s else 0.0


def fio_seconds(case: Case) -> float:
    """A repetition's own time, without its pods' start budget (the Kubernetes executor adds it to its timeout),
    with fio's `startdelay` at its longest (the jobs wait it out; the watchdog counts it too)."""
    w = case.workload
    if is_volume_operation(w.rw):  # runtime is only the time an operation may take
        return min(w.runtime_s, ESTIMATE_VOLUME_OPERATION_S)
    if is_size_based(w.rw) and w.files is not None:
        per_s = w.files / ESTIMATE_OPS_PER_JOB_S
        if has_fill_section(case):  # a fill no runtime caps (an NFS stat or delete's creates, a delete's PUTs)
            return per_s + min(w.runtime_s, per_s) + FIO_STARTUP_S + w.start_delay_s[1]
        measured_s = min(w.runtime_s, per_s)  # each phase its own section, each capped by the runtime
        # the metadata cycle's three phases one after another; a delete's files laid out by fio first, every
        # repetition (the delete removed them), with no runtime to cap it (a stat's stay from its first repetition)
        operations_s = (3 * measured_s if w.rw == "metadata" else per_s + measured_s if w.rw == "delete"
                        else measured_s)
        return operations_s + FIO_STARTUP_S + w.start_delay_s[1]
    put_s = w.files / ESTIMATE_OPS_PER_JOB_S if w.rw in ("get", "getput") and w.files is not None else 0.0
    return w.ramp_s + w.runtime_s + put_s + FIO_STARTUP_S + w.start_delay_s[1]  # a GET after its unmeasured PUT


# A fill is size based; its runtime only caps it.
FILL_RUNTIME_CAP_S = 24 * 3600.0


def preconditions(config: PlanConfig) -> dict[str, Precondition]:
    """Target name -> its `precondition`, typed."""
    found = {}
    for name, target in config.targets.items():
        pre = getattr(target, "precondition", None)
        if pre is not None:
            found[name] = Precondition(rw=pre.pattern, bs_bytes=pre.bs_bytes, iodepth=pre.iodepth, passes=pre.fill,
                                       duration_s=pre.duration)
    return found


def precondition_case(pre: Precondition, cases: Sequence[Case]) -> Case:
    """The job a precondition runs, as a case on the target of ``cases`` (one target, one lab configuration):
    with their largest numjobs, clients, size and nrfiles, so every test file and image they measure on is
    written; one job on an image or a device (each job would write all of it)."""
    first = cases[0]
    blocks = [c for c in cases if not is_metadata(c.workload.rw)]  # metadata cases use fio's file engines
    w = blocks[0].workload if blocks else None
    sizes = [c.workload.size_bytes for c in cases if c.workload.size_bytes is not None]
    nrfiles = [int(n) for c in cases for k, n in c.workload.fio_options if k == "nrfiles"]
    whole = first.target.kind in ("rbd", "block")
    workload = WorkloadPoint(rw=pre.rw, bs_bytes=pre.bs_bytes, iodepth=pre.iodepth,
                             numjobs=1 if whole else max(c.workload.numjobs for c in cases),
                             runtime_s=pre.duration_s if pre.duration_s is not None else FILL_RUNTIME_CAP_S,
                             ramp_s=0.0, direct=w.direct if w else True, ioengine=w.ioengine if w else "libaio",
                             size_bytes=max(sizes, default=None),
                             fio_options=(("nrfiles", str(max(nrfiles))),) if nrfiles else ())
    # where the cases write (`offset`, `offset_increment`): the precondition writes there too, not from byte 0
    regions = {tuple((k, v) for k, v in c.workload.fio_options if k in ("offset", "offset_increment")) for c in cases}
    if len(regions) > 1:
        raise UserError(f"target '{first.target.name}': its cases write at different offsets "
                        f"({'; '.join(' '.join(f'{k}={v}' for k, v in r) or 'from 0' for r in sorted(regions))}), "
                        "and a precondition writes one region before them",
                        hint="give the target's cases one offset, or drop its precondition")
    region = next(iter(regions))
    if whole and any(k == "offset_increment" for k, _ in region) and max(c.workload.numjobs for c in cases) > 1:
        raise UserError(f"target '{first.target.name}': its cases' jobs each write their own region "
                        "(offset_increment), and a precondition on an image or a device runs one job over one region",
                        hint="drop offset_increment, or the target's precondition")
    workload = replace(workload, fio_options=tuple(sorted((*workload.fio_options, *region))))
    clients = max(c.clients for c in cases)
    return Case(case_id=case_id_for(first.target, workload, clients, first.lab), target=first.target,
                workload=workload, clients=clients, lab=first.lab)


def precondition_jobs(wanted: Mapping[str, Precondition], cases: Sequence[Case]) -> list[Case]:
    """The precondition job of each target with a `precondition` (``wanted``), one per lab configuration its
    cases run on (each pool or cluster holds its own image or files): what the write guards must see."""
    found = []
    for name, pre in wanted.items():
        mine = [c for c in cases if c.target.name == name]
        for lab in dict.fromkeys(c.lab for c in mine):
            found.append(precondition_case(pre, [c for c in mine if c.lab == lab]))
    return found


def precondition_seconds(pre: Precondition, case: Case, device_bytes: int | None = None) -> float | None:
    """How long a precondition takes: its time, or its fill at the conservative layout speed (ETA only); a
    fill of a raw device needs the device's size (``device_bytes``), else None (unknown)."""
    if pre.duration_s is not None:
        return pre.duration_s
    volume = working_set_bytes(case) or (case.workload.size_bytes or case.target.size_bytes or device_bytes or 0)
    if not volume:
        return None
    return FIO_STARTUP_S + (pre.passes or 1) * volume / LAYOUT_BYTES_PER_S  # fio's size spans all nrfiles


def _restarts(cases: Sequence[Case], repeat: int, order: str, seed: int) -> int:
    """How often the OSDs restart for their live options over ``repeat`` rounds of ``cases`` in the run's
    ``order`` (the interleaved one had been counted whatever the order: 14 restarts for a sequential run's 3)."""
    if not cases:
        return 0
    keys = [osd_options(item.case.lab.ceph) for item in schedule(cases, repeat, order, seed)
            if item.case.lab.ceph is not None]
    return sum(1 for a, b in itertools.pairwise(keys) if a != b)


def preconditions_seconds(config: PlanConfig, cases: Sequence[Case], repeat: int, *, bring_up: str = "once"
                          ) -> float:
    """The preconditions' time for the ETA: each target's on each lab configuration, once per bring-up (a fresh
    cluster per round with `each_repetition`); a fill of a raw device of unknown size counts nothing."""
    wanted = preconditions(config)
    total = 0.0
    # once per target on a cluster (and pool, for rbd), as the run writes them: one per lab point had counted a
    # 10 min fill three times for a sweep of osd_recovery_sleep on one cluster
    once: dict[tuple[object, ...], Case] = {}
    for job in precondition_jobs(wanted, cases):
        lab = job.lab
        pool = lab.ceph.pool_size if lab.ceph is not None and job.target.kind == "rbd" else 0
        once.setdefault((job.target.name, cluster_of(lab), pool), job)
    for job in once.values():
        seconds = precondition_seconds(wanted[job.target.name], job)
        if seconds is not None:
            total += seconds * (repeat if bring_up == "each_repetition" and job.lab.ceph is not None else 1)
    return total


def estimate(cases: Sequence[Case], repeat: int, *, bring_up: str = "once", preconditions_s: float = 0.0,
             order: str = "interleaved", seed: int = 0) -> PlanEstimate:
    """Duration and data volume before anything runs (``preconditions_s``: `preconditions_seconds`).

    Files are laid out once per target (fio reuses them), so layout cost is the largest working set per
    target. Writes during measurement are time based; their volume depends on the storage's speed.
    """


    largest: dict[str, int] = {}
    for case in cases:
        largest[case.target.name] = max(largest.get(case.target.name, 0), working_set_bytes(case))
    layout = sum(largest.values())
    seconds = sum(repetition_seconds(case) for case in cases) * repeat + layout / LAYOUT_BYTES_PER_S + preconditions_s
    clusters = {cluster_of(case.lab) for case in cases if case.lab}  # each brought up once (or once per round)
    for cluster in clusters:
        bring_ups = repeat if bring_up == "each_repetition" and cluster.ceph is not None else 1
        seconds += sum(LAB_SECONDS.get(kind, 0.0) for kind in cluster.kinds()) * bring_ups
        # an RBD image per pool (one pool per pool_size on a cluster), NFS files once
        laid_out = {(c.target, c.lab.ceph.pool_size if c.lab.ceph and c.target.kind == "rbd" else 0)
                    for c in cases if cluster_of(c.lab) == cluster and c.target.kind in ("rbd", "nfs")}
        seconds += sum((t.size_bytes or 0) for t, _ in laid_out) / LAB_LAYOUT_BYTES_PER_S * bring_ups
        # live settings: a restart at each change of the OSDs' options in the run's order
        seconds += _restarts([c for c in cases if cluster_of(c.lab) == cluster and c.lab.ceph is not None],
                             repeat, order, seed) * OSD_RESTART_S
    return PlanEstimate(
        cases=len(cases),
        repetitions=len(cases) * repeat,
        seconds=seconds,
        layout_bytes=layout,
        destructive_cases=sum(1 for c in cases if c.target.kind == "block" and rw_writes(c.workload.rw)),
        lab_designs=lab_designs(cases, bring_up=bring_up, rounds=repeat, order=order),
        metadata_cases=sum(1 for c in cases if is_metadata(c.workload.rw)),
    )


# ---- what a plan needs of the machine -------------------------------------------------------------------------
# Pure arithmetic over the cases: checks.check_resources (and targets.local for inodes) compare it with what the
# machine has, so `plan` refuses before anything starts.
