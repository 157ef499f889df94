"""Plan -> cases: the cartesian sweep, exclude rules, stable case ids, run order, ETA. Pure."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import math
import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction

from storbench.config import (
    BlockTargetConfig,
    CephfsTargetConfig,
    FioScalar,
    LoadedPlan,
    NfsTargetConfig,
    PathTargetConfig,
    PlanConfig,
    PvcTargetConfig,
    RbdTargetConfig,
    S3TargetConfig,
    fio_value_text,
)
from storbench.config.values import link_rate_bits
from storbench.errors import UserError, did_you_mean
from storbench.model import (
    CEPH_SETTINGS,
    METADATA_RW,
    MIXED_RW,
    NFS_METADATA_ENGINE,
    NO_LAB,
    OPTIONAL_WORKLOAD_FIELDS,
    SIDE_BY_SIDE_SETTINGS,
    BlockTarget,
    Case,
    CephfsTarget,
    CephLabPoint,
    ImportedTarget,
    LabPoint,
    NfsTarget,
    PathTarget,
    Precondition,
    PvcTarget,
    RbdTarget,
    S3Target,
    ScheduledRepetition,
    TargetSpec,
    VolumeLabPoint,
    WorkloadPoint,
    cluster_of,
    interleaved_setting,
    is_metadata,
    is_object,
    rw_writes,
)
from storbench.model.ceph_options import option_value
from storbench.units import MAX_SIZE_BYTES, format_bytes, parse_duration_s, parse_size_bytes

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


def target_spec(name: str, config: PathTargetConfig | BlockTargetConfig | RbdTargetConfig | NfsTargetConfig
                | PvcTargetConfig | CephfsTargetConfig | S3TargetConfig) -> TargetSpec:
    """A plan's target as the typed target of its kind."""
    if isinstance(config, S3TargetConfig):
        return S3Target(name=name, endpoint=config.endpoint, bucket=config.bucket, region=config.region)
    if isinstance(config, PathTargetConfig):
        return PathTarget(name=name, path=config.path, size_bytes=config.size, expect_fs=config.expect_fs)
    if isinstance(config, NfsTargetConfig):
        return NfsTarget(name=name, url=config.url, size_bytes=config.size)
    if isinstance(config, CephfsTargetConfig):
        return CephfsTarget(name=name, path=config.path, size_bytes=config.size)
    if isinstance(config, PvcTargetConfig):
        return PvcTarget(name=name, size_bytes=config.size, destructive=config.destructive,
                         storage_class=config.storage_class, access_mode=config.access_mode,
                         volume_mode=config.volume_mode, namespace=config.namespace, container_image=config.image,
                         image_pull_policy=config.image_pull_policy,
                         node_selector=tuple(sorted(config.node_selector.items())), start_budget_s=config.start_budget)
    if isinstance(config, RbdTargetConfig):
        return RbdTarget(name=name, size_bytes=config.size, pool=config.pool, image=config.image, client=config.client,
                         conf=config.conf, destructive=config.destructive)
    return BlockTarget(name=name, device=config.device, size_bytes=config.size, destructive=config.destructive)


def target_identity(target: TargetSpec) -> dict[str, object]:
    """What of a target makes a case's identity, in the shape ids have always been computed from: the fields
    of the first release (path, device, size_bytes, destructive; an NFS url and an import's location count as
    its path), and fields added later only when set, so ids of existing cases never change."""
    identity: dict[str, object] = {"name": target.name, "kind": target.kind, "path": None, "device": None,
                                   "size_bytes": target.size_bytes, "destructive": False}
    later: dict[str, object] = {}
    if isinstance(target, PathTarget | CephfsTarget):
        identity["path"] = target.path
        if isinstance(target, PathTarget):
            later = {"expect_fs": target.expect_fs}
    elif isinstance(target, NfsTarget):
        identity["path"] = target.url
    elif isinstance(target, ImportedTarget):
        identity["path"] = target.location
    elif isinstance(target, BlockTarget):
        identity.update(device=target.device, destructive=target.destructive)
    elif isinstance(target, S3Target):
        identity["path"] = target.endpoint
        later = {"bucket": target.bucket, "region": target.region}
    elif isinstance(target, RbdTarget):
        identity["destructive"] = target.destructive
        later = {"pool": target.pool, "image": target.image, "client": target.client, "conf": target.conf}
    else:
        identity["destructive"] = target.destructive
        later = {"storage_class": target.storage_class, "access_mode": target.access_mode,
                 "volume_mode": target.volume_mode, "namespace": target.namespace,
                 "container_image": target.container_image, "image_pull_policy": target.image_pull_policy,
                 "node_selector": target.node_selector, "start_budget_s": target.start_budget_s}
    identity.update({k: v for k, v in later.items() if v not in (None, (), [])})
    return identity


