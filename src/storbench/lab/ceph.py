"""A real Ceph cluster on this machine from Debian's packages (shell): mon, mgr, OSDs on sparse files.

`up` writes a private ceph.conf and keyrings under the lab directory (root's, 0700: see lab.labdir), starts the
daemons directly (no systemd, no ceph-volume) and records their pids, waits for HEALTH_OK-grade readiness and
creates the pools. `down` unmounts its ceph-fuse mount, kills exactly the daemons it recorded and removes the
directory. `up` with the same spec is a no-op.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from storbench.errors import UserError
from storbench.lab.ceph_conf import LOOPBACK, CephLabSpec, mon_address, render_ceph_conf, rgw_port
from storbench.lab.ceph_options import same_value
from storbench.lab.labdir import (
    LabDir,
    default_lab_dir,
    kill_daemons,
    port_open,
)
from storbench.lab.process import start_daemon
from storbench.shell import run

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
        if not self.dir.exists():
            return None
        try:
            raw = json.loads(self.state.read_text())
        except (OSError, ValueError):
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

