"""Everything checked before the first byte of I/O (shell): the fio binary against the plan (engines, options),
then every target through its kind. Never a half-run on a bad plan."""

from __future__ import annotations

import os
import re
import resource
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from storbench.config import LoadedPlan, RbdTargetConfig, RepeatConfig
from storbench.config.lab import server_text
from storbench.demands import (
    MACHINE_SHARE,
    Demand,
    inodes_need,
    k8s_volume_demands,
    lab_disk_demands,
    lab_groups,
    memory_demands,
    over_share,
    task_demands,
)
from storbench.errors import UserError, did_you_mean
from storbench.execute.fio_binary import fio_capabilities
from storbench.fio.jobfile import OLD_FIO_JOB_LINE, render_client_jobs, render_job
from storbench.fio.options import REFUSED_ENGINES, FioCapabilities
from storbench.lab.ceph_conf import read_under_another_write_setting, unapplied_pool_size
from storbench.lab.k8s_conf import HOSTPATH_ROOT, STORAGE_CLASS
from storbench.lab.labdir import default_lab_dir
from storbench.model import BlockTarget, Case, NfsTarget
from storbench.schedule import precondition_jobs, preconditions
from storbench.targets.base import PreparedTarget
from storbench.targets.registry import check_targets
from storbench.targets.s3 import NO_S3_ACCESS, S3Access
from storbench.telemetry.cycles import machine_cycles_unavailable
from storbench.trusted_files import invoking_uids, untrusted
from storbench.units import parse_cpu_list


@dataclass(frozen=True)
class Checked:
    """Everything verified before the first byte of I/O."""

    capabilities: FioCapabilities
    targets: dict[str, PreparedTarget]


def check_fio_against_plan(loaded: LoadedPlan, cases: Sequence[Case], caps: FioCapabilities) -> None:
    """Engines exist and are allowed; pass-through options are options of this fio (and engine)."""
    source = loaded.source
    for case in cases:
        dirs = case.workload.dirs
        if dirs is not None and dirs > case.workload.numjobs:
            raise UserError(f"dirs: {dirs} with numjobs: {case.workload.numjobs}: fio gives each job one directory, "
                            f"so {dirs - case.workload.numjobs} would stay empty",
                            where=source.where(("workload", "dirs")),
                            hint=f"exclude the point (exclude: [{{dirs: {dirs}, numjobs: {case.workload.numjobs}}}]) "
                            "or raise numjobs")
        engine = case.workload.ioengine
        where = source.where(("workload", "ioengine"))
        if engine in REFUSED_ENGINES:
            raise UserError(f"ioengine '{engine}' runs programs instead of doing I/O", where=where,
                            hint="pick a storage engine such as libaio, io_uring or psync")
        if caps.engines and engine not in caps.engines and case.target.kind not in ("nfs", "s3"):  # their own fio
            raise UserError(f"ioengine '{engine}' is not available in {caps.binary} ({caps.version})", where=where,
                            hint=did_you_mean(engine, caps.engines) or "see `fio --enghelp`")
        known = caps.options_for(engine)
        for name, _value in case.workload.fio_options:
            if name not in known:
                raise UserError(f"'{name}' is not an option of {caps.version} with ioengine {engine}",
                                where=source.where(("workload", "fio", name)),
                                hint=did_you_mean(name, known) or "see `fio --cmdhelp`")


def precondition_cases(loaded: LoadedPlan, cases: Sequence[Case]) -> list[Case]:
    """The jobs of the targets' `precondition`s (one per target and lab configuration); one that would write to
    a raw device without `destructive: true` is refused here, the others meet the write guards of any case."""

    wanted = preconditions(loaded.config)
    jobs = precondition_jobs(wanted, cases)
    for job in jobs:
        spec, pre = job.target, wanted[job.target.name]
        if isinstance(spec, BlockTarget) and spec.device is not None and not spec.destructive:
            raise UserError(f"target '{spec.name}': precondition writes {pre.text()} to {spec.device}, destroying "
                            "its data", where=loaded.source.where(("targets", spec.name, "precondition")),
                            hint="set destructive: true on the target if its data may go, or drop precondition")
    return jobs