def workload_identity(workload: WorkloadPoint) -> dict[str, object]:
    """The workload's fields as a case id hashes them: fields added later are left out while unset."""
    fields = asdict(workload)
    for name in OPTIONAL_WORKLOAD_FIELDS:
        if fields[name] is None:
            del fields[name]
    return fields


def case_id_for(target: TargetSpec, workload: WorkloadPoint, clients: int = 1, lab: LabPoint = NO_LAB) -> str:
    """A stable id from the case's definition: same definition, same id, on any machine (pinned by
    tests/test_case_ids.py)."""
    canonical = json.dumps(
        {"target": target_identity(target), "workload": workload_identity(workload), "clients": clients,
         "lab": list(lab.pairs())},
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _flag(value: FioScalar) -> bool:
    """true/false as an exclude rule may write it (also 1/0)."""
    if isinstance(value, bool):
        return value
    if value in (0, 1, "0", "1"):
        return str(value) == "1"
    raise ValueError(f"expected true or false, got {value!r}")


@dataclass(frozen=True)
class Axis:
    """One sweep axis: its values as the plan's schema typed them (sizes in bytes, durations in seconds, options
    as fio reads them), and how a value written in an exclude rule is read to compare with them."""
    name: str
    values: tuple[object, ...]
    parse: Callable[[FioScalar], object] = fio_value_text


# How each Ceph lab setting's value is read from an exclude rule (as `config.lab` types its sweep).
_CEPH_SETTING_PARSE: dict[str, Callable[[FioScalar], object]] = {
    "osds": int, "osd_size": parse_size_bytes, "objectstore": str, "pool_size": int, "cache_size": parse_size_bytes,
    "osd_memory_target": parse_size_bytes, "osd_cpus": float, "db_device": str, "osds_per_device": int,
    "osd_cpuset": str}


class SweepPoint:
    """One point of the sweep: each axis's value, read back with its type checked (the schema typed it; a wrong
    type here is a bug, not a plan error)."""

    def __init__(self, values: Mapping[str, object]) -> None:
        self.values = values

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def whole(self, name: str) -> int:
        value = self.values[name]
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _wrong(name, "a whole number", value)

    def number(self, name: str) -> float:
        value = self.values[name]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _wrong(name, "a number", value)

    def text(self, name: str) -> str:
        value = self.values[name]
        if isinstance(value, str):
            return value
        raise _wrong(name, "text", value)

    def flag(self, name: str) -> bool:
        value = self.values[name]
        if isinstance(value, bool):
            return value
        raise _wrong(name, "true or false", value)

    def whole_or_none(self, name: str) -> int | None:
        return self.whole(name) if name in self.values else None

    def option(self, name: str) -> int | str:
        """A Ceph option's value as `model.ceph_options.option_value` normalised it."""
        value = self.values[name]
        if isinstance(value, int | str) and not isinstance(value, bool):
            return value
        raise _wrong(name, "a Ceph option value", value)


def _wrong(name: str, what: str, value: object) -> TypeError:
    return TypeError(f"sweep axis {name}: expected {what}, got {value!r}")


def search_values(config: PlanConfig) -> tuple[int, ...]:
    """The grid a `search` chooses its load values from (empty without one): the cases of every value exist,
    and the run measures those the search asks for."""
    if config.search is None:
        return ()
    from storbench.stats.search import search_grid

    return search_grid(*config.search.range)


def sweep_axes(config: PlanConfig) -> tuple[Axis, ...]:
    """Every sweep axis in expansion order (slowest-changing first)."""
    w = config.workload
    searched = search_values(config)
    axes = [
        Axis("target", tuple(config.targets), str),
        Axis("rw", tuple(w.rw), str),
        Axis("rwmixread", tuple(w.rwmixread), int),
        Axis("bs", tuple(w.bs), parse_size_bytes),
        Axis("iodepth", searched if config.search and config.search.axis == "iodepth" else tuple(w.iodepth), int),
        Axis("numjobs", searched if config.search and config.search.axis == "numjobs" else tuple(w.numjobs), int),
        Axis("runtime", tuple(w.runtime), parse_duration_s),
        Axis("ramp", tuple(w.ramp), parse_duration_s),
        Axis("direct", tuple(w.direct), _flag),
        Axis("ioengine", tuple(w.ioengine), str),
        Axis("files", tuple(w.files), int),
        Axis("file_size", tuple(w.file_size), parse_size_bytes),
        Axis("dirs", tuple(w.dirs), int),
        Axis("objects", tuple(w.objects), int),
    ]
    for name, value in sorted(w.fio.items()):
        values = value if isinstance(value, list) else [value]
        axes.append(Axis(name, tuple(fio_value_text(v) for v in values)))
    axes.append(Axis("clients", searched if config.search and config.search.axis == "clients"
                     else tuple(config.clients), int))
    hosts = config.lab.hosts if config.lab else None
    if hosts is not None and hosts.link is not None:
        axes.append(Axis("link", tuple(hosts.link), link_rate_bits))
    ceph = config.lab.ceph if config.lab else None
    if ceph is not None:
        for name in CEPH_SETTINGS:  # sweep axes that configure the Ceph lab rather than fio
            lab_values = getattr(ceph, name)
            if lab_values is not None:
                axes.append(Axis(name, tuple(lab_values), _CEPH_SETTING_PARSE[name]))
        for name, values in sorted(ceph.config.items()):  # OSD options
            axes.append(Axis(name, tuple(values), functools.partial(option_value, name)))
    return tuple(axes)


def _exclude_rules(loaded: LoadedPlan, axes: Sequence[Axis]) -> list[dict[str, set[object]]]:
    axis_names = {axis.name: axis for axis in axes}
    rules: list[dict[str, set[object]]] = []
    for index, rule in enumerate(loaded.config.exclude):
        if not rule:
            raise UserError("an empty exclude rule would drop every case",
                            where=loaded.source.where(("exclude", index)), hint="name at least one key")
        normalised: dict[str, set[object]] = {}
        for key, value in rule.items():
            where = loaded.source.where(("exclude", index, key))
            if key not in axis_names:
                raise UserError(f"'{key}' is not a sweep parameter of this plan", where=where,
                                hint=did_you_mean(key, list(axis_names)) or "keys: " + ", ".join(axis_names))
            values = value if isinstance(value, list) else [value]
            try:
                wanted = {axis_names[key].parse(v) for v in values}
            except ValueError as exc:
                raise UserError(str(exc), where=where) from None
            unknown = wanted - set(axis_names[key].values)
            if unknown:
                raise UserError(
                    f"{sorted(map(str, unknown))} never occurs in the sweep of '{key}'", where=where,
                    hint="values in the plan: " + ", ".join(map(str, axis_names[key].values)),
                )
            normalised[key] = wanted
        rules.append(normalised)
    return rules


# The most points a plan's sweep may multiply to (before excludes): beyond it storbench refuses to expand it at
# all. `run` has its own, lower limits that the user can raise (--max-runs, --max-hours).
MAX_SWEEP_POINTS = 100_000
MAX_RUNS = 10_000
MAX_HOURS = 24.0


def sweep_points(axes: Sequence[Axis]) -> int:
    """How many points the axes multiply to (before excludes and collapsing)."""
    return math.prod(len(axis.values) for axis in axes)


def expand(loaded: LoadedPlan) -> list[Case]:
    """The plan's cases in a stable order: cartesian product of every axis, minus exclusions.

    ``rwmixread`` only matters for mixed patterns; points that differ only there collapse into one case.
    """
    config = loaded.config
    axes = sweep_axes(config)
    points = sweep_points(axes)
    if points > MAX_SWEEP_POINTS:
        sizes = " x ".join(f"{len(a.values)} {a.name}" for a in axes if len(a.values) > 1)
        raise UserError(f"the sweep multiplies to {points:,} points ({sizes}); storbench expands at most "
                        f"{MAX_SWEEP_POINTS:,}", where=loaded.source.where(("workload",)),
                        hint="sweep fewer values per axis, or split the study into several plans")
    rules = _exclude_rules(loaded, axes)
    cases: list[Case] = []
    seen: set[str] = set()
    matched_rules: set[int] = set()
    names = [axis.name for axis in axes]
    for combination in itertools.product(*(axis.values for axis in axes)):
        values = dict(zip(names, combination, strict=True))
        excluded = False
        for index, rule in enumerate(rules):
            if all(values[key] in wanted for key, wanted in rule.items()):
                matched_rules.add(index)
                excluded = True
        if excluded:
            continue
        case = _case(config, SweepPoint(values))
        _check_size_fits_block(loaded, case)
        if case.case_id not in seen:
            seen.add(case.case_id)
            cases.append(case)
    if not cases:
        raise UserError("the exclude rules remove every case", where=loaded.source.where(("exclude",)),
                        hint="loosen the rules")
    return cases


def _check_size_fits_block(loaded: LoadedPlan, case: Case) -> None:
    size = case.workload.size_bytes
    if size is not None and size < case.workload.bs_bytes:
        key = ("workload", "size") if loaded.config.workload.size is not None else ("targets", case.target.name, "size")
        raise UserError(
            f"size {format_bytes(size)} is smaller than the block size {format_bytes(case.workload.bs_bytes)}",
            where=loaded.source.where(key), hint="make the file at least as large as the largest bs",
        )


def _lab_point(config: PlanConfig, point: SweepPoint) -> LabPoint:
    """The labs of one point of the sweep, typed; the Ceph settings come from the point's lab axes."""
    if config.lab is None:
        return LabPoint()
    ceph = None
    if config.lab.ceph is not None:
        layout = config.lab.ceph
        per_device = point.whole_or_none("osds_per_device")
        if per_device is not None:  # the OSDs follow from the devices: their count and their slice's size
            osds, osd_size = layout.devices * per_device, layout.device_size // per_device
        else:
            osds, osd_size = point.whole("osds"), point.whole("osd_size")
        db_device = point.text("db_device") if "db_device" in point else None
        ceph = CephLabPoint(osds=osds, osd_size_bytes=osd_size, objectstore=point.text("objectstore"),
                            pool_size=point.whole("pool_size"), cache_size_bytes=point.whole_or_none("cache_size"),
                            osd_memory_target_bytes=point.whole_or_none("osd_memory_target"), cephfs=layout.cephfs,
                            rgw=layout.rgw, config=tuple((name, point.option(name)) for name in sorted(layout.config)),
                            osd_cpus=point.number("osd_cpus") if "osd_cpus" in point else None,
                            db_device=db_device, db_size_bytes=layout.db_size if db_device == "fast" else None,
                            osds_per_device=per_device, devices=layout.devices if per_device else None,
                            osd_cpuset=point.text("osd_cpuset") if "osd_cpuset" in point else None,
                            device_size_bytes=layout.device_size if per_device else None)
    volume = None
    if config.lab.volume is not None:
        volume = VolumeLabPoint(size_bytes=config.lab.volume.size, iops=config.lab.volume.iops,
                                bw_bytes_per_s=config.lab.volume.bw)
    hosts = config.lab.hosts
    link = point.whole_or_none("link")
    return LabPoint(ceph=ceph, nfs=config.lab.nfs is not None, volume=volume, link_bits_per_s=link,
                    link_delay_s=hosts.link_delay if hosts is not None and link is not None else None)


def _case(config: PlanConfig, point: SweepPoint) -> Case:
    target_name = point.text("target")
    target = target_spec(target_name, config.targets[target_name])
    rw = point.text("rw")
    fio_options = tuple(sorted((k, point.text(k)) for k in config.workload.fio))
    lab = _lab_point(config, point)
    rwmixread = point.whole("rwmixread") if rw in MIXED_RW else None
    if is_metadata(rw):
        # one operation per file: bs, iodepth, direct, ramp and the engine follow from the operation, so points
        # that differ only there collapse into one case (as rwmixread does for unmixed patterns)
        file_size = point.whole("file_size")
        dirs = point.whole("dirs")
        workload = WorkloadPoint(
            rw=rw, bs_bytes=file_size or 4096, iodepth=1, numjobs=point.whole("numjobs"),
            runtime_s=point.number("runtime"), ramp_s=0.0, direct=False,
            ioengine=NFS_METADATA_ENGINE if target.kind == "nfs" else METADATA_RW[rw][0],
            fio_options=fio_options, files=point.whole("files"), file_size_bytes=file_size,
            dirs=dirs if dirs > 1 else None)
    elif is_object(rw):
        # one whole object of bs per operation through fio's http engine, which runs one request at a time per
        # job: concurrency is numjobs; iodepth and direct do not apply; a delete removes each object once
        workload = WorkloadPoint(
            rw=rw, rwmixread=rwmixread, bs_bytes=point.whole("bs"), iodepth=1, numjobs=point.whole("numjobs"),
            runtime_s=point.number("runtime"), ramp_s=0.0 if rw == "delete_object" else point.number("ramp"),
            direct=False, ioengine="http", fio_options=fio_options, files=point.whole("objects"))
    else:
        # fio's rbd and nfs engines are the only ways to those targets
        ioengine = {"rbd": "rbd", "nfs": "nfs"}.get(target.kind, point.text("ioengine"))
        workload = WorkloadPoint(
            rw=rw,
            rwmixread=rwmixread,
            bs_bytes=point.whole("bs"),
            iodepth=point.whole("iodepth"),
            numjobs=point.whole("numjobs"),
            runtime_s=point.number("runtime"),
            ramp_s=point.number("ramp"),
            direct=point.flag("direct"),
            ioengine=ioengine,
            size_bytes=config.workload.size if config.workload.size is not None else target.size_bytes,
            fio_options=fio_options,
        )
    clients = point.whole("clients")
    return Case(case_id=case_id_for(target, workload, clients, lab=lab), target=target, workload=workload,
                clients=clients, lab=lab)


def live_settings_together(cases: Sequence[Case]) -> list[Case]:
    """The cases reordered (stably) so that those with the same live OSD options are next to each other: within
    a round each option set then needs one OSD restart, not one per workload."""
    from storbench.lab.ceph_conf import osd_options

    first: dict[object, int] = {}
    keys = [osd_options(case.lab.ceph) if case.lab.ceph is not None else () for case in cases]
    for key in keys:
        first.setdefault(key, len(first))
    return [case for _, case in sorted(zip(keys, cases, strict=True), key=lambda item: first[item[0]])]


def schedule(cases: Sequence[Case], repeat: int, order: str, seed: int) -> list[ScheduledRepetition]:
    """The order repetitions run in.

    interleaved: every case once, then every case again in reverse order (A B C C B A A B C ...), so slow
    drift and "the second run is slower" effects spread evenly over the cases instead of biasing one; cases
    whose live OSD options differ are grouped within a round (``live_settings_together``).
    sequential: each case's repetitions back to back. shuffled: a random order from ``seed``.
    """
    if order == "sequential":
        return [ScheduledRepetition(case, rep) for case in cases for rep in range(repeat)]
    if order == "interleaved":
        cases = live_settings_together(cases)
        out: list[ScheduledRepetition] = []
        for rep in range(repeat):
            sweep = cases if rep % 2 == 0 else list(reversed(cases))
            out.extend(ScheduledRepetition(case, rep) for case in sweep)
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


def lab_designs(cases: Sequence[Case], *, bring_up: str = "once", rounds: int = 0) -> tuple[str, ...]:
    """How each swept Ceph setting is run: interleaved on one cluster, or, for settings that need a cluster per
    value, by `lab.ceph.bring_up`: brought up once (which confounds the setting with the cluster instance and
    with time), a fresh cluster per value and round, A B B A (``rounds`` of them: bring-ups per arm), or the
    clusters side by side with their repetitions alternating (time cancels, the instance does not)."""
    values: dict[str, set[object]] = {}
    for case in cases:
        if case.lab.ceph is not None:
            for name, value in case.lab.ceph.settings():
                values.setdefault(name, set()).add(value)
    if len(values.get("osds_per_device", ())) > 1:  # the OSD count and size follow from it: not axes of their own
        values.pop("osds", None)
        values.pop("osd_size", None)
    lines = []
    links = {case.lab.link_bits_per_s for case in cases}
    if len(links) > 1:
        lines.append("link: interleaved (each client host's link shaped with traffic control before each value's "
                     "turn, repetitions A B B A)")
    for name, seen in values.items():
        if len(seen) < 2:
            continue
        if name in SIDE_BY_SIDE_SETTINGS:
            lines.append(f"{name}: interleaved on one cluster (a pool per value, repetitions A B B A)")
        elif name == "osd_cpuset":
            lines.append(f"{name}: interleaved on one cluster (a cpuset per OSD, changed live without a restart "
                         "before each value's turn, repetitions A B B A)")
        elif name == "osd_cpus":
            lines.append(f"{name}: interleaved on one cluster (a cgroup CPU quota per OSD, changed live without a "
                         "restart before each value's turn, repetitions A B B A)")
        elif interleaved_setting(name):
            lines.append(f"{name}: interleaved on one cluster (applied with `ceph config set` and an OSD restart "
                         "before each value's turn, repetitions A B B A)")
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


def repetition_seconds(case: Case) -> float:
    w = case.workload
    if (is_metadata(w.rw) or w.rw == "delete_object") and w.files is not None:
        operations_s = w.files / ESTIMATE_OPS_PER_JOB_S * (1 if w.rw == "create" else 3 if w.rw == "metadata"
                                                            else 2)  # and their fill, or all phases
        return min(w.runtime_s, operations_s) + FIO_STARTUP_S
    if w.rw in ("get", "getput") and w.files is not None:  # a time-based GET after its unmeasured PUT
        return w.ramp_s + w.runtime_s + w.files / ESTIMATE_OPS_PER_JOB_S + FIO_STARTUP_S
    return w.ramp_s + w.runtime_s + FIO_STARTUP_S


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


def working_set_bytes(case: Case) -> int:
    """Bytes written before this case can measure: one file of ``size`` per job and client (files, NFS, pods'
    volumes), one image of ``size`` per client (RBD, written once when created), nothing for a raw device."""
    w = case.workload
    if is_metadata(w.rw):  # stat and delete find their files laid out by fio (create makes them empty)
        return 0 if w.rw == "create" else (w.files or 0) * (w.file_size_bytes or 0) * w.numjobs * case.clients
    if is_object(w.rw):  # get and delete_object PUT their objects first, every repetition (object_fill_section)
        return 0
    size = case.workload.size_bytes or case.target.size_bytes or 0
    if case.target.kind == "block":
        return 0
    if case.target.kind == "rbd":
        return size * case.clients
    return size * case.workload.numjobs * case.clients


def estimate(cases: Sequence[Case], repeat: int, *, bring_up: str = "once") -> PlanEstimate:
    """Duration and data volume before anything runs.

    Files are laid out once per target (fio reuses them), so layout cost is the largest working set per
    target. Writes during measurement are time based; their volume depends on the storage's speed.
    """
    from storbench.lab.ceph_conf import osd_options

    largest: dict[str, int] = {}
    for case in cases:
        largest[case.target.name] = max(largest.get(case.target.name, 0), working_set_bytes(case))
    layout = sum(largest.values())
    seconds = sum(repetition_seconds(case) for case in cases) * repeat + layout / LAYOUT_BYTES_PER_S
    clusters = {cluster_of(case.lab) for case in cases if case.lab}  # each brought up once (or once per round)
    for cluster in clusters:
        bring_ups = repeat if bring_up == "each_repetition" and cluster.ceph is not None else 1
        seconds += sum(LAB_SECONDS.get(kind, 0.0) for kind in cluster.kinds()) * bring_ups
        # an RBD image per pool (one pool per pool_size on a cluster), NFS files once
        laid_out = {(c.target, c.lab.ceph.pool_size if c.lab.ceph and c.target.kind == "rbd" else 0)
                    for c in cases if cluster_of(c.lab) == cluster and c.target.kind in ("rbd", "nfs")}
        seconds += sum((t.size_bytes or 0) for t, _ in laid_out) / LAB_LAYOUT_BYTES_PER_S * bring_ups
        # live settings alternate A B B A: a restart at each change, k - 1 per round
        live = {osd_options(c.lab.ceph) for c in cases if cluster_of(c.lab) == cluster and c.lab.ceph is not None}
        seconds += max(len(live) - 1, 0) * repeat * OSD_RESTART_S
    return PlanEstimate(
        cases=len(cases),
        repetitions=len(cases) * repeat,
        seconds=seconds,
        layout_bytes=layout,
        destructive_cases=sum(1 for c in cases if c.target.kind == "block" and rw_writes(c.workload.rw)),
        lab_designs=lab_designs(cases, bring_up=bring_up, rounds=repeat),
        metadata_cases=sum(1 for c in cases if is_metadata(c.workload.rw)),
    )


# ---- what a plan needs of the machine -------------------------------------------------------------------------
# Pure arithmetic over the cases: checks.check_resources (and targets.local for inodes) compare it with what the
# machine has, so `plan` refuses before anything starts.

MACHINE_SHARE = 0.9  # a plan may use at most this share of the memory, lab disk or inodes available
MON_MGR_BYTES = 1024**3  # a lab cluster's monitor and manager
FAST_DB_EXTRA_BYTES = 64 << 20  # the DB tmpfs's slack (lab.ceph._mount_fast_db)


@dataclass(frozen=True)
class Need:
    """One part of what a plan asks of the machine: ``amount`` (bytes or inodes) because of the plan key ``key``,
    said for people as ``text``, with what to change (``hint``)."""

    key: tuple[str, ...]
    text: str
    amount: int
    hint: str


@dataclass(frozen=True)
class Demand:
    """Everything a plan needs of one resource at the same time (one lab configuration, its largest case)."""

    resource: str  # "memory", "disk in the lab directory"
    needs: tuple[Need, ...]

    @property
    def total(self) -> int:
        return sum(need.amount for need in self.needs)

    @property
    def largest(self) -> Need:
        return max(self.needs, key=lambda need: need.amount)


def over_share(demand: Demand, available: int, where: str) -> str | None:
    """Why ``demand`` does not fit in MACHINE_SHARE of ``available`` (``where``: what holds it), or None."""
    limit = int(available * MACHINE_SHARE)
    if demand.total <= limit:
        return None
    parts = " + ".join(need.text for need in demand.needs if need.amount)
    return (f"needs {format_bytes(demand.total)} of {demand.resource}: {parts}; {where} has "
            f"{format_bytes(available)} available and a plan may use {MACHINE_SHARE:.0%} of it "
            f"({format_bytes(limit)})")


def lab_group_key(lab: LabPoint, bring_up: str) -> object:
    """Which labs are up at the same time: each cluster on its own (brought up once, or once per round), or with
    `bring_up: side_by_side` every Ceph cluster of the plan at once."""
    cluster = cluster_of(lab)
    return ("side by side", cluster.nfs) if bring_up == "side_by_side" and cluster.ceph is not None else cluster


def _lab_groups(config: PlanConfig, cases: Sequence[Case]) -> list[list[Case]]:
    bring_up = config.lab.ceph.bring_up if config.lab and config.lab.ceph else "once"
    groups: dict[object, list[Case]] = {}
    for case in cases:
        groups.setdefault(lab_group_key(case.lab, bring_up), []).append(case)
    return list(groups.values())


def _times(count: int, what: str, each: int) -> str:
    return f"{what} {count} x {format_bytes(each)}"


def osd_memory_bytes(point: CephLabPoint) -> int:
    """What one OSD daemon of ``point`` may hold: its memory target, or its BlueStore cache when that is larger
    (both as the point sets them, `lab.ceph.config` included)."""
    from storbench.lab.ceph_conf import osd_options

    options = dict(osd_options(point))
    return max(int(options.get("osd_memory_target", "0")), int(options.get("bluestore_cache_size", "0")))


def cluster_memory_needs(cluster_cases: Sequence[Case]) -> list[Need]:
    """The memory of one Ceph cluster while ``cluster_cases`` (its cases) run: each OSD daemon at the largest
    memory target its cases set, a memstore OSD's data (held in RAM), the DB devices on tmpfs, the monitor and
    manager."""
    points = [c.lab.ceph for c in cluster_cases if c.lab.ceph is not None]
    point = points[0]
    osds = point.osds
    needs = [Need(("lab", "ceph", "osds"), _times(osds, "OSD daemons", max(map(osd_memory_bytes, points))),
                  osds * max(map(osd_memory_bytes, points)), "lower osds, osd_memory_target or cache_size"),
             Need(("lab", "ceph"), f"monitor and manager {format_bytes(MON_MGR_BYTES)}", MON_MGR_BYTES, "")]
    if point.objectstore == "memstore":
        needs.append(Need(("lab", "ceph", "osd_size"), _times(osds, "memstore OSDs (in RAM)", point.osd_size_bytes),
                          osds * point.osd_size_bytes, "lower osd_size or osds, or use objectstore: bluestore "
                          "(sparse files on disk)"))
    if point.db_device == "fast" and point.db_size_bytes is not None:
        needs.append(Need(("lab", "ceph", "db_size"), _times(osds, "DB devices on tmpfs", point.db_size_bytes),
                          osds * point.db_size_bytes + FAST_DB_EXTRA_BYTES,
                          "lower db_size or osds, or use db_device: none"))
    return needs


def _fio_block_sizes(name: str, value: str) -> list[str]:
    """The block sizes written in a `workload.fio` bssplit (``4k/60:64k/40,1m/``: SIZE/PERCENT pairs per direction)
    or bsrange (``4k-64k,1m-2m``: MIN-MAX per direction) value. Pure."""
    sizes: list[str] = []
    for direction in value.split(","):
        if name == "bssplit":
            sizes += [pair.split("/", 1)[0] for pair in direction.split(":")]
        else:
            sizes += direction.split("-")
    return [size for size in sizes if size]


_FIO_SIZE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?)([kmgtpKMGTP]?)")


