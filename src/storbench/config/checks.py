"""Cross-field rules of a plan: what the schema of one key cannot see (clients against hosts, targets
against the lab, fio options against the allow-list and the engine). Pure: each raises ``UserError``.
"""

from __future__ import annotations

from storbench.config.ceph_checks import check_ceph_lab
from storbench.config.faults import CHECK_SHARE, READ_BACK_S, CheckWritesConfig, start_delays
from storbench.config.pvc_checks import check_claim_names, check_pod_security
from storbench.config.repeat import RepeatConfig
from storbench.config.schema import PlanConfig
from storbench.config.source import PlanSource
from storbench.config.targets import (
    BlockTargetConfig,
    CephfsTargetConfig,
    NfsTargetConfig,
    PathTargetConfig,
    PvcTargetConfig,
    RbdTargetConfig,
    S3TargetConfig,
)
from storbench.errors import UserError, did_you_mean
from storbench.fio.allowlist import (
    ENGINES_BY_TARGET_KIND,
    RATE_OPTIONS,
    SYNC_ENGINES,
    engine_option_refusal,
    engine_refusal,
)
from storbench.model import counts_operations, is_volume_operation, rw_writes
from storbench.model.lab_point import CEPH_SETTINGS
from storbench.stats.selectors import blocked_settings, parse_selector
from storbench.units import format_block_size, format_bytes


def _check_clients(config: PlanConfig, source: PlanSource) -> None:
    lab_hosts = config.lab.hosts if config.lab else None
    if lab_hosts is not None and config.hosts is not None:
        raise UserError("the plan names both hosts and a hosts lab", where=source.where(("hosts",)),
                        hint="keep one: real servers (hosts) or network-namespace hosts (lab.hosts)")
    available = len(config.hosts.servers) if config.hosts else lab_hosts.count if lab_hosts else 1
    most = config.search.range[1] if config.search is not None and config.search.axis == "clients" \
        else max(config.clients)
    pods_only = all(isinstance(t, PvcTargetConfig) for t in config.targets.values())
    claimed: dict[tuple[str, str], str] = {}
    for name, target in config.targets.items():
        if isinstance(target, PvcTargetConfig):
            check_claim_names(claimed, name, target, max(most, 1), source)
            if config.hosts is not None or lab_hosts is not None:
                raise UserError(f"target '{name}' runs in pods: it takes no hosts", where=source.where(("hosts",)),
                                hint="clients of a pvc target are pods; drop hosts")
            writes = any(rw_writes(rw) for rw in config.workload.rw)
            if target.volume_mode == "Block" and writes and not target.destructive:
                raise UserError(f"target '{name}' writes to a raw Block volume", where=source.where(
                    ("targets", name)), hint="set destructive: true if the volume's data may be destroyed")
            check_pod_security(config, source, name, target)
    pods = any(isinstance(target, PvcTargetConfig) for target in config.targets.values())
    if (config.hosts is not None or lab_hosts is not None or pods) and most >= 2:
        _check_one_start_delay(config, source, most, "in pods" if pods else "on fio servers")
    if pods_only:
        return
    if most > available:
        searched = config.search is not None and config.search.axis == "clients"
        where = source.where(("search", "range") if searched else ("clients",))
        if config.hosts is None and lab_hosts is None:
            raise UserError(f"clients: {most} needs {most} fio servers, and the plan names none", where=where,
                            hint="add `hosts: {servers: [...]}` or `lab: {hosts: {count: N}}`")
        raise UserError(f"clients: {most} needs {most} fio servers, the plan has {available}", where=where,
                        hint="add servers, or lower clients")
    if config.hosts is not None or lab_hosts is not None:
        for name, target in config.targets.items():
            if not isinstance(target, PathTargetConfig | BlockTargetConfig | CephfsTargetConfig | RbdTargetConfig
                              | S3TargetConfig | NfsTargetConfig):
                raise UserError(f"target '{name}' ({target.kind}) cannot run on fio servers yet",
                                where=source.where(("targets", name)),
                                hint="use a path, block, cephfs, rbd, nfs or s3 target")
    if config.hosts is not None and config.lab is not None and config.lab.nfs is not None:
        raise UserError("the plan's NFS lab cannot be reached from real fio servers", where=source.where(("hosts",)),
                        hint="use `lab: {hosts: {count: N}}` for clients beside an NFS lab, or give the nfs "
                        "target the url of a server they reach")
    if config.hosts is not None and config.lab is not None and config.lab.ceph is not None:
        raise UserError("the plan's Ceph lab cannot be reached from real fio servers", where=source.where(("hosts",)),
                        hint="use `lab: {hosts: {count: N}}` for clients beside a Ceph lab, or point the rbd "
                        "target's conf at a real cluster")
    if config.hosts is not None:
        _check_remote_targets(config, source)
        # the servers cases use: the first N for clients: N
        hosts = [server.rpartition(",")[0].lower() for server in config.hosts.servers[:most]]
        shared = sorted({host for host in hosts if hosts.count(host) > 1})
        if config.faults and shared:  # `fio --client` names a server's timeline logs by its host, not its port
            raise UserError(f"the plan's faults need each fio server on its own host; {shared[0]} serves two",
                            where=source.where(("hosts", "servers")),
                            hint="fio names each server's timeline log after its host: the second would overwrite "
                            "the first's; list one server per host")


