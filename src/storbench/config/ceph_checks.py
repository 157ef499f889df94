"""A plan's Ceph lab against the rest of it (pure): sweeps a memstore OSD cannot take, OSDs per device, emulated
hosts and the faults on them, side-by-side clusters, pool sizes, rbd targets' conf. Each raises ``UserError``.
"""

from __future__ import annotations

import math

from storbench.config.schema import PlanConfig, run_order
from storbench.config.source import PlanSource
from storbench.config.targets import RbdTargetConfig
from storbench.errors import UserError
from storbench.lab.ceph_conf import MIN_OSD_MEMORY_TARGET, SIDE_BY_SIDE_MAX
from storbench.model import CLUSTER_SETTINGS
from storbench.units import format_bytes


def check_ceph_lab(config: PlanConfig, source: PlanSource) -> None:
    ceph = config.lab.ceph if config.lab else None
    if ceph is None:
        return
    rbd_targets = [n for n, t in config.targets.items() if isinstance(t, RbdTargetConfig)]
    live = {name: len(values) for name, values in
            (("cache_size", ceph.cache_size), ("osd_memory_target", ceph.osd_memory_target), *ceph.config.items())
            if values is not None}
    if "memstore" in ceph.objectstore and any(n > 1 for n in live.values()):
        swept = next(name for name, n in live.items() if n > 1)
        key = ("lab", "ceph", "config", swept) if swept in ceph.config else ("lab", "ceph", swept)
        raise UserError(f"sweeping {swept} restarts the OSDs between values, and a memstore OSD loses its data "
                        "when it restarts", where=source.where(key), hint="use objectstore: bluestore")
    if ceph.db_device is not None and "fast" in ceph.db_device and "memstore" in ceph.objectstore:
        raise UserError("db_device: fast moves BlueStore's RocksDB, and a memstore OSD has none",
                        where=source.where(("lab", "ceph", "db_device")), hint="use objectstore: bluestore")
    if ceph.osds_per_device is not None:
        where = source.where(("lab", "ceph", "osds_per_device"))
        if "osds" in ceph.model_fields_set or "osd_size" in ceph.model_fields_set:
            raise UserError("with osds_per_device, the OSD count and size follow from devices and device_size",
                            where=where, hint="drop osds and osd_size, or drop osds_per_device")
        if "memstore" in ceph.objectstore:
            raise UserError("osds_per_device puts OSDs on devices, and a memstore OSD keeps its data in memory",
                            where=where, hint="use objectstore: bluestore")
        most = max(ceph.osds_per_device)
        if ceph.device_size // most < 1024**3:
            raise UserError(f"{most} OSDs on a device of {format_bytes(ceph.device_size)} leaves under 1 GiB each",
                            where=where, hint=f"raise device_size to {most}GiB or more, or lower osds_per_device")
        if min(ceph.pool_size) > ceph.devices * min(ceph.osds_per_device):
            raise UserError(f"pool_size {min(ceph.pool_size)} needs more OSDs than devices x osds_per_device "
                            f"({ceph.devices * min(ceph.osds_per_device)})", where=where, hint="raise devices")
    osds = [ceph.devices * n for n in ceph.osds_per_device] if ceph.osds_per_device else ceph.osds
    for index, fault in enumerate(config.faults or []):  # a fault on an OSD or emulated host names one the lab has
        if fault.on.startswith("host.") and fault.on[5:].isdigit() and not 1 <= int(fault.on[5:]) <= (ceph.hosts or 0):
            raise UserError(f"faults[{index}] acts on {fault.on}, and the Ceph lab has "
                            + (f"hosts 1 to {ceph.hosts}" if ceph.hosts else "no emulated hosts"),
                            where=source.where(("faults", index, "on")),
                            hint="set lab.ceph.hosts (the OSDs spread over that many hosts), and name one from 1")
        if fault.on.startswith("osd.") and fault.on[4:].isdigit() and int(fault.on[4:]) >= min(osds):
            raise UserError(f"faults[{index}] acts on {fault.on}, and the Ceph lab"
                            + ("'s smallest cluster" if len(osds) > 1 else "") + f" has osd.0 to osd.{min(osds) - 1}",
                            where=source.where(("faults", index, "on")),
                            hint="name an OSD every cluster of the plan has, from osd.0")
    if ceph.hosts is not None:
        where = source.where(("lab", "ceph", "hosts"))
        if ceph.hosts > min(osds):
            raise UserError(f"{ceph.hosts} hosts need at least as many OSDs (the smallest osds is {min(osds)})",
                            where=where, hint="lower hosts or raise osds")
        if max(ceph.pool_size) > ceph.hosts:
            raise UserError(f"a pool of size {max(ceph.pool_size)} keeps its copies on as many hosts; hosts is "
                            f"{ceph.hosts}", where=where, hint="raise hosts or lower pool_size")
    if ceph.bring_up in ("each_repetition", "side_by_side") and run_order(config) != "interleaved":
        # each_repetition brings the clusters up in the order the rounds give: sequential, every cluster of one value
        # before any of the other's, yet said "A B B A, paired"
        if config.steady_state is not None or config.search is not None:  # whatever the order: side by side too
            what = "steady_state" if config.steady_state is not None else "search"
            if ceph.bring_up == "side_by_side":  # (each_repetition: refused by their own checks, in their words)
                raise UserError(f"bring_up: side_by_side alternates the clusters round by round, but {what} runs "
                                "each point's rounds back to back: its clusters would run in blocks",
                                where=source.where(("lab", "ceph", "bring_up")),
                                hint="use bring_up: once (its design is then said as blocked)")
        else:
            raise UserError(f"bring_up: {ceph.bring_up} alternates the clusters round by round, which needs "
                            f"order: interleaved (order: {config.order} runs them in blocks)",
                            where=source.where(("order",)), hint="drop order (interleaved is the default)")
    if ceph.bring_up == "side_by_side":
        # every setting that needs a cluster of its own (osds_per_device and db_device too: the lab has slots for
        # SIDE_BY_SIDE_MAX, and a fifth cluster's ports and teardown are none of them)
        clusters = math.prod(len(values) for name in sorted(CLUSTER_SETTINGS)
                             if isinstance(values := getattr(ceph, name, None), list))
        where = source.where(("lab", "ceph", "bring_up"))
        if clusters > SIDE_BY_SIDE_MAX:
            raise UserError(f"side_by_side would run {clusters} Ceph clusters at once, at most {SIDE_BY_SIDE_MAX} fit",
                            where=where, hint="sweep fewer osds, osd_size, objectstore, db_device or osds_per_device "
                            "values, or use each_repetition")
        if config.lab is not None and config.lab.hosts is not None:
            raise UserError("side_by_side clusters cannot be reached from the hosts lab (it holds one cluster's conf)",
                            where=where, hint="use bring_up: each_repetition with lab.hosts")
    if ceph.cache_size is not None and "bluestore_cache_size" in ceph.config:
        raise UserError("the plan sets the BlueStore cache twice (cache_size and config.bluestore_cache_size)",
                        where=source.where(("lab", "ceph", "config", "bluestore_cache_size")), hint="keep one")
    if ceph.osd_memory_target is not None and min(ceph.osd_memory_target) < MIN_OSD_MEMORY_TARGET:
        # Ceph raises it to its least itself: two values below it had run as one and been compared as two
        raise UserError(f"osd_memory_target {format_bytes(min(ceph.osd_memory_target))} is below Ceph's least, "
                        f"{format_bytes(MIN_OSD_MEMORY_TARGET)}, which it would run at instead",
                        where=source.where(("lab", "ceph", "osd_memory_target")),
                        hint=f"give {format_bytes(MIN_OSD_MEMORY_TARGET)} or more (a smaller cache: cache_size)")
    for size in ceph.pool_size:  # the OSD counts the cases have (with osds_per_device, devices x it), but for
        # the combinations an exclude rule leaves out, as the hint says
        # (keyed as the plan sweeps them: with osds_per_device, its rules name that, not osds)
        counts = ([("osds_per_device", p, ceph.devices * p) for p in ceph.osds_per_device] if ceph.osds_per_device
                  else [("osds", n, n) for n in ceph.osds])
        short = [n for key, value, n in counts if size > n and not _excluded(config, **{key: value, "pool_size": size})]
        if short:
            raise UserError(f"pool_size {size} needs at least {size} OSDs, the sweep has {min(short)}",
                            where=source.where(("lab", "ceph", "pool_size")),
                            hint="raise osds, or exclude the combination")
    for name in rbd_targets:
        target = config.targets[name]
        assert isinstance(target, RbdTargetConfig)
        if target.conf is not None:
            raise UserError(f"target '{name}' names a conf, but the plan brings up its own Ceph lab",
                            where=source.where(("targets", name, "conf")), hint="drop conf: the lab's is used")


def _excluded(config: PlanConfig, **point: int) -> bool:
    """Whether an exclude rule of the plan names only keys of ``point`` and matches it (values compared as text)."""
    for rule in config.exclude:
        if set(rule) <= set(point) and all(str(point[key]) in {str(v) for v in (value if isinstance(value, list)
                                                                                   else [value])}
                                           for key, value in rule.items()):
            return True
    return False
