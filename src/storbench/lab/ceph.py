"""A real Ceph cluster on this machine from Debian's packages (shell): mon, mgr, OSDs on sparse files.

`up` writes a private ceph.conf and keyrings under the lab directory (root's, 0700: see lab.labdir), starts the
daemons directly (no systemd, no ceph-volume) and records their pids, waits for HEALTH_OK-grade readiness and
creates the pools. `down` unmounts its ceph-fuse mount, kills exactly the daemons it recorded and removes the
directory. `up` with the same spec is a no-op.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
import uuid
from dataclasses import asdict
from functools import partial
from pathlib import Path

from storbench.errors import UserError
from storbench.lab import cpu_quota, devices
from storbench.lab.ceph_conf import LOOPBACK, SIDE_BY_SIDE_MAX, CephLabSpec, render_ceph_conf
from storbench.lab.ceph_daemons import READY_TIMEOUT_S, CephLabInfo, rgw_endpoint
from storbench.lab.ceph_faults import CephFaults
from storbench.lab.lab_claim import claims_lab, frees_lab
from storbench.lab.labdir import default_lab_dir, every_step
from storbench.lab.volume_conf import mount_points
from storbench.shell import run

DEFAULT_LAB_DIR = default_lab_dir()


class CephLab(CephFaults):
    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root, DEFAULT_LAB_DIR / "ceph")

    @classmethod
    def for_slot(cls, slot: int) -> CephLab:
        """The lab cluster in ``slot`` of several side by side: ``ceph`` for the first, ``ceph-2``, ... after it."""
        return cls(DEFAULT_LAB_DIR / ("ceph" if slot == 0 else f"ceph-{slot + 1}"))

    @classmethod
    def side_by_side(cls, root: Path | None = None) -> list[CephLab]:
        """Every cluster slot beside the one at ``root`` (its ``-2``, ``-3``, ... siblings), for `lab ceph down`."""

        first = Path(os.path.abspath(root or DEFAULT_LAB_DIR / "ceph"))
        return [cls(first.with_name(f"{first.name}-{slot + 1}")) for slot in range(1, SIDE_BY_SIDE_MAX)]

    def status(self) -> str:
        info = self.info()
        if info is None:
            return f"ceph lab: down ({self.root} holds no lab)"
        if not self.running():
            return f"ceph lab: stopped but not removed ({self.root}); run `storbench lab ceph down`"
        answer = self.mon("health")
        checks = [check.get("summary", {}).get("message", name) for name, check in answer.get("checks", {}).items()]
        health = " ".join([str(answer.get("status", "?")), *checks])
        return (f"ceph lab: up, {health}; conf {info.conf}; osds {info.spec.osds} ({info.spec.objectstore}); pools "
                + ", ".join(f"{n} (size {s})" for n, s in info.spec.pools)
                + (f"; cephfs mounted at {info.cephfs_mount}" if info.cephfs_mount else "")
                + (f"; S3 (radosgw) at {rgw_endpoint(info)}" if info.spec.rgw else ""))

    # ---- lifecycle --------------------------------------------------------------------------------------
    @claims_lab
    def up(self, spec: CephLabSpec, address: str = LOOPBACK) -> CephLabInfo:
        """Bring the cluster up with its daemons on ``address`` (reused when one like it is running)."""
        current = self.info()
        if current is not None and current.spec == spec and current.address == address and self.running():
            for daemon in self.dir.live():  # a run killed in a freeze left an OSD stopped, which still counts as up
                with contextlib.suppress(ProcessLookupError):
                    os.kill(daemon.pid, signal.SIGCONT)
            try:
                with self.connected():
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
            with self.connected():
                self._create_mgr()
                self._set_osd_options(spec.osd_config, ())
                if spec.db_size_bytes is not None:
                    self._mount_fast_db(spec)
                slices: list[str] = []
                if spec.osds_per_device:
                    assert spec.devices is not None and spec.device_size_bytes is not None
                    slices = devices.create(self.root, spec.devices, spec.osds_per_device, spec.device_size_bytes)
                self._create_osds(spec, slices)
                self._create_pools(spec)  # while the OSDs boot: one wait for them, the mgr and every pool's PGs
                self._wait_ready(spec, timeout_s=READY_TIMEOUT_S)
                self._check_osd_options(spec)
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

    @frees_lab
    def down(self) -> None:
        """Unmount, kill the daemons this lab recorded, remove the directory. Safe when nothing is up."""
        if not self.dir.exists():
            return
        # every step whatever another raised; the directory, whose records find what is left, goes only when all went
        every_step(partial(self._unmount, ("cephfs",)), self.dir.kill,
                   partial(self._unmount, ("fastdb", "cephfs")), partial(devices.remove, self.root),
                   partial(cpu_quota.remove_groups, self.root.name), partial(cpu_quota.remove_cpusets, self.root.name))
        self.dir.remove()

    def _unmount(self, names: tuple[str, ...]) -> None:
        """Lazily unmount the lab's mounts (its CephFS, its fast DB device's tmpfs), read from the kernel's mount
        table: os.path.ismount says no to a dead ceph-fuse's mount, which had stayed, the lab directory with it."""
        mounted = mount_points(Path("/proc/self/mountinfo").read_text())
        for name, mount in (("cephfs", self.root / "mnt" / "cephfs"), ("fastdb", self.root / "fastdb")):
            if name in names and str(mount) in mounted:
                for command in (["fusermount", "-uz", str(mount)], ["umount", "-l", str(mount)]):
                    try:
                        run(command, timeout_s=30)
                        break
                    except UserError:
                        continue
