"""Plan -> cases (pure): the cartesian sweep over typed axes, exclude rules, each point's case."""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from storbench.case_ids import case_id_for, target_spec
from storbench.config import (
    FioScalar,
    LoadedPlan,
    PlanConfig,
    fio_value_text,
)
from storbench.config.faults import FAULT_TIMELINE_WINDOW_MS
from storbench.config.workload import WorkloadConfig
from storbench.errors import UserError, did_you_mean
from storbench.model import (
    CEPH_SETTINGS,
    METADATA_RW,
    MIXED_RW,
    NEVER,
    NFS_METADATA_ENGINE,
    Case,
    CephLabPoint,
    K8sLabPoint,
    LabPoint,
    VolumeLabPoint,
    WorkloadPoint,
    is_metadata,
    is_object,
    is_volume_operation,
)
from storbench.model.ceph_options import option_value
from storbench.stats.search import search_grid
from storbench.units import (
    fio_flag_set,
    format_block_size,
    format_bytes,
    link_rate_bits,
    parse_duration_s,
    parse_size_bytes,
)


def _flag(value: FioScalar) -> bool:
    """true/false as an exclude rule may write it (also 1/0)."""
    if isinstance(value, bool):
        return value
    if value in (0, 1, "0", "1"):
        return str(value) == "1"
    raise ValueError(f"expected true or false, got {value!r}")


def _whole(value: FioScalar) -> int:
    """A whole number as an exclude rule may write it (16, "16"); not 1.5, true or "16k", which int() had read as
    1, 1 and an error without a hint."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
        return int(value)
    raise ValueError(f"expected a whole number, got {value!r}")


def _number(value: FioScalar) -> float:
    """A number as an exclude rule may write it; not true or false (float() had read true as 1.0)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class Axis:
    """One sweep axis: its values as the plan's schema typed them (sizes in bytes, durations in seconds, options
    as fio reads them), and how a value written in an exclude rule is read to compare with them."""
    name: str
    values: tuple[object, ...]
    parse: Callable[[FioScalar], object] = fio_value_text


def _value_text(axis: Axis, value: object) -> str:
    """A swept value as a plan writes it: a block size as fio's 8k, other sizes as 64MiB, durations in one unit
    (90s, 2m, 1h: "1m30s", which the plan's durations do not take, had been offered in a hint)."""
    if axis.parse is parse_size_bytes and isinstance(value, int):
        return format_block_size(value) if axis.name == "bs" else format_bytes(value)
    if axis.parse is parse_duration_s and isinstance(value, int | float):
        for unit, seconds in (("h", 3600), ("m", 60)):
            if value >= seconds and value % seconds == 0:
                return f"{int(value // seconds)}{unit}"
        return f"{value:g}s"
    return str(value)


# How each Ceph lab setting's value is read from an exclude rule (as `config.lab` types its sweep).
_CEPH_SETTING_PARSE: dict[str, Callable[[FioScalar], object]] = {
    "osds": _whole, "osd_size": parse_size_bytes, "objectstore": str, "pool_size": _whole,
    "cache_size": parse_size_bytes, "osd_memory_target": parse_size_bytes, "osd_cpus": _number, "db_device": str,
    "osds_per_device": _whole, "osd_cpuset": str}


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

    return search_grid(*config.search.range)


