"""A real Ceph cluster on this machine from Debian's packages (shell): mon, mgr, OSDs on sparse files.

`up` writes a private ceph.conf and keyrings under the lab directory (root's, 0700: see lab.labdir), starts the
daemons directly (no systemd, no ceph-volume) and records their pids, waits for HEALTH_OK-grade readiness and
creates the pools. `down` unmounts its ceph-fuse mount, kills exactly the daemons it recorded and removes the
directory. `up` with the same spec is a no-op.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from storbench.errors import UserError
from storbench.lab.base import CliOption, LabCommand, LabGroup, LabKindBase, Say, SessionLabs
from storbench.lab.ceph_conf import LOOPBACK, CephLabSpec, mon_address, render_ceph_conf, rgw_port
from storbench.lab.labdir import (
    LabDir,
    default_lab_dir,
    kill_daemons,
    port_open,
)
from storbench.lab.process import start_daemon
from storbench.model.ceph_options import same_value
from storbench.shell import run

if TYPE_CHECKING:
    from storbench.model import Case, LabPoint
    from storbench.targets.s3 import S3Service

DEFAULT_LAB_DIR = default_lab_dir()
RGW_USER = "storbench"
READY_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class CephLabInfo:
    root: str
    conf: str
    fsid: str
    spec: CephLabSpec
    cephfs_mount: str | None
    address: str = LOOPBACK


def rgw_endpoint(info: CephLabInfo) -> str:
    """The lab radosgw's S3 endpoint URL."""
    return f"http://{info.address}:{rgw_port(info.spec.slot)}"