def _check_one_start_delay(config: PlanConfig, source: PlanSource, most: int, clients: str) -> None:
    """Several clients on fio servers or in pods start together (at the barrier, or at the pods' common moment), then
    wait one startdelay: a range (`10-30s`) would draw each client's start apart, and their sum would add measured
    sections that did not overlap."""
    for value, low, high in start_delays(config.workload):
        if low != high:
            raise UserError(f"startdelay {value} draws each job's start, and {most} clients {clients} start "
                            "together", where=source.where(("workload", "fio", "startdelay")),
                            hint="give one startdelay (e.g. 10s), or run one client")


def _check_remote_targets(config: PlanConfig, source: PlanSource) -> None:
    """Targets on real fio servers are on other machines: nothing about them can be checked from here, so a
    directory must be absolute (a relative one resolves in each server's working directory) and a raw device
    is only read (whether it is mounted on a server cannot be seen from here)."""
    writes = any(rw_writes(rw) for rw in config.workload.rw)
    for name, target in config.targets.items():
        where = source.where(("targets", name))
        if isinstance(target, PathTargetConfig | CephfsTargetConfig):
            if target.path is None or not target.path.startswith("/"):
                raise UserError(f"target '{name}' runs on fio servers: its path must be absolute", where=where,
                                hint="give the directory as the servers see it, e.g. /mnt/cephfs/storbench")
        elif isinstance(target, BlockTargetConfig) and (writes or target.precondition is not None):
            # a precondition writes the device too (its fill job goes to every server, the whole device without size)
            raise UserError(f"target '{name}' would write to a raw device on fio servers"
                            + (" (its precondition)" if not writes else ""), where=where,
                            hint="storbench cannot see what is mounted on another machine; measure the device "
                            "with reads only, or run storbench on that machine")