def check_machine(loaded: LoadedPlan) -> None:
    """What the plan asks of this machine: an OSD CPU quota within its cores; cycles counted where it can."""
    telemetry = loaded.config.telemetry
    if telemetry.enabled and telemetry.cycles and (why := machine_cycles_unavailable()) is not None:
        raise UserError(f"cannot count CPU cycles here: {why}",
                        where=loaded.source.where(("telemetry", "cycles")),
                        hint="apt-get install -y linux-perf" if why.startswith("perf is not") else
                        "remove telemetry.cycles (CPU time per I/O is measured without it), or run where "
                        "`perf stat -e cycles -a sleep 1` counts")
    ceph = loaded.config.lab.ceph if loaded.config.lab else None
    cores = os.cpu_count() or 1
    if ceph is not None and ceph.osd_cpuset:

        for cpus in ceph.osd_cpuset:
            if max(parse_cpu_list(cpus)) >= cores:
                raise UserError(f"osd_cpuset {cpus!r} names a CPU this machine does not have (CPUs 0-{cores - 1})",
                                where=loaded.source.where(("lab", "ceph", "osd_cpuset")),
                                hint=f"pick CPUs from 0 to {cores - 1}")
    if ceph is not None and ceph.osd_cpus and max(ceph.osd_cpus) > cores:
        raise UserError(f"osd_cpus {max(ceph.osd_cpus):g} is more than this machine's {cores} cores",
                        where=loaded.source.where(("lab", "ceph", "osd_cpus")),
                        hint=f"give each OSD at most {cores} cores")