class CephLab:
    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(os.path.abspath(root or DEFAULT_LAB_DIR / "ceph"))  # no resolve(): links are refused
        self.dir = LabDir(self.root)  # its state file, daemon records and removal
        self.conf = self.root / "ceph.conf"
        self.state = self.dir.state

    @classmethod
    def for_slot(cls, slot: int) -> CephLab:
        """The lab cluster in ``slot`` of several side by side: ``ceph`` for the first, ``ceph-2``, ... after it."""
        return cls(DEFAULT_LAB_DIR / ("ceph" if slot == 0 else f"ceph-{slot + 1}"))

    @classmethod
    def side_by_side(cls, root: Path | None = None) -> list[CephLab]:
        """Every cluster slot beside the one at ``root`` (its ``-2``, ``-3``, ... siblings), for `lab ceph down`."""
        from storbench.lab.ceph_conf import SIDE_BY_SIDE_MAX

        first = Path(os.path.abspath(root or DEFAULT_LAB_DIR / "ceph"))
        return [cls(first.with_name(f"{first.name}-{slot + 1}")) for slot in range(1, SIDE_BY_SIDE_MAX)]

    # ---- queries ----------------------------------------------------------------------------------------
    def ceph(self, *args: str, timeout_s: float = 60) -> str:
        return run(["ceph", "-c", str(self.conf), *args], timeout_s=timeout_s)

    def ceph_json(self, *args: str) -> object:
        return json.loads(self.ceph(*args, "-f", "json"))

    def info(self) -> CephLabInfo | None:
        raw = self.dir.read_state()
        if raw is None:
            return None
        spec_raw = raw["spec"]
        spec_raw["pools"] = tuple(tuple(p) for p in spec_raw["pools"])
        spec_raw["osd_config"] = tuple(tuple(p) for p in spec_raw.get("osd_config", ()))
        return CephLabInfo(root=raw["root"], conf=raw["conf"], fsid=raw["fsid"], spec=CephLabSpec(**spec_raw),
                           cephfs_mount=raw.get("cephfs_mount"), address=raw.get("address", LOOPBACK))

    def running(self) -> bool:
        return self.dir.exists() and bool(self.dir.live())

    def status(self) -> str:
        info = self.info()
        if info is None:
            return f"ceph lab: down ({self.root} holds no lab)"
        if not self.running():
            return f"ceph lab: stopped but not removed ({self.root}); run `storbench lab ceph down`"
        health = self.ceph("health").strip()
        return (f"ceph lab: up, {health}; conf {info.conf}; osds {info.spec.osds} ({info.spec.objectstore}); pools "
                + ", ".join(f"{n} (size {s})" for n, s in info.spec.pools)
                + (f"; cephfs mounted at {info.cephfs_mount}" if info.cephfs_mount else "")
                + (f"; S3 (radosgw) at {rgw_endpoint(info)}" if info.spec.rgw else ""))

    # ---- lifecycle --------------------------------------------------------------------------------------
    def up(self, spec: CephLabSpec, address: str = LOOPBACK) -> CephLabInfo:
        """Bring the cluster up with its daemons on ``address`` (reused when one like it is running)."""
        current = self.info()
        if current is not None and current.spec == spec and current.address == address and self.running():
            try:
                self._wait_ready(spec, timeout_s=30)
                return current
            except UserError:
                pass
        self.down()
        started = time.time()
        self.dir.ensure()
        for sub in ("run", "log"):
            (self.root / sub).mkdir(exist_ok=True)
        fsid = str(uuid.uuid4())
        self.conf.write_text(render_ceph_conf(spec, fsid, str(self.root), address))
        try:
            self._create_mon(fsid, address, spec.slot)
            self._create_mgr()
            self._set_osd_options(spec.osd_config, ())
            if spec.db_size_bytes is not None:
                self._mount_fast_db(spec)
            slices: list[str] = []
            if spec.osds_per_device:
                from storbench.lab import devices

                assert spec.devices is not None and spec.device_size_bytes is not None
                slices = devices.create(self.root, spec.devices, spec.osds_per_device, spec.device_size_bytes)
            self._create_osds(spec, slices)
            self._wait_ready(spec, timeout_s=READY_TIMEOUT_S)
            self._check_osd_options(spec)
            self._create_pools(spec)
            mount = self._create_cephfs() if spec.cephfs else None
            if spec.rgw:
                self._create_rgw(spec, address)
        except BaseException:
            self.down()
            raise
        info = CephLabInfo(root=str(self.root), conf=str(self.conf), fsid=fsid, spec=spec, cephfs_mount=mount,
                           address=address)
        self.state.write_text(json.dumps({**asdict(info), "up_seconds": round(time.time() - started, 1),
                                          "osd_config": spec.osd_config}))
        return info

    def osd_options(self) -> tuple[tuple[str, str], ...]:
        """The OSD options the running cluster was last given (at bring-up or by ``apply_osd_options``)."""
        try:
            raw = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return ()
        return tuple((str(k), str(v)) for k, v in raw.get("osd_config", ()))

    def apply_osd_options(self, options: tuple[tuple[str, str], ...]) -> float | None:
        """Give the running cluster's OSDs ``options`` (every option they should run with): `ceph config set`
        for new values, `ceph config rm` for options no longer wanted, then restart the OSDs, wait until all
        PGs are active+clean, and read every value back from every OSD's admin socket. Returns the seconds it
        took, or None when the OSDs already run with exactly these options."""
        info = self.info()
        if info is None or not self.running():
            raise UserError("ceph lab: not running, cannot change its OSD options", hint="bring it up first")
        current = self.osd_options()
        if current == options:
            return None
        if info.spec.objectstore != "bluestore":
            raise UserError("ceph lab: OSD options change with an OSD restart, and a memstore OSD loses its data "
                            "when it restarts", hint="use objectstore: bluestore to sweep OSD options")
        started = time.time()
        self._set_osd_options(options, current)
        self._restart_osds(info.spec)
        self._check_osd_options(replace(info.spec, osd_config=options))
        raw = json.loads(self.state.read_text())
        raw["osd_config"] = options
        self.state.write_text(json.dumps(raw))
        return time.time() - started

    def osd_cpus(self) -> float | None:
        """The CPU quota per OSD (cores) the running OSDs were last given; None: none."""
        try:
            value = json.loads(self.state.read_text()).get("osd_cpus")
        except (OSError, ValueError):
            return None
        return None if value is None else float(value)

    def limit_osd_cpus(self, cores: float | None) -> bool:
        """Give every running OSD a cgroup of its own with a quota of ``cores`` (None: no quota), at once, no
        restart. Returns whether anything changed."""
        from storbench.lab import cpu_quota

        if cores == self.osd_cpus() and (cores is None or self._osd_groups_hold_osds()):
            return False
        daemons = {d.name: d.pid for d in self.dir.live() if d.name.startswith("osd.")}
        cpu_quota.limit(self.root.name, daemons, cores)
        raw = json.loads(self.state.read_text())
        raw["osd_cpus"] = cores
        self.state.write_text(json.dumps(raw))
        return True

    def pin_osds(self, cpus: str | None) -> bool:
        """Put every running OSD in a cpuset of its own on ``cpus`` (None: all CPUs), at once, no restart.
        Returns whether anything changed."""
        from storbench.lab import cpu_quota

        raw = json.loads(self.state.read_text())
        osds = {d.name: d.pid for d in self.dir.live() if d.name.startswith("osd.")}
        pinned = raw.get("osd_cpuset_pids")
        if raw.get("osd_cpuset") == cpus and pinned == sorted(osds.values()):
            return False
        if cpus is None and raw.get("osd_cpuset") is None:
            return False
        cpu_quota.pin(self.root.name, osds, cpus)
        raw["osd_cpuset"], raw["osd_cpuset_pids"] = cpus, sorted(osds.values())
        self.state.write_text(json.dumps(raw))
        return True

    def osd_cpu_limits(self) -> dict[str, float | None]:
        """Each running OSD's CPU quota in cores, read back from its cgroup (None: unlimited)."""
        from storbench.lab import cpu_quota

        ctl = cpu_quota.controller()
        if ctl is None:
            return {}
        return {d.name: cpu_quota.read_limit(cpu_quota.group_dir(ctl, self.root.name, d.name))
                for d in self.dir.live() if d.name.startswith("osd.")
                and cpu_quota.group_dir(ctl, self.root.name, d.name).exists()}

    def _osd_groups_hold_osds(self) -> bool:
        """Whether each running OSD is in its quota cgroup (a restart starts it outside)."""
        from storbench.lab import cpu_quota

        ctl = cpu_quota.controller()
        if ctl is None:
            return False
        for daemon in self.dir.live():
            if daemon.name.startswith("osd."):
                procs = cpu_quota.group_dir(ctl, self.root.name, daemon.name) / "cgroup.procs"
                if not procs.exists() or str(daemon.pid) not in procs.read_text().split():
                    return False
        return True

    def osd_option_values(self, name: str) -> dict[str, str]:
        """What every running OSD says option ``name`` is, by OSD, from its admin socket."""
        shown = {}
        for socket in sorted((self.root / "run").glob("ceph-osd.*.asok")):
            raw = json.loads(run(["ceph", "--admin-daemon", str(socket), "config", "get", name], timeout_s=30))
            shown[socket.name.removeprefix("ceph-").removesuffix(".asok")] = str(raw[name])
        return shown

    def down(self) -> None:
        """Unmount, kill the daemons this lab recorded, remove the directory. Safe when nothing is up."""
        if not self.dir.exists():
            return
        mount = self.root / "mnt" / "cephfs"
        if os.path.ismount(mount):
            for command in (["fusermount", "-uz", str(mount)], ["umount", "-l", str(mount)]):
                try:
                    run(command, timeout_s=20)
                    break
                except UserError:
                    continue
        self.dir.kill()
        fast = self.root / "fastdb"
        if os.path.ismount(fast):
            run(["umount", "-l", str(fast)], timeout_s=30)
        from storbench.lab import devices

        devices.remove(self.root)
        from storbench.lab import cpu_quota

        cpu_quota.remove_groups(self.root.name)
        cpu_quota.remove_cpusets(self.root.name)
        self.dir.remove()

    # ---- steps ------------------------------------------------------------------------------------------
    def _start(self, name: str, argv: list[str]) -> None:
        """A daemon in the foreground of its own session; its pid and start time go to the lab's pids.json."""
        self.dir.record(name, start_daemon(argv, self.root / "log" / f"{name}.out"))

    def _create_mon(self, fsid: str, address: str, slot: int) -> None:
        mon_keyring = self.root / "mon.keyring"
        admin_keyring = self.root / "ceph.client.admin.keyring"
        run(["ceph-authtool", "--create-keyring", str(mon_keyring), "--gen-key", "-n", "mon.", "--cap", "mon",
             "allow *"])
        run(["ceph-authtool", "--create-keyring", str(admin_keyring), "--gen-key", "-n", "client.admin",
             "--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mds", "allow *", "--cap", "mgr",
             "allow *"])
        run(["ceph-authtool", str(mon_keyring), "--import-keyring", str(admin_keyring)])
        monmap = self.root / "monmap"
        run(["monmaptool", "--create", "--addv", "a", mon_address(address, slot), "--fsid", fsid, str(monmap)])
        (self.root / "mon.a").mkdir()
        run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(monmap), "--keyring",
             str(mon_keyring)])
        self._start("mon.a", ["ceph-mon", "-f", "-c", str(self.conf), "-i", "a"])
        self._wait(lambda: bool(self.ceph("mon", "stat", timeout_s=10)), "the monitor to answer", 60)

    def _create_mgr(self) -> None:
        directory = self.root / "mgr.x"
        directory.mkdir()
        self.ceph("auth", "get-or-create", "mgr.x", "mon", "allow profile mgr", "osd", "allow *", "mds", "allow *",
                  "-o", str(directory / "keyring"))
        self._start("mgr.x", ["ceph-mgr", "-f", "-c", str(self.conf), "-i", "x"])

    def _mount_fast_db(self, spec: CephLabSpec) -> None:
        """A tmpfs for the OSDs' DB devices (RocksDB and WAL in memory: the stand-in for a fast device), sized
        for all of them, private to root."""
        assert spec.db_size_bytes is not None
        fast = self.root / "fastdb"
        fast.mkdir(mode=0o700)
        size = spec.db_size_bytes * spec.osds + (64 << 20)
        run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700,nosuid,nodev,noexec", "storbench-fastdb",
             str(fast)], timeout_s=30)

    def osd_db_devices(self) -> dict[str, dict[str, str]]:
        """Each OSD's BlueFS view of its devices, from the cluster's OSD metadata (bluefs_dedicated_db, the DB
        path and size): what a test reads back."""
        raw = self.ceph_json("osd", "metadata")
        assert isinstance(raw, list)
        return {f"osd.{m['id']}": {k: str(v) for k, v in m.items() if k.startswith("bluefs")} for m in raw}

    def _create_osds(self, spec: CephLabSpec, slices: list[str] | None = None) -> None:
        """Create and start the OSDs: each on a sparse file in its directory, or, given ``slices`` (device paths,
        one per OSD), on that device."""
        ids = []
        for _ in range(spec.osds):
            osd_uuid = str(uuid.uuid4())
            osd_id = int(self.ceph("osd", "new", osd_uuid).strip())
            directory = self.root / f"osd.{osd_id}"
            directory.mkdir()
            self.ceph("auth", "get-or-create", f"osd.{osd_id}", "mon", "allow profile osd", "mgr",
                      "allow profile osd", "osd", "allow *", "-o", str(directory / "keyring"))
            ids.append((osd_id, osd_uuid))

        block = dict(zip((osd_id for osd_id, _ in ids), slices or (), strict=False))

        def mkfs(item: tuple[int, str]) -> None:
            osd_id, osd_uuid = item
            # one OSD's own device, on its command line: in ceph.conf's [osd] it would be every OSD's
            on_device = (["--bluestore-block-path", block[osd_id], "--bluestore-block-create", "false"]
                         if osd_id in block else [])
            run(["ceph-osd", "-c", str(self.conf), "-i", str(osd_id), "--mkfs", "--osd-uuid", osd_uuid, *on_device],
                timeout_s=180)

        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(mkfs, ids))
        for osd_id, _ in ids:
            self._start(f"osd.{osd_id}", ["ceph-osd", "-f", "-c", str(self.conf), "-i", str(osd_id)])

    def _set_osd_options(self, options: tuple[tuple[str, str], ...], current: tuple[tuple[str, str], ...]) -> None:
        """The OSDs' options in the monitors' config database (read by an OSD when it starts)."""
        wanted = dict(options)
        for name, value in options:
            if dict(current).get(name) != value:
                self.ceph("config", "set", "osd", name, value)
        for name, _ in current:
            if name not in wanted:
                self.ceph("config", "rm", "osd", name)

    def _check_osd_options(self, spec: CephLabSpec) -> None:
        for name, value in spec.osd_config:
            shown = self.osd_option_values(name)
            wrong = {osd: v for osd, v in shown.items() if not same_value(value, v)}
            if len(shown) < spec.osds or wrong:
                raise UserError(f"ceph lab: the OSDs do not run with {name}={value} ("
                                + (", ".join(f"{osd} says {v}" for osd, v in sorted(wrong.items())) if wrong
                                   else f"{len(shown)} of {spec.osds} OSDs answered") + ")",
                                hint=f"see the OSD logs in {self.root / 'log'}")

    def _restart_osds(self, spec: CephLabSpec) -> None:
        """Stop every OSD (SIGTERM: it tells the monitors it is going down), start them again, and wait until
        each is up again in a later map than before and all PGs are active+clean."""
        epoch = self._osd_epoch()
        osds = [d for d in self.dir.daemons() if d.name.startswith("osd.")]
        kill_daemons(osds, graceful_s=30)
        self.dir.forget([d.name for d in osds])
        for daemon in osds:
            osd_id = daemon.name.removeprefix("osd.")
            self._start(daemon.name, ["ceph-osd", "-f", "-c", str(self.conf), "-i", osd_id])
        self._wait(lambda: self._restarted(spec, epoch), f"{spec.osds} restarted OSDs up and all PGs active+clean",
                   READY_TIMEOUT_S)

    def _osd_epoch(self) -> int:
        dump = self.ceph_json("osd", "dump")
        assert isinstance(dump, dict)
        return int(dump["epoch"])

    def _restarted(self, spec: CephLabSpec, epoch: int) -> bool:
        dump = self.ceph_json("osd", "dump")
        assert isinstance(dump, dict)
        osds = dump.get("osds", [])
        fresh = [o for o in osds if o.get("up") == 1 and int(o.get("up_from", 0)) > epoch]
        return len(fresh) >= spec.osds and self._pgs_clean()

    def _ready(self, spec: CephLabSpec) -> bool:
        osd_stat = self.ceph_json("osd", "stat")
        assert isinstance(osd_stat, dict)
        if int(osd_stat.get("num_up_osds", 0)) < spec.osds:
            return False
        mgr = self.ceph_json("mgr", "stat")
        if not (isinstance(mgr, dict) and mgr.get("available")):
            return False
        pools = self.ceph_json("osd", "pool", "ls")
        if not (isinstance(pools, list) and "device_health_metrics" in pools):
            return False
        return self._pgs_clean()

    def _pgs_clean(self) -> bool:
        stat = self.ceph_json("pg", "stat")
        assert isinstance(stat, dict)
        summary = stat.get("pg_summary", stat)
        total = int(summary.get("num_pgs", 0))
        by_state = summary.get("num_pg_by_state", [])
        clean = sum(int(s.get("num", 0)) for s in by_state if s.get("name") == "active+clean")
        return total > 0 and clean == total

    def _wait_ready(self, spec: CephLabSpec, timeout_s: float) -> None:
        self._wait(lambda: self._ready(spec), f"{spec.osds} OSDs up, the mgr and all PGs active+clean", timeout_s)

    def _wait(self, check: Callable[[], bool], what: str, timeout_s: float) -> None:
        deadline = time.time() + timeout_s
        last_error = ""
        while time.time() < deadline:
            try:
                if check():
                    return
            except UserError as exc:
                last_error = exc.message
            time.sleep(0.5)
        logs = ", ".join(sorted(p.name for p in (self.root / "log").glob("*.log")))
        raise UserError(f"ceph lab: timed out after {timeout_s:g}s waiting for {what}"
                        + (f" (last error: {last_error})" if last_error else ""),
                        hint=f"see the daemon logs in {self.root / 'log'} ({logs})")

    def _create_pools(self, spec: CephLabSpec) -> None:
        for name, size in spec.pools:
            self.ceph("osd", "pool", "create", name, str(spec.pg_num), str(spec.pg_num))
            self.ceph("osd", "pool", "set", name, "size", str(size), "--yes-i-really-mean-it")
            self.ceph("osd", "pool", "set", name, "min_size", "1")
            self.ceph("osd", "pool", "application", "enable", name, "rbd")
        self._wait(self._pgs_clean, "the pools' PGs to become active+clean", READY_TIMEOUT_S)

    def _create_rgw(self, spec: CephLabSpec, address: str) -> None:
        """radosgw on ``address``:``rgw_port``, serving S3 (path-style) from the lab's pools, which it creates."""
        directory = self.root / "rgw.a"
        directory.mkdir()
        self.ceph("auth", "get-or-create", "client.rgw.a", "mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw",
                  "-o", str(directory / "keyring"))
        port = rgw_port(spec.slot)
        self._start("rgw.a", ["radosgw", "-f", "-c", str(self.conf), "-n", "client.rgw.a",
                              "--keyring", str(directory / "keyring"), "--rgw-data", str(directory),
                              "--rgw-frontends", f"beast endpoint={address}:{port} tcp_nodelay=1",
                              "--admin-socket", str(self.root / "run" / "ceph-client.rgw.a.asok"),
                              "--log-file", str(self.root / "log" / "rgw.a.log"),
                              "--rgw-enable-usage-log", "false"])
        self._wait(lambda: port_open(address, port, timeout_s=2), "radosgw to answer on S3", 120)

    def s3_credentials(self) -> tuple[str, str]:
        """The lab's S3 user (made on first use): (access key, secret key), from radosgw-admin, never written to
        the lab's state or to results."""
        args = ["radosgw-admin", "-c", str(self.conf), "-n", "client.admin"]
        try:
            raw = json.loads(run([*args, "user", "info", "--uid", RGW_USER], timeout_s=60))
        except UserError:
            raw = json.loads(run([*args, "user", "create", "--uid", RGW_USER, "--display-name", "storbench lab"],
                                 timeout_s=60))
        key = raw["keys"][0]
        return str(key["access_key"]), str(key["secret_key"])

    def _create_cephfs(self) -> str:
        directory = self.root / "mds.a"
        directory.mkdir()
        self.ceph("auth", "get-or-create", "mds.a", "mon", "allow profile mds", "osd", "allow rwx", "mds",
                  "allow", "mgr", "allow profile mds", "-o", str(directory / "keyring"))
        self._start("mds.a", ["ceph-mds", "-f", "-c", str(self.conf), "-i", "a"])
        self.ceph("osd", "pool", "create", "cephfs_metadata", "16", "16")
        self.ceph("osd", "pool", "create", "cephfs_data", "32", "32")
        self.ceph("fs", "new", "labfs", "cephfs_metadata", "cephfs_data")
        self._wait(lambda: "up:active" in self.ceph("mds", "stat"), "the MDS to become active", 120)
        mount = self.root / "mnt" / "cephfs"
        mount.mkdir(parents=True)
        self._start("ceph-fuse", ["ceph-fuse", "-f", "-c", str(self.conf), str(mount)])
        self._wait(lambda: os.path.ismount(mount), "ceph-fuse to mount CephFS", 60)
        return str(mount)