def _fio_size_ceil_bytes(text: str) -> int:
    """A size as fio reads it (a unit letter a power of 1024), rounded up to whole bytes; one that cannot be read
    counts as the largest there is. Pure."""
    match = _FIO_SIZE_RE.match(text)
    if match is None:
        return MAX_SIZE_BYTES
    power = " kmgtp".index(match[2].lower() or " ")
    return min(MAX_SIZE_BYTES, math.ceil(Fraction(match[1]) * Fraction(1024) ** power))


def largest_block(case: Case) -> tuple[tuple[str, ...], str, int]:
    """The largest block size fio could use for a case (the size of each buffer it allocates): ``bs``, or a size in
    `workload.fio`'s bssplit or bsrange, which fio uses in place of bs; (plan key, name, bytes). A size that cannot
    be read counts as the largest there is. Pure."""
    w = case.workload
    key: tuple[str, ...] = ("workload", "bs")
    name, largest = "bs", w.bs_bytes
    for option, value in w.fio_options:
        if option not in ("bssplit", "bsrange"):
            continue
        for text in _fio_block_sizes(option, value):
            size = _fio_size_ceil_bytes(text)
            if size > largest:
                key, name, largest = ("workload", "fio", option), f"{option} block", size
    return key, name, largest


def fio_buffer_bytes(case: Case) -> int:
    """The I/O buffers fio allocates for a case: its largest block size x iodepth per job, every job of every
    client (an object operation and a metadata operation have one request in flight per job: iodepth 1)."""
    w = case.workload
    return largest_block(case)[2] * w.iodepth * w.numjobs * case.clients