def _check_lab(config: PlanConfig, source: PlanSource) -> None:
    _check_clients(config, source)
    ceph = config.lab.ceph if config.lab else None
    nfs = config.lab.nfs if config.lab else None
    for name, target in config.targets.items():
        if isinstance(target, NfsTargetConfig) and target.url is None and nfs is None:
            raise UserError(f"target '{name}' has no url and the plan has no NFS lab", where=source.where(
                ("targets", name)), hint="give url: nfs://server/export, or add `lab: {nfs: {}}`")
        if isinstance(target, S3TargetConfig) and target.endpoint is None and not (ceph and ceph.rgw):
            raise UserError(f"target '{name}' has no endpoint and the plan's Ceph lab runs no radosgw",
                            where=source.where(("targets", name)),
                            hint="give endpoint: and bucket: of an S3 service, or set lab.ceph.rgw: true")
        if isinstance(target, S3TargetConfig) and target.endpoint is not None and target.bucket is None:
            raise UserError(f"target '{name}' has an endpoint but no bucket", where=source.where(("targets", name)),
                            hint="name an existing bucket: storbench makes one only on its Ceph lab")
        if isinstance(target, S3TargetConfig) and target.endpoint is None and target.bucket not in (None, "storbench"):
            raise UserError(f"target '{name}': bucket '{target.bucket}' on the lab's radosgw, which has only the "
                            "bucket storbench makes, 'storbench'", where=source.where(("targets", name, "bucket")),
                            hint="drop bucket: (the lab's is used), or give the endpoint: of a service that has it")
        if isinstance(target, CephfsTargetConfig) and target.path is None and not (ceph and ceph.cephfs):
            raise UserError(f"target '{name}' has no path and the plan's Ceph lab mounts no CephFS",
                            where=source.where(("targets", name)),
                            hint="give path: (a mounted CephFS directory), or set lab.ceph.cephfs: true")
    volume = config.lab.volume if config.lab else None
    for name, target in config.targets.items():
        if isinstance(target, BlockTargetConfig) and target.device is None:
            where = source.where(("targets", name))
            if volume is None:
                raise UserError(f"target '{name}' has no device and the plan has no volume lab", where=where,
                                hint="give device: /dev/..., or add `lab: {volume: {iops: 3000}}`")
            if config.hosts is not None or (config.lab is not None and config.lab.hosts is not None):
                raise UserError(f"target '{name}' is the volume lab's device on this machine: fio servers cannot "
                                "reach it", where=where, hint="drop hosts, or give the servers' own device")
    check_ceph_lab(config, source)


def _check_engines(config: PlanConfig, source: PlanSource) -> None:
    """Each target kind has its engines (rbd and nfs targets always use theirs); engine options only with
    their engine."""
    for name, target in config.targets.items():
        engines = {"rbd": ["rbd"], "nfs": ["nfs"], "s3": ["http"]}.get(target.kind, config.workload.ioengine)
        for engine in engines:
            refusal = engine_refusal(engine, target.kind)
            if refusal:
                raise UserError(f"target '{name}': {refusal}", where=source.where(("workload", "ioengine")),
                                hint=did_you_mean(engine, list(ENGINES_BY_TARGET_KIND[target.kind])) or
                                "storbench sets the engine of rbd and nfs targets itself; files and devices take "
                                "a local engine")
            for option in config.workload.fio:
                refusal = engine_option_refusal(option, engine)
                if refusal:
                    raise UserError(f"target '{name}': {refusal}", where=source.where(("workload", "fio", option)),
                                    hint="drop it, or sweep only that ioengine")
        if target.kind in FILE_KINDS:
            for option in SHARE_OFFSETS:
                values = config.workload.fio.get(option)
                shares = [v for v in (values if isinstance(values, list) else [values]) if str(v).endswith("%")]
                if shares:  # fio takes the share of the file's size then: each repetition lays the file out longer
                    raise UserError(f"target '{name}': {option}: {shares[0]} is a share of a file that fio lays out "
                                    "to it: the file grows with every repetition, past the size the plan was "
                                    "checked for", where=source.where(("workload", "fio", option)),
                                    hint=f"give {option} as a size (e.g. 64MiB), or a share on a block device")


FILE_KINDS = frozenset({"path", "cephfs", "nfs"})  # targets whose test files fio lays out
SHARE_OFFSETS = ("offset", "offset_increment")


def _compare_hint(config: PlanConfig) -> str:
    """A `compare:` to add, between the first two values of a setting the plan sweeps (a Ceph lab setting, the
    target, then the workload's), in the words a selector takes; the Ceph pool sizes where nothing is swept."""
    ceph = config.lab.ceph if config.lab is not None else None
    swept: list[tuple[str, list[object]]] = [
        (name, list(getattr(ceph, name) or ())) for name in CEPH_SETTINGS if ceph is not None]
    swept.append(("target", list(config.targets)))
    swept += [(name, list(getattr(config.workload, name))) for name in _HINTED_WORKLOAD]
    swept.append(("clients", list(config.clients)))
    for name, values in swept:
        if len(values) >= 2:
            first, second = (format_block_size(v) if name == "bs" and isinstance(v, int) else str(v).lower()
                             if isinstance(v, bool) else str(v) for v in values[:2])
            return f"add compare: {{baseline: {name}={first}, candidate: {name}={second}}}"
    return "sweep the setting to compare (e.g. lab.ceph.pool_size: [2, 3]) and add compare: {baseline: " \
           "pool_size=2, candidate: pool_size=3}"