# ---- Ceph as a lab kind (lab.registry) --------------------------------------------------------------------------

def _plan_default(name: str) -> int | str:
    """A Ceph lab setting's default: the plan schema's (`lab.ceph`), the one place defaults live."""
    from storbench.config import CephLabConfig

    default = CephLabConfig.model_fields[name].default
    value = default[0] if isinstance(default, list) else default
    assert isinstance(value, int | str)
    return value


def _command_options() -> tuple[CliOption, ...]:
    from storbench.units import format_bytes

    osds, osd_size, objectstore = (_plan_default(name) for name in ("osds", "osd_size", "objectstore"))
    return (
        CliOption(("--osds",), {"type": int, "default": osds, "help": f"number of OSDs (default {osds})"}),
        CliOption(("--osd-size",), {"default": format_bytes(int(osd_size)),
                                    "help": f"size of each OSD (default {format_bytes(int(osd_size))}, sparse file)"}),
        CliOption(("--objectstore",), {"choices": ("bluestore", "memstore"), "default": objectstore}),
        CliOption(("--pool",), {"action": "append", "metavar": "NAME:SIZE",
                                "help": "a pool and its replica size (repeatable; default rbd:3)"}),
        CliOption(("--cache-size",), {"default": None,
                                      "help": "BlueStore cache per OSD, autotune off (e.g. 256MiB)"}),
        CliOption(("--osd-memory-target",), {"default": None, "help": "osd_memory_target (>= 896MiB)"}),
        CliOption(("--cephfs",), {"action": "store_true", "help": "also run an MDS and mount CephFS with ceph-fuse"}),
        CliOption(("--rgw",), {"action": "store_true", "help": "also run radosgw, serving S3"}),
    )