def sweep_axes(config: PlanConfig) -> tuple[Axis, ...]:
    """Every sweep axis in expansion order (slowest-changing first)."""
    w = config.workload
    searched = search_values(config)
    axes = [
        Axis("target", tuple(config.targets), str),
        Axis("rw", tuple(w.rw), str),
        Axis("rwmixread", tuple(w.rwmixread), _whole),
        Axis("bs", tuple(w.bs), parse_size_bytes),
        Axis("iodepth", searched if config.search and config.search.axis == "iodepth" else tuple(w.iodepth), _whole),
        Axis("numjobs", searched if config.search and config.search.axis == "numjobs" else tuple(w.numjobs), _whole),
        Axis("runtime", tuple(w.runtime), parse_duration_s),
        Axis("ramp", tuple(w.ramp), parse_duration_s),
        Axis("direct", tuple(w.direct), _flag),
        Axis("ioengine", tuple(w.ioengine), str),
        Axis("files", tuple(w.files), _whole),
        Axis("file_size", tuple(w.file_size), parse_size_bytes),
        Axis("dirs", tuple(w.dirs), _whole),
        Axis("objects", tuple(w.objects), _whole),
    ]
    for name, value in sorted(w.fio.items()):
        values = value if isinstance(value, list) else [value]
        axes.append(Axis(name, tuple(fio_value_text(v) for v in values)))
    axes.append(Axis("clients", searched if config.search and config.search.axis == "clients"
                     else tuple(config.clients), _whole))
    hosts = config.lab.hosts if config.lab else None
    if hosts is not None and hosts.link is not None:
        axes.append(Axis("link", tuple(hosts.link), link_rate_bits))
    k8s = config.lab.k8s if config.lab else None
    if k8s is not None:
        axes.append(Axis("out_of_service_after", tuple(k8s.out_of_service_after), _never_or_seconds))
    ceph = config.lab.ceph if config.lab else None
    if ceph is not None:
        for name in CEPH_SETTINGS:  # sweep axes that configure the Ceph lab rather than fio
            lab_values = getattr(ceph, name)
            if ceph.osds_per_device is not None and name in ("osds", "osd_size"):
                continue  # they follow from devices x osds_per_device: the schema's defaults were no sweep of theirs
            if lab_values is not None:
                axes.append(Axis(name, tuple(lab_values), _CEPH_SETTING_PARSE[name]))
        for name, values in sorted(ceph.config.items()):  # OSD options
            axes.append(Axis(name, tuple(values), functools.partial(option_value, name)))
    return tuple(axes)


def _never_or_seconds(value: FioScalar) -> object:
    return NEVER if str(value).strip().lower() == NEVER else parse_duration_s(value)


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
            if not values:
                raise UserError(f"exclude '{key}': an empty list excludes nothing", where=where,
                                hint="give the values to leave out, or drop the key")
            try:
                wanted = {axis_names[key].parse(v) for v in values}
            except ValueError as exc:
                raise UserError(f"exclude '{key}': {exc}", where=where, hint=f"values of {key} in the plan: "
                                + ", ".join(map(str, axis_names[key].values))) from None
            unknown = wanted - set(axis_names[key].values)
            if unknown:
                axis = axis_names[key]
                raise UserError(
                    f"{', '.join(sorted(_value_text(axis, v) for v in unknown))} never occurs in the sweep of "
                    f"'{key}'", where=where,
                    hint="values in the plan: " + ", ".join(_value_text(axis, v) for v in axis.values),
                )
            normalised[key] = wanted
        rules.append(normalised)
    return rules


# The most points a plan's sweep may multiply to (before excludes): beyond it storbench refuses to expand it at
# all. `run` has its own, lower limits that the user can raise (cli.run's MAX_RUNS, MAX_HOURS).
MAX_EXCLUDE_RULES = 200  # rules a plan's `exclude` may list (each point meets every one)
MAX_SWEEP_POINTS = 100_000


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
    if len(rules) > MAX_EXCLUDE_RULES:  # each point meets every rule: a plan of many would expand for minutes
        raise UserError(f"the plan has {len(rules):,} exclude rules; storbench takes at most {MAX_EXCLUDE_RULES:,}",
                        where=loaded.source.where(("exclude",)),
                        hint="a rule may list several values per key: {bs: [4k, 8k], iodepth: 64}")
    cases: list[Case] = []
    seen: set[str] = set()
    names = [axis.name for axis in axes]
    for combination in itertools.product(*(axis.values for axis in axes)):
        values = dict(zip(names, combination, strict=True))
        if any(all(values[key] in wanted for key, wanted in rule.items()) for rule in rules):
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
                            device_size_bytes=layout.device_size if per_device else None, hosts=layout.hosts)
    volume = None
    if config.lab.volume is not None:
        volume = VolumeLabPoint(size_bytes=config.lab.volume.size, iops=config.lab.volume.iops,
                                bw_bytes_per_s=config.lab.volume.bw)
    k8s = None
    if config.lab.k8s is not None:
        after = point.values["out_of_service_after"]
        k8s = K8sLabPoint(nodes=config.lab.k8s.nodes,
                          out_of_service_after_s=None if after == NEVER else point.number("out_of_service_after"))
    hosts = config.lab.hosts
    link = point.whole_or_none("link")
    return LabPoint(ceph=ceph, nfs=config.lab.nfs is not None, volume=volume, link_bits_per_s=link,
                    link_delay_s=hosts.link_delay if hosts is not None and link is not None else None, k8s=k8s)