_HINTED_WORKLOAD = ("ioengine", "rw", "rwmixread", "bs", "iodepth", "numjobs", "direct")


def _check_adaptive(config: PlanConfig, source: PlanSource) -> None:
    """`repeat: {until: decided}` needs a `compare` whose sides run on one cluster, alternating."""
    repeat = config.repeat
    if isinstance(repeat, RepeatConfig):
        if repeat.max < repeat.min:
            raise UserError(f"{repeat.max} is below repeat.min {repeat.min}",
                            where=source.where(("repeat", "max")), hint="raise max")
        if config.order != "interleaved":
            raise UserError("repeat: {until: ...} runs balanced rounds, which needs order: interleaved",
                            where=source.where(("order",)), hint="drop order (interleaved is the default)")
        if repeat.until == "decided" and config.compare is None:
            raise UserError("decided needs the comparison to decide", where=source.where(
                ("repeat", "until")), hint=_compare_hint(config))
    if config.compare is None:
        return
    selectors = {}
    for side in ("baseline", "candidate"):
        try:
            selectors[side] = parse_selector(getattr(config.compare, side))
        except ValueError as exc:
            raise UserError(str(exc), where=source.where(("compare", side)),
                            hint="KEY=VALUE[,KEY=VALUE], e.g. pool_size=2") from None
    apart = blocked_settings(*selectors.values())  # a setting both sides name alike ran on one cluster
    for side, selector in selectors.items():
        blocked = [k for k in blocked_settings(selector) if k in apart]
        bring_up = config.lab.ceph.bring_up if config.lab is not None and config.lab.ceph is not None else "once"
        if blocked and isinstance(repeat, RepeatConfig) and bring_up != "each_repetition":
            # side by side, each side is one cluster: the rule would go on until the two instances differ
            why = ("brought up once, its sides cannot alternate round by round" if bring_up == "once" else
                   "side by side, each side is one cluster, and the rule would decide between those two instances")
            raise UserError(f"it names {', '.join(blocked)}, which needs a cluster per value: {why}",
                            where=source.where(("compare", side)),
                            hint="set lab.ceph.bring_up: each_repetition (a fresh cluster per value and round, A B "
                                 "B A), or use a fixed repeat")


def _check_steady_state(config: PlanConfig, source: PlanSource) -> None:
    """`steady_state` runs each point's rounds back to back on one instance, as many as the rule needs."""
    steady = config.steady_state
    if steady is None:
        return
    where = source.where(("steady_state",))
    if "repeat" in config.model_fields_set:
        raise UserError("steady_state measures round by round until steady: its rounds are the repetitions",
                        where=source.where(("repeat",)), hint="drop repeat (steady_state.max_rounds bounds them)")
    if "order" in config.model_fields_set and config.order != "sequential":
        raise UserError(f"steady_state runs each point's rounds back to back, not order: {config.order}",
                        where=source.where(("order",)), hint="drop order")
    if steady.confirm == 1:
        raise UserError("1 gives no interval (one round has no spread)",
                        where=source.where(("steady_state", "confirm")),
                        hint="confirm: 5 (or at least 2), or 0 for the window's mean without an interval")
    if steady.window > steady.max_rounds:
        raise UserError(f"steady_state.window {steady.window} is above max_rounds {steady.max_rounds}",
                        where=source.where(("steady_state", "max_rounds")), hint="raise max_rounds")
    ceph = config.lab.ceph if config.lab is not None else None
    if ceph is not None and ceph.bring_up == "each_repetition":
        raise UserError("steady_state needs a point's rounds on one cluster; bring_up: each_repetition starts a "
                        "fresh one every round", where=where, hint="use bring_up: once")