def _command_up(lab: CephLab, args: argparse.Namespace, say: Say) -> None:
    from storbench.lab.ceph_conf import ceph_spec_for
    from storbench.model import CephLabPoint
    from storbench.units import parse_size_bytes

    pools = []
    for item in args.pool or [f"rbd:{_plan_default('pool_size')}"]:
        name, _, size = item.partition(":")
        if not name or not size.isdigit():
            raise UserError(f"--pool {item!r} is not NAME:SIZE", hint="e.g. --pool rbd2:2 --pool rbd3:3")
        pools.append((name, int(size)))
    try:
        point = CephLabPoint(
            osds=args.osds, osd_size_bytes=parse_size_bytes(args.osd_size), objectstore=args.objectstore,
            pool_size=0, cache_size_bytes=parse_size_bytes(args.cache_size) if args.cache_size else None,
            osd_memory_target_bytes=parse_size_bytes(args.osd_memory_target) if args.osd_memory_target else None,
            cephfs=args.cephfs, rgw=args.rgw)
        spec = ceph_spec_for(point, tuple(pools))
    except ValueError as exc:
        raise UserError(str(exc), hint="sizes look like 2GiB, 512MiB") from None
    if any(size > spec.osds for _, size in spec.pools):
        raise UserError(f"a pool of size {max(s for _, s in spec.pools)} needs as many OSDs, --osds is {spec.osds}")
    say(f"ceph lab: bringing up {spec.osds} OSDs ({spec.objectstore}) in {lab.root} ...")
    info = lab.up(spec)
    say(f"ceph lab: up; conf {info.conf}")
    say("pools: " + ", ".join(f"{n} (size {s})" for n, s in spec.pools))
    if info.cephfs_mount:
        say(f"cephfs: mounted at {info.cephfs_mount}")
    if info.spec.rgw:
        say(f"s3: radosgw at {rgw_endpoint(info)} (keys: radosgw-admin -c {info.conf} user info --uid {RGW_USER})")
    say(f"try: CEPH_CONF={info.conf} ceph -s")


