"""Settings a running lab Ceph cluster changes without coming down (shell): its OSDs' options (`ceph config`,
then an OSD restart, each value read back from every OSD's admin socket), a CPU quota and a cpuset per OSD.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace

from storbench.errors import UserError
from storbench.lab import cpu_quota
from storbench.lab.ceph_conf import CephLabSpec
from storbench.lab.ceph_daemons import READY_TIMEOUT_S, CephDaemons
from storbench.lab.labdir import kill_daemons
from storbench.model.ceph_options import config_section, same_value
from storbench.telemetry.sources import admin_socket_command


class CephLiveSettings(CephDaemons):
    """A lab cluster whose OSD options, CPU quota and cpuset change while it runs."""

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

        ctl = cpu_quota.controller()
        if ctl is None:
            return {}
        return {d.name: cpu_quota.read_limit(cpu_quota.group_dir(ctl, self.root.name, d.name))
                for d in self.dir.live() if d.name.startswith("osd.")
                and cpu_quota.group_dir(ctl, self.root.name, d.name).exists()}

    def _osd_groups_hold_osds(self) -> bool:
        """Whether each running OSD is in its quota cgroup (a restart starts it outside)."""

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
            try:
                raw = json.loads(admin_socket_command(str(socket), "config get", timeout_s=30, var=name))
            except (OSError, ValueError) as error:
                raise UserError(f"ceph lab: {socket.name} did not say what {name} is ({error})") from None
            shown[socket.name.removeprefix("ceph-").removesuffix(".asok")] = str(raw[name])
        return shown

    def _set_osd_options(self, options: tuple[tuple[str, str], ...], current: tuple[tuple[str, str], ...]) -> None:
        """The OSDs' options in the monitors' config database (read by an OSD when it starts)."""
        wanted = dict(options)
        for name, value in options:
            if dict(current).get(name) != value:
                self.mon("config set", who=config_section(name), name=name, value=value)
        for name, _ in current:
            if name not in wanted:
                self.mon("config rm", who=config_section(name), name=name)

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
        with self.connected():
            self._wait(lambda: self._restarted(spec, epoch),
                       f"{spec.osds} restarted OSDs up and all PGs active+clean", READY_TIMEOUT_S)

    def _osd_epoch(self) -> int:
        dump = self.mon("osd dump")
        assert isinstance(dump, dict)
        return int(dump["epoch"])

    def _restarted(self, spec: CephLabSpec, epoch: int) -> bool:
        dump = self.mon("osd dump")
        assert isinstance(dump, dict)
        osds = dump.get("osds", [])
        fresh = [o for o in osds if o.get("up") == 1 and int(o.get("up_from", 0)) > epoch]
        return len(fresh) >= spec.osds and self._pgs_clean()