def check_pool_sizes(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """`pool_size` is the replica count of the rbd targets' pools: a case on the lab's CephFS or radosgw must ask
    for the size those pools keep (`lab.ceph_conf.unapplied_pool_size`)."""
    found = unapplied_pool_size(cases)
    if found is None:
        return
    case, kept = found
    service = "CephFS" if case.target.kind == "cephfs" else "radosgw"
    raise UserError(f"target '{case.target.name}' runs on the lab's {service} pools, which keep {kept} copies, but "
                    f"its case asks for pool_size {case.lab.ceph.pool_size if case.lab.ceph else '-'}: pool_size sets "
                    "the rbd targets' pools only", where=loaded.source.where(("lab", "ceph", "pool_size")),
                    hint=f"sweep pool_size with rbd targets only, or exclude {case.target.name} from every "
                         f"pool_size but {kept} (exclude: [{{target: {case.target.name}, pool_size: N}}])")


def check_write_time_options(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """An option BlueStore applies as it writes (compression, checksums) swept on one target with reads
    (`lab.ceph_conf.read_under_another_write_setting`): each value's reads would read blocks written under one."""
    found = read_under_another_write_setting(cases)
    if found is None:
        return
    case, name = found
    raise UserError(f"target '{case.target.name}' is written once on its cluster, and BlueStore applies {name} as "
                    f"it writes: the {case.workload.rw} cases under each value of the sweep would read the same data, "
                    "written under one of them", where=loaded.source.where(("lab", "ceph", "config", name)),
                    hint=f"sweep {name} with writes only, or give it one value per run: each run writes its "
                    "targets under its own")


def check_plan_files(loaded: LoadedPlan) -> None:
    """The files a plan names for root to read (an rbd target's ceph.conf, which points root's Ceph tools at a
    log file, keyring and monitors) must be ones only root or the invoking user could have written
    (trusted_files.untrusted): else anyone could choose what root's tools do. (S3 keys are never a plan's.)"""
    for name, target in loaded.config.targets.items():
        problem = (untrusted(target.conf, invoking_uids())
                   if isinstance(target, RbdTargetConfig) and target.conf is not None else None)
        if problem:
            raise UserError(f"{problem}: someone else could have written it, and root would use it",
                            where=loaded.source.where(("targets", name, "conf")),
                            hint="chown root and chmod go-w it (and the directories above it), or drop conf: to use "
                            "the operator's /etc/ceph/ceph.conf")


def meminfo_bytes(field: str) -> int | None:
    """One figure of /proc/meminfo in bytes (``MemTotal``, ``MemAvailable``), or None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _nearest_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_rounds(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """`repeat: {until: ...}` looks at the answer after each round of every point: refused when the points need
    labs brought up one after another (a cluster per OSD count, brought up once), where the first lab's points run
    every round before the next lab's run any, and a look would see only them."""
    config = loaded.config
    ceph = config.lab.ceph if config.lab is not None else None
    if not isinstance(config.repeat, RepeatConfig) or (ceph is not None and ceph.bring_up == "each_repetition"):
        return
    groups = lab_groups(config, cases)
    if len(groups) > 1:
        first, second = (group[0].lab.pairs() for group in groups[:2])
        differ = ", ".join(f"{k}={v}" for k, v in second if (k, v) not in first) or "another lab"
        raise UserError(f"until: looks after each round of every point, but the plan's points need {len(groups)} "
                        f"labs brought up one after another (the second: {differ}): every round of the first would "
                        "run before the others ran any", where=loaded.source.where(("repeat",)),
                        hint="set lab.ceph.bring_up: each_repetition (a fresh cluster per value and round, A B B A), "
                             "or use a fixed repeat")


def check_question(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """A plan's `compare` (what `repeat: {until: decided}` decides) asks about the plan's own points: each side
    selects some, not the same."""
    config = loaded.config
    if config.compare is None:
        return
    repeat = config.repeat
    if config.compare.margin is not None and not (isinstance(repeat, RepeatConfig) and repeat.until == "decided"):
        # a fixed count of repetitions decides nothing by a margin: compare shows each change's interval. Checked
        # here, not as the plan loads: a stored plan that has one still gives its run's design
        raise UserError("equivalence within a margin is what repeat: {until: decided} decides, and this plan "
                        "repeats otherwise", where=loaded.source.where(("compare", "margin")),
                        hint="drop margin (compare then shows each change with its interval), or give repeat: "
                        "{min: 3, max: 10, until: decided}")
    # lazy: only plans with a question load the statistics' selectors
    from storbench.stats.selectors import parse_selector, plan_side_refusal

    refusal = plan_side_refusal(cases, parse_selector(config.compare.baseline),
                                parse_selector(config.compare.candidate))
    if refusal is not None:
        raise UserError(refusal.message,
                        where=loaded.source.where(("compare", refusal.side)), hint=refusal.hint)


def check_resources(loaded: LoadedPlan, cases: Sequence[Case]) -> None:
    """What the plan's largest lab configuration and case need of this machine's memory (MemAvailable) and of
    the filesystem holding the lab directory (its sparse files, written), within MACHINE_SHARE of each."""

    def refuse(demands: list[Demand], available: int | None, where: str) -> None:
        for demand in demands:
            refusal = None if available is None else over_share(demand, available, where)
            if refusal:
                largest = demand.largest  # the key named: the largest part of what is needed
                raise UserError(refusal, where=loaded.source.where(largest.key), hint=largest.hint)

    refuse(memory_demands(loaded.config, cases), meminfo_bytes("MemAvailable"), "this machine")
    refuse(task_demands(loaded.config, cases), free_tasks(), "this machine")
    volumes = k8s_volume_demands(loaded.config, cases, STORAGE_CLASS)
    if volumes:  # the host-path provisioner's directory, on this machine
        place = _nearest_existing(Path(HOSTPATH_ROOT))
        stats = os.statvfs(place)
        refuse(volumes, stats.f_bavail * stats.f_frsize, f"the filesystem of {HOSTPATH_ROOT} ({place})")
    disks = lab_disk_demands(loaded.config, cases)
    holder = _nearest_existing(Path(os.path.abspath(default_lab_dir())))
    if disks:
        stats = os.statvfs(holder)
        refuse(disks, stats.f_bavail * stats.f_frsize, f"the filesystem of the lab directory ({holder})")
    _check_lab_inodes(loaded, cases, holder)


def free_tasks() -> int | None:
    """How many more processes and threads this machine can run: the least of pid_max and threads-max less the tasks
    that run now (/proc/loadavg's count), and for a user other than root their RLIMIT_NPROC less their own tasks
    (the kernel does not hold root to it; it counts a user's own); None when it cannot tell."""
    try:
        limit = min(int(Path(f"/proc/sys/kernel/{name}").read_text()) for name in ("pid_max", "threads-max"))
        running = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    except (OSError, ValueError, IndexError):
        return None
    free = limit - running
    soft, _ = resource.getrlimit(resource.RLIMIT_NPROC)
    if os.geteuid() != 0 and soft != resource.RLIM_INFINITY:
        free = min(free, soft - _own_tasks())
    return max(0, free)


def _own_tasks() -> int:
    """The tasks (threads) of this real uid, which RLIMIT_NPROC counts."""
    uid, count = os.getuid(), 0
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _check_lab_inodes(loaded: LoadedPlan, cases: Sequence[Case], holder: Path) -> None:
    """The files the largest case on an NFS lab target makes (its export is a directory inside the lab directory)
    fit in MACHINE_SHARE of the free inodes of the lab directory's filesystem (one without an inode limit reports
    none, or -1, and is not checked), as a path target's files do in its own filesystem (targets.local)."""

    need = inodes_need([c for c in cases if isinstance(c.target, NfsTarget) and c.target.url is None])
    if need is None:
        return
    stats = os.statvfs(holder)
    if stats.f_files <= 0 or stats.f_favail < 0:
        return
    limit = int(stats.f_favail * MACHINE_SHARE)
    if need.amount > limit:
        raise UserError(f"the NFS lab's export makes {need.amount:,} files ({need.text}, and its directories); the "
                        f"filesystem of the lab directory ({holder}) has {stats.f_favail:,} free inodes and a plan "
                        f"may use {MACHINE_SHARE:.0%} of them ({limit:,})",
                        where=loaded.source.where(need.key), hint=need.hint)


def check_fio_servers(loaded: LoadedPlan, allowed: frozenset[str]) -> None:
    """The plan's fio servers (`hosts.servers`) must be ones the operator named (``allowed``, "host,port" in lower
    case): fio's client trusts its servers (a server can make it write files on this machine, as root when
    storbench is), so a plan from someone else never chooses them."""
    if loaded.config.hosts is None:
        return
    missing = [server for server in loaded.config.hosts.servers if server.lower() not in allowed]
    if missing:
        shown = ", ".join(server_text(server) for server in missing)
        raise UserError(f"{loaded.source.where(('hosts', 'servers'))}: fio server {shown} is not one the operator "
                        "named: fio's client trusts its servers (one can write files on this machine)",
                        hint="if you trust them: " + " ".join(f"--fio-server {server_text(s)}" for s in missing)
                        + " (or $STORBENCH_FIO_SERVERS)")


def check_everything(loaded: LoadedPlan, cases: Sequence[Case], fio_binary: str, *, create: bool,
                     dry_run: bool = False, s3: S3Access = NO_S3_ACCESS,
                     fio_servers: frozenset[str] | None = None, images: frozenset[str] = frozenset()) -> Checked:
    """All checks that can fail, before anything runs: never a half-run on a bad plan. ``dry_run``
    (`storbench plan`): no credential read, nothing sent over the network. ``s3``: the operator's S3 settings.
    ``fio_servers``: the fio servers the operator trusts (None: not checked, as `plan` connects to none).
    ``images``: the container images the operator lets pvc targets run (besides storbench's own)."""
    check_machine(loaded)
    check_pool_sizes(loaded, cases)
    check_write_time_options(loaded, cases)
    check_rounds(loaded, cases)
    check_question(loaded, cases)
    check_plan_files(loaded)
    engines = tuple(sorted({case.workload.ioengine for case in cases}))
    caps = fio_capabilities(fio_binary, engines)
    check_fio_against_plan(loaded, cases, caps)
    check_resources(loaded, cases)  # memory and lab disk: after the cheaper checks, before any target is touched
    writes = precondition_cases(loaded, cases)  # checked like any case: their writes meet the same guards
    targets = check_targets([*cases, *writes], create=create, remote=loaded.config.hosts is not None,
                            where=lambda name: loaded.source.where(("targets", name)), dry_run=dry_run, s3=s3,
                            images=images)
    check_job_texts(loaded, cases, targets, caps.version)
    if fio_servers is not None:
        check_fio_servers(loaded, fio_servers)
    return Checked(capabilities=caps, targets=targets)


def check_job_texts(loaded: LoadedPlan, cases: Sequence[Case], targets: Mapping[str, PreparedTarget],
                    fio_version: str = "") -> None:
    """Every case's job file renders, for the targets already prepared (not a lab's, made with it): a value that
    cannot be written into one, or a line longer than fio reads as one (`fio.jobfile.MAX_JOB_LINE`: a long path in a
    list of `dirs`; `OLD_FIO_JOB_LINE` for a fio before 3.15), is refused by `plan`, before anything is made, not by
    `run` in a traceback."""
    found = re.fullmatch(r"fio-(\d+)\.(\d+).*", fio_version)
    old = found is not None and (int(found[1]), int(found[2])) < (3, 15)
    for case in cases:
        prepared = targets.get(case.target.name)
        if prepared is None:
            continue
        try:
            texts = (render_client_jobs(case, prepared.binding, 0) if case.clients > 1
                     else [render_job(case, prepared.binding, 0)])
            longest = max(len(line) for text in texts for line in text.split("\n"))
            if old and longest > OLD_FIO_JOB_LINE:
                raise ValueError(f"a job line of {longest:,} characters, more than {fio_version} reads as one "
                                 f"({OLD_FIO_JOB_LINE:,} at most here)")
        except ValueError as exc:
            raise UserError(f"target '{case.target.name}': {exc}", where=loaded.source.where(
                ("targets", case.target.name)), hint="a shorter path, or fewer dirs") from None