def _fio_need(case: Case) -> Need:
    w = case.workload
    key, name, block_bytes = largest_block(case)
    return Need(key, f"fio's buffers: {name} {format_bytes(block_bytes)} x iodepth {w.iodepth} x numjobs "
                f"{w.numjobs} x clients {case.clients}", fio_buffer_bytes(case),
                f"lower {'bs' if key[-1] == 'bs' else 'the block sizes of ' + key[-1]}, iodepth, numjobs or clients")


def memory_demands(config: PlanConfig, cases: Sequence[Case]) -> list[Demand]:
    """Per lab configuration (what is up at once): its clusters' memory and the largest fio buffers of its cases
    where fio runs on this machine (not on the `hosts`' servers, nor in pods of a cluster of one's own)."""
    fio_here = config.hosts is None
    k8s_here = config.lab is not None and config.lab.k8s is not None
    out = []
    for group in _lab_groups(config, cases):
        needs: list[Need] = []
        clusters: dict[LabPoint, list[Case]] = {}
        for case in group:
            if case.lab.ceph is not None:
                clusters.setdefault(cluster_of(case.lab), []).append(case)
        for cluster_cases in clusters.values():
            needs += cluster_memory_needs(cluster_cases)
        local = [c for c in group if fio_here and (c.target.kind != "pvc" or k8s_here)]
        if local:
            needs.append(_fio_need(max(local, key=fio_buffer_bytes)))
        if needs:
            out.append(Demand("memory", tuple(needs)))
    return out


