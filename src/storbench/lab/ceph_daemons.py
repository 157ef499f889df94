"""One lab Ceph cluster's directory and daemons (shell): monitor commands on its conf, its state file read back,
and the steps `lab.ceph.CephLab.up` brings it up with: keyrings, monitor, manager, OSDs (on sparse files or device
slices, a tmpfs for their DB devices), pools, radosgw and CephFS, each waited for until the cluster says it is
ready.

Monitor commands go through librados (`ceph_client.RadosClient`, JSON in and out, a millisecond each; one
connection for a whole bring-up or heal: `connected`), not the ceph CLI, which costs a core for a third of a
second a call: a bring-up asked it about 30 times, most of its 16 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from storbench.ceph_client import RadosClient
from storbench.errors import UserError
from storbench.lab.base import LabLost
from storbench.lab.ceph_conf import (
    LOOPBACK,
    MGR_MODULES,
    MGR_SHARED,
    CephLabSpec,
    abort_cause,
    lost_hint,
    mon_address,
    mon_ports,
    rgw_port,
)
from storbench.lab.labdir import LabRoot, port_open
from storbench.lab.process import alive
from storbench.shell import run
from storbench.telemetry.cluster_state import pg_stat_sample

RGW_USER = "storbench"
READY_TIMEOUT_S = 180.0
MGR_MODULE_DIR = Path("/usr/share/ceph/mgr")  # Debian's ceph-mgr
POLL_S = 0.2  # between two looks at the cluster while waiting (a look costs a millisecond through librados)


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


class CephDaemons(LabRoot):
    """A lab cluster's directory (see `LabRoot`) and the daemons in it."""

    def __init__(self, root: Path | None, default: Path) -> None:
        super().__init__(root, default)
        self.conf = self.root / "ceph.conf"
        self._rados: RadosClient | None = None

    # ---- queries ----------------------------------------------------------------------------------------
    def ceph(self, *args: str, timeout_s: float = 60) -> str:
        """The ceph CLI on the lab's conf: for text meant for people (`health detail`) only."""
        return run(["ceph", "-c", str(self.conf), *args], timeout_s=timeout_s)

    @contextlib.contextmanager
    def connected(self) -> Iterator[None]:
        """One librados connection for every monitor command in the block (a bring-up, a heal)."""
        if self._rados is not None:
            yield
            return
        self._rados = self._connect()
        try:
            yield
        finally:
            client, self._rados = self._rados, None
            client.close()

    def _connect(self) -> RadosClient:
        try:
            return RadosClient(str(self.conf), "admin", op_timeout_s=60)
        except OSError as error:
            raise UserError(f"ceph lab: cannot reach its monitor ({error})",
                            hint=self._logs_hint()) from None

    def _logs_hint(self, which: str = "") -> str:
        return (f"see the daemon logs in {self.root / 'log'}{which} (a run tears its lab down, logs and all, unless "
                "given --keep-lab)")

    def mon(self, prefix: str, **arguments: object) -> Any:
        """A monitor command's JSON answer (the manager's commands too: the monitor passes them on); None for
        commands that answer nothing."""
        client = self._rados or self._connect()
        try:
            return client.mon_command({"prefix": prefix, **arguments})
        except OSError as error:
            raise UserError(f"ceph lab: `{prefix}` failed: {error}",
                            hint=self._logs_hint()) from None
        finally:
            if client is not self._rados:
                client.close()

    def _keyring(self, entity: str, caps: list[str], path: Path) -> None:
        """``entity``'s key (made with ``caps`` the first time) written as a keyring file."""
        answer = self.mon("auth get-or-create", entity=entity, caps=caps)
        key = answer[0]["key"] if isinstance(answer, list) else answer["key"]
        path.write_text(f"[{entity}]\n\tkey = {key}\n")
        path.chmod(0o600)

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

    def lost(self, stopped: frozenset[str] = frozenset()) -> LabLost | None:
        """The daemons that stopped while the lab was up, but those a fault ``stopped`` on purpose, and why the
        first one's log says it did, in one line, with what to do about it; None when every other daemon runs."""
        gone = [name for name in self.dir.lost() if name not in stopped]
        if not gone:
            return None
        log = self.root / "log" / f"{gone[0]}.log"
        try:
            with log.open("rb") as f:
                f.seek(max(0, log.stat().st_size - 256 * 1024))
                cause = abort_cause(f.read().decode(errors="replace"))
        except OSError:
            cause = None
        said = f" ({gone[0]}'s log: {cause})" if cause else ""
        return LabLost(f"ceph lab: {', '.join(gone)} stopped during the run{said}; logs in {self.root / 'log'}",
                       lost_hint(cause))

    # ---- steps ------------------------------------------------------------------------------------------
    def _start(self, name: str, argv: list[str]) -> int:
        """A daemon in the foreground of its own session; its pid and start time go to the lab's pids.json."""
        return self.dir.start(name, argv, self.root / "log" / f"{name}.out").pid

    def _serving(self, name: str, argv: list[str], address: str, port: int, what: str, timeout_s: float) -> None:
        """Start ``name`` to listen on ``address``:``port`` and wait until it does. A port another process holds is
        refused first, and the daemon must still be alive when the port answers: one that failed to bind had been
        taken as up while a local user's process answered (and got the lab's signed requests and test data)."""
        if port_open(address, port, timeout_s=1):
            raise UserError(f"ceph lab: {address}:{port} is in use by another process; {name} would not listen there",
                            hint=f"see what listens there (ss -ltnp 'sport = :{port}'), or bring the lab up on "
                            "another slot")
        pid = self._start(name, argv)
        self._wait(lambda: alive(pid) and port_open(address, port, timeout_s=2), what, timeout_s)
        if not alive(pid):
            raise UserError(f"ceph lab: {name} exited after its port opened", hint=f"see {self.root / 'log'}")

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
        self._serving("mon.a", ["ceph-mon", "-f", "-c", str(self.conf), "-i", "a"], address, mon_ports(slot)[0],
                      "the monitor to listen", 60)

    def _create_mgr(self) -> None:
        directory = self.root / "mgr.x"
        directory.mkdir()
        modules = self.root / "mgr-modules"
        modules.mkdir()
        for name in (*MGR_MODULES, *MGR_SHARED):
            if (MGR_MODULE_DIR / name).exists():
                (modules / name).symlink_to(MGR_MODULE_DIR / name)
        self._keyring("mgr.x", ["mon", "allow profile mgr", "osd", "allow *", "mds", "allow *"], directory / "keyring")
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
        raw = self.mon("osd metadata")
        assert isinstance(raw, list)
        return {f"osd.{m['id']}": {k: str(v) for k, v in m.items() if k.startswith("bluefs")} for m in raw}

    def _create_osds(self, spec: CephLabSpec, slices: list[str] | None = None) -> None:
        """Create and start the OSDs: each on a sparse file in its directory, or, given ``slices`` (device paths,
        one per OSD), on that device."""
        ids = []
        for _ in range(spec.osds):
            osd_uuid = str(uuid.uuid4())
            answer = self.mon("osd new", uuid=osd_uuid)
            osd_id = int(answer["osdid"] if isinstance(answer, dict) else answer)
            directory = self.root / f"osd.{osd_id}"
            directory.mkdir()
            self._keyring(f"osd.{osd_id}", ["mon", "allow profile osd", "mgr", "allow profile osd", "osd", "allow *"],
                          directory / "keyring")
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

    def _ready(self, spec: CephLabSpec) -> bool:
        osd_stat = self.mon("osd stat")
        assert isinstance(osd_stat, dict)
        # up and in: a kept cluster whose run ended with an OSD marked out (a fault never undone) had been reused,
        # its PGs clean again on the others, and measured as if whole
        if min(int(osd_stat.get("num_up_osds", 0)), int(osd_stat.get("num_in_osds", 0))) < spec.osds:
            return False
        mgr = self.mon("mgr stat")
        if not (isinstance(mgr, dict) and mgr.get("available")):
            return False
        pools = self.mon("osd pool ls")
        if not (isinstance(pools, list) and "device_health_metrics" in pools):
            return False
        return self._pgs_clean()

    def _pgs_clean(self) -> bool:
        stat = self.mon("pg stat")
        assert isinstance(stat, dict)
        clean, total = pg_tally(stat)
        return total > 0 and clean == total

    def _wait_ready(self, spec: CephLabSpec, timeout_s: float) -> None:
        self._wait(lambda: self._ready(spec), f"{spec.osds} OSDs up and in, the mgr and all PGs active+clean",
                   timeout_s)

    def _wait(self, check: Callable[[], bool], what: str, timeout_s: float,
              left: Callable[[], int | None] | None = None, ceiling_s: float = 0.0) -> None:
        """Until ``check()`` holds, for ``timeout_s``; with ``left`` (the work still to do, as the cluster says),
        for ``timeout_s`` after it last went down, up to ``ceiling_s`` in all (`waited_enough`)."""
        started = time.time()
        deadline, fewest = started + timeout_s, None
        last_error = ""
        while time.time() < deadline:
            try:
                if check():
                    return
                if left is not None:
                    deadline, fewest = waited_enough(started, deadline, fewest, left(), time.time(), timeout_s,
                                                     ceiling_s)
            except UserError as exc:
                last_error = exc.message
            time.sleep(POLL_S)
        logs = ", ".join(sorted(p.name for p in (self.root / "log").glob("*.log")))
        waited = time.time() - started
        why = "" if left is None or ceiling_s <= 0 or waited < timeout_s + 1 else (
            f" (still recovering at the {ceiling_s:g}s ceiling)" if deadline >= started + ceiling_s
            else f" (no progress in the last {timeout_s:g}s)")
        raise UserError(f"ceph lab: timed out after {waited if why else timeout_s:.0f}s waiting for {what}{why}"
                        + (f" (last error: {last_error})" if last_error else ""),
                        hint=self._logs_hint(f" ({logs})"))

    def _create_pools(self, spec: CephLabSpec) -> None:
        """The plan's pools, made while the OSDs boot (their PGs become active+clean with the rest: `_ready`)."""
        for name, size in spec.pools:
            self.mon("osd pool create", pool=name, pg_num=spec.pg_num, pgp_num=spec.pg_num)
            self.mon("osd pool set", pool=name, var="size", val=str(size), yes_i_really_mean_it=True)
            self.mon("osd pool set", pool=name, var="min_size", val="1")
            self.mon("osd pool application enable", pool=name, app="rbd")

    def _create_rgw(self, spec: CephLabSpec, address: str) -> None:
        """radosgw on ``address``:``rgw_port``, serving S3 (path-style) from the lab's pools, which it creates."""
        directory = self.root / "rgw.a"
        directory.mkdir()
        self._keyring("client.rgw.a", ["mon", "allow rw", "osd", "allow rwx", "mgr", "allow rw"],
                      directory / "keyring")
        port = rgw_port(spec.slot)
        self._serving("rgw.a", ["radosgw", "-f", "-c", str(self.conf), "-n", "client.rgw.a",
                                "--keyring", str(directory / "keyring"), "--rgw-data", str(directory),
                                "--rgw-frontends", f"beast endpoint={address}:{port} tcp_nodelay=1",
                                "--admin-socket", str(self.root / "run" / "ceph-client.rgw.a.asok"),
                                "--log-file", str(self.root / "log" / "rgw.a.log"),
                                "--rgw-enable-usage-log", "false"], address, port, "radosgw to answer on S3", 120)

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
        self._keyring("mds.a", ["mon", "allow profile mds", "osd", "allow rwx", "mds", "allow", "mgr",
                                "allow profile mds"], directory / "keyring")
        self._start("mds.a", ["ceph-mds", "-f", "-c", str(self.conf), "-i", "a"])
        self.mon("osd pool create", pool="cephfs_metadata", pg_num=16, pgp_num=16)
        self.mon("osd pool create", pool="cephfs_data", pg_num=32, pgp_num=32)
        self.mon("fs new", fs_name="labfs", metadata="cephfs_metadata", data="cephfs_data")
        self._wait(lambda: "up:active" in json.dumps(self.mon("mds stat")), "the MDS to become active", 120)
        mount = self.root / "mnt" / "cephfs"
        mount.mkdir(parents=True)
        self._start("ceph-fuse", ["ceph-fuse", "-f", "-c", str(self.conf), str(mount)])
        self._wait(lambda: os.path.ismount(mount), "ceph-fuse to mount CephFS", 60)
        return str(mount)



