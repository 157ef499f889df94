"""Faults on a running lab Ceph cluster (shell; issue 32): one OSD killed, frozen, stopped or marked out, and
undone; after a repetition with faults, the cluster healed (every OSD running, up and in, every PG active+clean)
before the next one starts, so each repetition's fault meets a healthy cluster.

- ``kill`` (undone by ``restart``): SIGKILL, a crashed daemon. Its host still answers, so its peers' connections
  are refused and they report it at once (`osd_fast_fail_on_connection_refused`).
- ``freeze`` (``thaw``): SIGSTOP, as a host that hangs or drops off the network: nothing answers, and its peers
  report it only after `osd_heartbeat_grace` (20 s by default) without a heartbeat.
- ``stop`` (``restart``): SIGTERM, a clean stop: the OSD tells the monitors it is going down.
- ``out`` (``in``): the OSD keeps running but is marked out: the cluster moves its data to the others.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time

from storbench.errors import UserError
from storbench.lab.ceph_conf import CephLabSpec
from storbench.lab.ceph_daemons import READY_TIMEOUT_S, pg_tally, recovery_left
from storbench.lab.ceph_live import CephLiveSettings
from storbench.lab.labdir import Daemon, kill_daemons, live

OSD_NAME = r"osd\.[0-9]{1,4}"
HOST_NAME = r"host\.[0-9]{1,2}"  # an emulated CRUSH host (lab.ceph.hosts), from 1
# the longest a heal waits for a recovery that keeps going (one that stalls for READY_TIMEOUT_S ends it sooner): a
# memstore OSD started again comes back empty, and Ceph recovers a CephFS's thousands of objects at ~10 a second
HEAL_CEILING_S = 1800.0


class CephFaults(CephLiveSettings):
    """A lab cluster whose OSDs can be made to fail and be brought back."""

    def _osd(self, name: str) -> Daemon:
        if not re.fullmatch(OSD_NAME, name):
            raise UserError(f"ceph lab: {name!r} is not an OSD name (osd.N)")
        found = next((d for d in self.dir.daemons() if d.name == name), None)
        if found is None:
            osds = sorted(d.name for d in self.dir.daemons() if d.name.startswith("osd."))
            raise UserError(f"ceph lab: no {name} in this cluster (it has {', '.join(osds) or 'no OSDs'})",
                            hint="name one of its OSDs")
        return found

    def signal_osd(self, name: str, sig: signal.Signals) -> None:
        """Send ``sig`` to one running OSD (the process storbench started, not a pid reused since)."""
        daemon = self._osd(name)
        if not live([daemon]):
            raise UserError(f"ceph lab: {name} is not running")
        os.kill(daemon.pid, sig)

    def stop_osd(self, name: str) -> None:
        """Stop one OSD cleanly (SIGTERM, then SIGKILL after 30 s)."""
        kill_daemons([self._osd(name)], graceful_s=30)

    def start_osd(self, name: str) -> None:
        """Start one OSD again (nothing when it runs; a frozen one is thawed)."""
        daemon = self._osd(name)
        if live([daemon]):
            os.kill(daemon.pid, signal.SIGCONT)
            return
        with_reaped(daemon)
        self.dir.forget([name])
        self._start(name, ["ceph-osd", "-f", "-c", str(self.conf), "-i", name.removeprefix("osd.")])
        # back in its CPU quota and cpuset at once: started outside them, its recovery would be measured unlimited
        # until the next case's settings were applied
        cpuset = json.loads(self.state.read_text()).get("osd_cpuset")
        self.limit_osd_cpus(self.osd_cpus())
        self.pin_osds(cpuset if isinstance(cpuset, str) else None)

    def mark_osd(self, name: str, *, out: bool) -> None:
        self._osd(name)
        self.mon("osd out" if out else "osd in", ids=[name.removeprefix("osd.")])

    def heal(self, spec: CephLabSpec) -> float:
        """Every OSD running (thawed, started again), marked in, up, and every PG active+clean; the seconds it
        took (waiting for recovery and backfill too, as long as they make progress: `ceph_daemons.waited_enough`)."""
        started = time.time()
        for daemon in [d for d in self.dir.daemons() if d.name.startswith("osd.")]:
            self.start_osd(daemon.name)
        with self.connected():
            dump = self.mon("osd dump")
            assert isinstance(dump, dict)
            out = [int(o["osd"]) for o in dump.get("osds", []) if not o.get("in")]
            if out:
                self.mon("osd in", ids=[str(osd) for osd in out])
            # an OSD marked in again takes its PGs back (backfill): until the PGs' reports name it in their up
            # sets, the PG map still says what it said before (all clean, without it), which would end the wait
            # too soon
            try:
                self._wait(lambda: self._healthy(spec) and self._in_up_sets(out),
                           f"{spec.osds} OSDs up and in and all PGs active+clean", READY_TIMEOUT_S,
                           left=lambda: recovery_left(self._pg_stat()), ceiling_s=HEAL_CEILING_S)
            except UserError as exc:
                note = ""
                with contextlib.suppress(UserError):  # what the PGs were doing, when the monitor still answers
                    note = recovery_note(self._pg_stat(), spec.objectstore)
                if note:
                    raise UserError(f"{exc.message}; {note}", hint=exc.hint) from None
                raise
        return time.time() - started

    def _pg_stat(self) -> dict[str, object]:
        stat = self.mon("pg stat")
        return stat if isinstance(stat, dict) else {}

    def _in_up_sets(self, osds: list[int]) -> bool:
        """Every one of ``osds`` is in some PG's up set, and every PG is where it should be (up = acting)."""
        if not osds:
            return True
        dump = self.mon("pg dump", dumpcontents=["pgs_brief"])
        stats = dump.get("pg_stats", []) if isinstance(dump, dict) else dump
        if not isinstance(stats, list):
            return False
        seen = {osd for pg in stats if isinstance(pg, dict) for osd in pg.get("up", [])}
        settled = all(isinstance(pg, dict) and pg.get("up") == pg.get("acting") for pg in stats)
        return settled and set(osds) <= seen

    def _healthy(self, spec: CephLabSpec) -> bool:
        stat = self.mon("osd stat")
        assert isinstance(stat, dict)
        up, in_ = int(stat.get("num_up_osds", 0)), int(stat.get("num_in_osds", 0))
        return up >= spec.osds and in_ >= spec.osds and self._pgs_clean()


def with_reaped(daemon: Daemon) -> None:
    """A killed OSD this process started stays a zombie until reaped."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(daemon.pid, os.WNOHANG)


def recovery_note(pg_stat: dict[str, object], objectstore: str) -> str:
    """What a cluster that did not heal in time was doing, from the monitor's `pg stat` (pure): its PGs not
    active+clean, the objects still degraded and how fast they were recovered; "" when it says none of that."""
    summary = pg_stat.get("pg_summary", pg_stat)
    if not isinstance(summary, dict):
        return ""
    clean, total = pg_tally(pg_stat)
    degraded, rate = int(summary.get("degraded_objects") or 0), int(summary.get("recovering_objects_per_sec") or 0)
    if clean == total and not degraded:
        return ""
    note = f"{total - clean} of {total} PGs not active+clean"
    if degraded:
        note += f", {degraded:,} objects degraded, recovered at {rate:,} objects/s"
        if rate:
            note += f" (about {degraded / rate / 60:.0f} min to go)"
    if objectstore == "memstore":
        note += ("; a memstore OSD started again comes back empty, so every object it held is recovered (bluestore "
                 "keeps its data)")
    return note