def _check_search(config: PlanConfig, source: PlanSource) -> None:
    """`search` measures one load value at a time, each with a fixed number of repetitions, on one instance."""
    search = config.search
    if search is None:
        return
    where = source.where(("search",))
    swept = {"iodepth": config.workload.iodepth, "numjobs": config.workload.numjobs, "clients": config.clients}
    if len(swept[search.axis]) > 1:
        key = ("clients",) if search.axis == "clients" else ("workload", search.axis)
        raise UserError(f"search chooses the {search.axis} values itself; the plan also sweeps {search.axis}",
                        where=source.where(key), hint=f"give one {search.axis} (or none): search.range sets them")
    for index, rule in enumerate(config.exclude):
        if search.axis in rule:  # the search asks for grid values itself: one left out would stop it there
            raise UserError(f"this exclude rule names {search.axis}, which the search chooses itself: it would "
                            f"stop where it asked for {search.axis}={rule[search.axis]}",
                            where=source.where(("exclude", index)),
                            hint=f"narrow search.range instead, or drop {search.axis} from the rule")
    if config.steady_state is not None:
        raise UserError("search and steady_state do not go together yet", where=where,
                        hint="measure steady state at the points the search found, in a plan of their own")
    if isinstance(config.repeat, RepeatConfig):
        raise UserError("search measures every chosen point with a fixed number of repetitions", where=source.where(
            ("repeat",)), hint="use repeat: N (3 or more gives each point an interval)")
    if "order" in config.model_fields_set and config.order != "sequential":
        raise UserError(f"search runs each point's repetitions before choosing the next, not order: {config.order}",
                        where=source.where(("order",)), hint="drop order")
    # a load that never reaches the storage along the axis: the search had said "IOPS saturated" of it
    sync = sorted(set(config.workload.ioengine) & SYNC_ENGINES)
    if search.axis == "iodepth" and sync:
        raise UserError(f"search along iodepth with ioengine {sync[0]}: a sync engine keeps one I/O a job in flight "
                        "whatever its iodepth, so the search would call flat what never changed",
                        where=source.where(("search", "axis")), hint="search numjobs or clients, or use libaio or "
                        "io_uring")
    if search.axis == "iodepth" and "libaio" in config.workload.ioengine and False in config.workload.direct:
        raise UserError("search along iodepth with libaio and direct: false: Linux runs buffered libaio I/O one at "
                        "a time, whatever its iodepth, so the search would call flat what never changed",
                        where=source.where(("search", "axis")), hint="set direct: true, or search numjobs or clients")
    operations = [rw for rw in config.workload.rw if counts_operations(rw)]
    if operations and (search.axis == "iodepth" or (search.axis == "numjobs" and any(
            is_volume_operation(rw) for rw in operations))):
        raise UserError(f"search along {search.axis} with rw: {operations[0]}: its operations take no {search.axis}, "
                        "so every load would be one case", where=source.where(("search", "axis")),
                        hint="search clients (or numjobs, for file and object operations)")
    # (a rate holds each job: along numjobs or clients the load still grows with the jobs)
    if search.axis == "iodepth" and (limited := [name for name in RATE_OPTIONS if name in config.workload.fio]):
        raise UserError(f"search along iodepth with {limited[0]}: fio holds each job to it, so a deeper queue adds "
                        "no load the storage sees, and the search would call it saturated",
                        where=source.where(("workload", "fio", limited[0])),
                        hint="drop it, or search numjobs or clients (a rate per job grows with the jobs)")
    ceph = config.lab.ceph if config.lab is not None else None
    if ceph is not None and ceph.bring_up == "each_repetition":
        raise UserError("search needs its points on one cluster; bring_up: each_repetition starts a fresh one "
                        "every round", where=where, hint="use bring_up: once")


def _check_shared_directories(config: PlanConfig, source: PlanSource) -> None:
    """Two path or cephfs targets on one directory would share their test files and be measured and compared
    as different storage; refused. (Plan-level: the same text after normalising; links are seen at run time.)"""
    import os.path  # lazy: this pure module's one effect (KNOWN_EFFECT_IMPORTS), for this check alone

    seen: dict[str, str] = {}
    for name, target in config.targets.items():
        if isinstance(target, PathTargetConfig | CephfsTargetConfig):
            key = os.path.abspath(target.path) if target.path is not None else "the lab's CephFS mount"
            if key in seen:
                raise UserError(f"targets '{seen[key]}' and '{name}' are the same directory ({key})",
                                where=source.where(("targets", name)),
                                hint="give each target a directory of its own, or keep one of them")
            seen[key] = name