# ---- Ceph as a lab kind (lab.registry) --------------------------------------------------------------------------


def waited_enough(started_s: float, deadline_s: float, fewest: int | None, left: int | None, now_s: float,
                  stall_s: float, ceiling_s: float) -> tuple[float, int | None]:
    """A wait's (deadline, least work left seen since it last grew) after one more look at the work left (pure):
    each time it is less than that, the deadline moves to ``stall_s`` from now, never past ``ceiling_s`` from the
    start (a recovery that goes on is waited for; one that stalls is not). Work that grows (an OSD marked in again:
    the PG map said all clean until its backfill showed) is the new measure, nothing gained yet. None: the cluster
    did not say."""
    if left is None or left == fewest:
        return deadline_s, fewest
    if fewest is None or left > fewest:
        return deadline_s, left
    return max(deadline_s, min(now_s + stall_s, started_s + ceiling_s)), left


def recovery_left(pg_stat: dict[str, Any]) -> int | None:
    """The recovery work a cluster still has (pure), from the monitor's `pg stat`: objects degraded and misplaced,
    and PGs not active+clean; None when it says none of that."""
    sample = pg_stat_sample(pg_stat, 0)
    return None if sample is None else sample.not_clean_pgs + sample.degraded_objects + sample.misplaced_objects


def pg_tally(pg_stat: dict[str, Any]) -> tuple[int, int]:
    """(PGs active+clean, all PGs) from the monitor's `pg stat` answer (pure; `cluster_state.is_clean`)."""
    sample = pg_stat_sample(pg_stat, 0)
    return (0, 0) if sample is None else (sample.pgs - sample.not_clean_pgs, sample.pgs)