EMPTY_FILE_SIZE = 4096  # the file size a create or delete case carries (the default's): its files are empty


def _case(config: PlanConfig, point: SweepPoint) -> Case:
    target_name = point.text("target")
    target = target_spec(target_name, config.targets[target_name])
    rw = point.text("rw")
    fio_options = tuple(sorted((k, point.text(k)) for k in config.workload.fio))
    lab = _lab_point(config, point)
    rwmixread = point.whole("rwmixread") if rw in MIXED_RW else None
    size_bytes = config.workload.size if config.workload.size is not None else target.size_bytes
    # a plan with faults: fio logs the I/O window by window, read for the blackout, dip and recovery (not the
    # metadata cycle's phases, each at a rate of its own)
    timeline_window_ms = FAULT_TIMELINE_WINDOW_MS if config.faults else None
    if is_metadata(rw):
        # one operation per file: bs, iodepth, direct, ramp and the engine follow from the operation, so points
        # that differ only there collapse into one case (as rwmixread does for unmixed patterns); create makes
        # empty files and delete removes empty ones (fio lays a job's files out empty when it writes, unless a
        # plan's `overwrite` has it write them out), so their file size is none of their own (a file_size sweep had
        # doubled their cases); more dirs than jobs are refused with the fio checks (`checks.check_fio_against_plan`)
        empty = rw == "create" or (rw == "delete" and not fio_flag_set(dict(fio_options).get("overwrite", "0")))
        file_size = EMPTY_FILE_SIZE if empty else point.whole("file_size")
        dirs = point.whole("dirs")
        workload = WorkloadPoint(
            rw=rw, bs_bytes=file_size or 4096, iodepth=1, numjobs=point.whole("numjobs"),
            runtime_s=point.number("runtime"), ramp_s=0.0, direct=False,
            ioengine=NFS_METADATA_ENGINE if target.kind == "nfs" else METADATA_RW[rw][0],
            fio_options=fio_options, files=point.whole("files"), file_size_bytes=file_size,
            dirs=dirs if dirs > 1 else None, timeline_window_ms=timeline_window_ms if rw != "metadata" else None)
    elif is_object(rw):
        # one whole object of bs per operation through fio's http engine, which runs one request at a time per
        # job: concurrency is numjobs; iodepth and direct do not apply; a delete removes each object once
        workload = WorkloadPoint(
            rw=rw, rwmixread=rwmixread, bs_bytes=point.whole("bs"), iodepth=1, numjobs=point.whole("numjobs"),
            runtime_s=point.number("runtime"), ramp_s=0.0 if rw == "delete_object" else point.number("ramp"),
            direct=False, ioengine="http", fio_options=fio_options, files=point.whole("objects"),
            timeline_window_ms=timeline_window_ms)
    elif is_volume_operation(rw):
        # a Kubernetes operation is timed whole (attach's first I/O is a fixed 4 KiB write): bs, iodepth, numjobs,
        # ramp, direct and the engine do not apply, so points that differ only there collapse into one case, at the
        # plan's defaults (a plan that sets none of them keeps its case ids)
        (bs,), (iodepth,), (numjobs,), (ramp,), (direct,), (ioengine,) = (
            WorkloadConfig.model_fields[name].default for name in ("bs", "iodepth", "numjobs", "ramp", "direct",
                                                                    "ioengine"))
        workload = WorkloadPoint(
            rw=rw, bs_bytes=bs, iodepth=iodepth, numjobs=numjobs, runtime_s=point.number("runtime"), ramp_s=ramp,
            direct=direct, ioengine=ioengine, size_bytes=size_bytes, fio_options=fio_options)
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
            size_bytes=size_bytes,
            fio_options=fio_options,
            timeline_window_ms=timeline_window_ms,
        )
    clients = point.whole("clients")
    return Case(case_id=case_id_for(target, workload, clients, lab=lab), target=target, workload=workload,
                clients=clients, lab=lab)