def _check_writes_on_cap(check: CheckWritesConfig, blocks: int, cap_iops: int, where: str) -> None:
    """The checking writer on the volume lab, whose IOPS cap counts its writes and reads too: its writes a small
    share of the cap (150 IOPS with the writer's 200 a second had left fio nothing, said nowhere), and every block
    read back at the cap within `READ_BACK_S` (else "not checked", blamed on the storage)."""
    if check.iops > CHECK_SHARE * cap_iops:
        raise UserError(f"check_writes writes {check.iops} a second, more than {CHECK_SHARE:.0%} of the volume lab's "
                        f"cap of {cap_iops} IOPS, which counts them: fio would measure what is left",
                        where=where, hint=f"give check_writes iops: {max(1, int(CHECK_SHARE * cap_iops))} or less")
    if blocks / cap_iops > READ_BACK_S:
        raise UserError(f"check_writes reads its {blocks:,} blocks back at the volume lab's cap of {cap_iops} IOPS: "
                        f"{blocks / cap_iops:,.0f} s, more than the {READ_BACK_S:g} s a read-back may take",
                        where=where, hint=f"give check_writes blocks: {int(READ_BACK_S * cap_iops):,} or fewer")


def _check_writes(config: PlanConfig, source: PlanSource) -> None:
    """`check_writes` runs a checking writer on this machine, on the storage a target puts fio's files on: a
    directory (path, cephfs), a block device past fio's `size` (written, so `destructive` or the volume lab's), or
    an RBD image of its own in the target's pool."""
    check = config.check_writes
    if check is None:
        return
    where = source.where(("check_writes",))
    if config.hosts is not None or (config.lab is not None and config.lab.hosts is not None):
        raise UserError("check_writes runs its writer on this machine, not on fio servers", where=where,
                        hint="measure with local fio (no hosts, no lab.hosts), or remove check_writes")
    for name, target in config.targets.items():
        at = source.where(("targets", name))
        if isinstance(target, BlockTargetConfig):
            if target.size is None:
                raise UserError(f"check_writes writes past fio's region of block target '{name}', which has no "
                                "size (fio uses the whole device)", where=at,
                                hint=f"give it size: (at most the device's size less "
                                f"{format_bytes(check.region_bytes(config.workload))})")
            beyond = [f"workload.fio.{k}" for k in ("offset", "offset_increment") if k in config.workload.fio]
            if config.workload.size is not None and config.workload.size > target.size:
                beyond.insert(0, f"workload.size ({format_bytes(config.workload.size)})")
            if beyond:
                raise UserError(f"check_writes writes just past the size of block target '{name}'; {beyond[0]} moves "
                                "fio's I/O there, over the checked blocks (a false loss)", where=at,
                                hint="drop it, or give the target a size that holds fio's region")
            region = check.region_bytes(config.workload)
            volume = config.lab.volume if config.lab is not None and target.device is None else None
            if volume is not None and target.size + region > volume.size:
                raise UserError(f"check_writes writes {format_bytes(region)} just past the {format_bytes(target.size)} "
                                f"of block target '{name}', more than the volume lab's {format_bytes(volume.size)} "
                                "holds", where=at, hint=f"give lab.volume a size of at least "
                                f"{format_bytes(target.size + region)}, or check_writes fewer blocks")
            if volume is not None and volume.iops is not None:
                _check_writes_on_cap(check, check.region_blocks(config.workload), volume.iops, where)
            if target.size % 4096:
                raise UserError(f"check_writes writes with direct I/O just past the size of block target '{name}', "
                                f"{target.size:,} bytes: not a multiple of 4 KiB", where=at,
                                hint="give the target a size that is a multiple of 4KiB")
            if target.device is not None and not target.destructive:
                raise UserError(f"check_writes would write to {target.device} (target '{name}') without "
                                "destructive: true", where=at,
                                hint=f"add 'destructive: true' to target '{name}' if that is what you want")
        elif not isinstance(target, PathTargetConfig | CephfsTargetConfig | RbdTargetConfig):
            raise UserError(f"check_writes cannot write beside fio on {target.kind} target '{name}' (path, cephfs, "
                            "block and rbd targets only)", where=at,
                            hint="measure that storage through a path (a mount) or remove check_writes")