def _command_down(lab: CephLab, say: Say) -> None:
    lab.down()
    say(f"ceph lab: down; {lab.root} removed")
    for beside in CephLab.side_by_side(lab.root):  # clusters a side-by-side run left behind
        if beside.root.exists():
            beside.down()
            say(f"ceph lab: down; {beside.root} removed")


def _lab_s3(ceph_lab: CephLab, info: CephLabInfo) -> S3Service:
    """The lab radosgw as an S3 service for the run: its S3 user (made on first use; the keys stay in memory)
    and storbench's bucket on it."""
    from storbench.s3sign import S3Credentials
    from storbench.targets.s3 import LAB_BUCKET, S3Service, create_bucket

    service = S3Service(rgw_endpoint(info), "us-east-1", S3Credentials(*ceph_lab.s3_credentials()))
    create_bucket(service, LAB_BUCKET)
    return service


@runtime_checkable
class _AnswersCeph(Protocol):
    def ceph(self, *args: str, timeout_s: float = 60) -> str: ...


ON_CLUSTER_KINDS = ("rbd", "cephfs", "s3")  # the target kinds a lab cluster serves: prepared on it as it comes up


class CephKind(LabKindBase):
    """The Ceph lab: one cluster for each lab configuration with `lab.ceph`, or several side by side, each on its
    own ports and directory; it prepares the targets that live on it (rbd images, CephFS directories, S3 on its
    radosgw) as each cluster comes up, offers telemetry its OSDs' admin sockets, and applies each case's live
    OSD options (cache size, memory target, `lab.ceph.config`, CPU quota and pinning) before its turn."""

    name = "ceph"
    command: LabCommand[CephLab] = LabCommand(
        help="a Ceph cluster (mon, mgr, OSDs) from Debian's packages on this machine",
        open=lambda root: CephLab(root), up=_command_up, down=_command_down, options=_command_options)

    def wanted(self, group: LabGroup) -> bool:
        return group.lab.ceph is not None

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:
        from storbench.lab.ceph_conf import ceph_spec_for, clusters_of, osd_options, rbd_pools
        from storbench.lab.hosts import HostsLab
        from storbench.lab.hosts_conf import BRIDGE_ADDRESS
        from storbench.model import cluster_of
        from storbench.targets.registry import LabEnvironment, by_target
        from storbench.units import format_bytes

        cases, observer, checked = group.cases, group.observer, group.checked
        lab_hosts = group.loaded.config.lab.hosts if group.loaded.config.lab else None
        clusters = clusters_of(cases)
        if len(clusters) > 1:
            from storbench.checks import meminfo_bytes
            from storbench.plan import cluster_memory_needs

            needed = sum(need.amount for cluster in clusters  # the same arithmetic `plan` checked, memory now
                         for need in cluster_memory_needs([c for c in cases if cluster_of(c.lab) == cluster]))
            available = meminfo_bytes("MemAvailable")
            if available is not None and needed > available:
                raise UserError(f"ceph lab: {len(clusters)} clusters side by side need about {format_bytes(needed)} "
                                f"of memory, {format_bytes(available)} is available",
                                hint="use lab.ceph.bring_up: each_repetition (one cluster at a time)")
        for slot, cluster in enumerate(clusters):
            assert cluster.ceph is not None
            on_cluster = [c for c in cases if cluster_of(c.lab) == cluster]
            pools = rbd_pools(on_cluster)
            # the OSDs start with the first case's options: no restart before the first repetition
            first = next(c.lab.ceph for c in on_cluster if c.lab.ceph is not None)
            lab_spec = replace(ceph_spec_for(cluster.ceph, tuple(pools.values())), osd_config=osd_options(first),
                               slot=slot)
            settings = " ".join(part for part in cluster.describe().split() if not part.startswith("pool_size="))
            shown = ", ".join(f"{name} (size {size})" for name, size in lab_spec.pools)
            beside = f" (cluster {slot + 1} of {len(clusters)} side by side)" if len(clusters) > 1 else ""
            observer.lab_event(f"ceph lab: bringing up {settings}{beside}" + (f"; pools {shown}" if shown else ""))
            ceph_lab = CephLab.for_slot(slot)
            started = time.time()
            labs.downs.append(ceph_lab.down)
            # fio servers in network namespaces reach the cluster over their bridge, and find its conf
            info = ceph_lab.up(lab_spec, address=BRIDGE_ADDRESS if lab_hosts is not None else LOOPBACK)
            if lab_hosts is not None:
                shutil.copyfile(info.conf, HostsLab().ceph_conf)
            labs.running[cluster] = ceph_lab
            labs.sockets_by_cluster[cluster] = (f"{info.root}/run/*.asok",)
            observer.lab_event(f"ceph lab: up in {time.time() - started:.0f}s ({info.conf})")
            env = LabEnvironment(fio_binary=checked.capabilities.binary, ceph_conf=info.conf,
                                 cephfs_mount=info.cephfs_mount, nfs_url=labs.environment.nfs_url,
                                 servers=group.servers, s3=_lab_s3(ceph_lab, info) if info.spec.rgw else None)
            on_ceph = {name: target_group for name, target_group in by_target(on_cluster).items()
                       if name not in checked.targets and target_group[0].target.kind in ON_CLUSTER_KINDS}
            labs.prepare(on_ceph, env, f" ({settings})" if len(clusters) > 1 else "", len(clusters) > 1)
        # rbd, cephfs and s3 targets of the user's own cluster (no Ceph lab) are left to be prepared once
        on_a_lab_cluster = {c.case_id for c in cases if c.lab.ceph is not None}
        labs.claimed.update(name for name, target_group in by_target(cases).items()
                            if name not in checked.targets and target_group[0].target.kind in ON_CLUSTER_KINDS
                            and target_group[0].case_id in on_a_lab_cluster)

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> str | None:
        from storbench.model import cluster_of, interleaved_setting

        ceph_lab = running.get(cluster_of(case.lab))
        if not isinstance(ceph_lab, CephLab) or case.lab.ceph is None:
            return None
        from storbench.lab.ceph_conf import osd_options

        options = osd_options(case.lab.ceph)
        seconds = ceph_lab.apply_osd_options(options)
        cpus_changed = ceph_lab.limit_osd_cpus(case.lab.ceph.osd_cpus)  # after a restart: the new OSD processes
        pinned = ceph_lab.pin_osds(case.lab.ceph.osd_cpuset)
        if seconds is None and not cpus_changed and not pinned:
            return None
        live = " ".join(part for part in case.lab.describe().split()
                        if interleaved_setting(name := part.partition("=")[0]) and name not in ("pool_size", "cephfs"))
        if seconds is None:
            cores, cpus = case.lab.ceph.osd_cpus, case.lab.ceph.osd_cpuset
            said = []
            if cpus_changed:
                said.append(f"CPU quota {'lifted' if cores is None else f'set to {cores:g} cores per OSD'}")
            if pinned:
                said.append("pinned to every CPU" if cpus is None else f"pinned to CPUs {cpus}")
            return "ceph lab: OSD " + ", ".join(said)
        return f"ceph lab: OSDs restarted with {live or 'the base options'} in {seconds:.0f}s"

    def health(self, case: Case, running: Mapping[LabPoint, object]) -> str | None:
        """The health of the lab cluster ``case`` runs on, in one line (`ceph health detail`'s summary and its
        first checks); None off a lab cluster or when the cluster does not answer."""
        from storbench.model import cluster_of

        lab = running.get(cluster_of(case.lab))
        if not isinstance(lab, _AnswersCeph):
            return None
        try:
            lines = [line.strip() for line in lab.ceph("health", "detail", timeout_s=15).splitlines() if line.strip()]
        except UserError as exc:
            return f"the cluster did not answer `ceph health` ({exc.message})"
        return "; ".join(lines[:4]) or None


KIND = CephKind()