def lab_disk_demands(config: PlanConfig, cases: Sequence[Case]) -> list[Demand]:
    """Per lab configuration, the bytes its sparse files in the lab directory hold once written in full: the
    OSDs' files (or the devices they are sliced from), the volume lab's device, the NFS lab's exported test files,
    the k8s lab's block volumes (up for the whole run). Their sum must fit, since writes fill sparse files."""
    k8s = config.lab.k8s if config.lab is not None else None
    out = []
    for group in _lab_groups(config, cases):
        needs: list[Need] = []
        for cluster in dict.fromkeys(cluster_of(c.lab) for c in group):
            point = cluster.ceph
            if point is not None and point.objectstore == "bluestore":
                if point.osds_per_device and point.devices and point.device_size_bytes:
                    needs.append(Need(("lab", "ceph", "device_size"), _times(point.devices, "OSD device files",
                                                                             point.device_size_bytes),
                                      point.devices * point.device_size_bytes, "lower device_size or devices"))
                else:
                    needs.append(Need(("lab", "ceph", "osd_size"), _times(point.osds, "OSD files",
                                                                          point.osd_size_bytes),
                                      point.osds * point.osd_size_bytes, "lower osd_size or osds"))
        volume = group[0].lab.volume
        if volume is not None:
            needs.append(Need(("lab", "volume", "size"), f"volume device {format_bytes(volume.size_bytes)}",
                              volume.size_bytes, "lower lab.volume.size"))
        exported: dict[str, int] = {}  # NFS lab targets: files in the export, in the lab directory
        for case in group:
            if case.lab.nfs and isinstance(case.target, NfsTarget) and case.target.url is None:
                exported[case.target.name] = max(exported.get(case.target.name, 0), working_set_bytes(case))
        for name, size in exported.items():
            needs.append(Need(("targets", name, "size"), f"NFS lab files of '{name}' {format_bytes(size)}", size,
                              "lower the target's size, numjobs or clients"))
        if k8s is not None and k8s.block_volumes:
            needs.append(Need(("lab", "k8s", "block_size"), _times(k8s.block_volumes, "k8s block volumes",
                                                                    k8s.block_size),
                              k8s.block_volumes * k8s.block_size, "lower block_size or block_volumes"))
        if needs:
            out.append(Demand("disk in the lab directory", tuple(needs)))
    return out


def inodes_need(cases: Sequence[Case]) -> Need | None:
    """The files (inodes) the largest of ``cases`` makes in its target's directory: `files` per job of a metadata
    operation (and their directories), else fio's nrfiles per job; every job of every client."""
    def one(case: Case) -> Need:
        w = case.workload
        metadata = is_metadata(w.rw) and w.files is not None
        per_job = w.files if metadata and w.files is not None else next(
            (int(n) for k, n in w.fio_options if k == "nrfiles"), 1)
        what = f"files {per_job}" if metadata else f"nrfiles {per_job}"
        return Need(("workload", "files" if metadata else "numjobs"),
                    f"rw {w.rw}: {what} x numjobs {w.numjobs} x clients {case.clients}",
                    per_job * w.numjobs * case.clients + (w.dirs or 1), "lower files, numjobs or clients")
    return max(map(one, cases), key=lambda need: need.amount, default=None)
