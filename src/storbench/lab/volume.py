"""A provisioned volume on this machine (shell): a loop device over a file that storbench's pacer (`lab.pacer`)
serves over FUSE, starting reads and writes no faster than the volume's IOPS and bandwidth, evenly — what a cloud
disk at its provisioned limit, or a volume behind a QoS throttle, looks like from inside the VM: the limit is on
nothing this host can see as busy, and at the limit each I/O waits depth / cap (Little's law). The data lives in a
sparse file in the lab directory.

`up` starts the pacer (a recorded daemon), waits for its mount, attaches the loop device with direct I/O (so
requests reach the pacer concurrently, not through a page cache); `set_caps` changes the caps of a running lab;
`down` detaches the loop device, stops the pacer (which unmounts), and deletes the directory. `up` with the same
spec is a no-op. A lab made before the pacer (the kernel's block throttle) is taken down the same way, its
throttle rules cleared.

The loop device's number is recorded with its backing file's (st_dev, st_ino). After a killed run or a reboot the
same number may back someone else's file: before reusing or detaching the recorded device, the lab asks losetup
which file backs it now, and leaves it alone (saying so in one line) unless it is still the lab's own file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING

from storbench.errors import UserError
from storbench.events import LabHealed, LabLeftAlone, LabUp, RunEvent
from storbench.faults import FaultOffer, FaultStep, find_offer, level_of
from storbench.lab.base import CliOption, LabCommand, LabGroup, LabKindBase, LabLost, Say, SessionLabs
from storbench.lab.lab_claim import claims_lab, frees_lab
from storbench.lab.labdir import (
    LabRoot,
    default_lab_dir,
)
from storbench.lab.pacer import FILE_NAME, read_control
from storbench.lab.process import alive
from storbench.lab.volume_conf import (
    LOSETUP_COLUMNS,
    LoopBacking,
    VolumeInfo,
    VolumeSpec,
    caps_text,
    caps_words,
    clearing_line,
    loop_backings,
    mount_points,
    rates_json,
)
from storbench.shell import run
from storbench.units import format_bytes, parse_size_bytes

if TYPE_CHECKING:
    from storbench.model import Case, LabPoint

DEFAULT_LAB_DIR = default_lab_dir()


PACER_START_S = 20  # the pacer's mount appears within this
SNAPSHOT_WAIT_S = 5.0  # the pacer says it took a copy within this (it reads its control file on SIGHUP)
SNAPSHOT_BYTES_PER_S = 20 * 1024 * 1024  # ... and it finishes a copy to serve at least this fast


class VolumeLab(LabRoot):
    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root, DEFAULT_LAB_DIR / "volume")
        self.backing = self.root / "volume.img"  # the data, sparse
        self.mount = self.root / "mnt"  # the pacer's FUSE mount
        self.paced = self.mount / FILE_NAME  # what the loop device reads: the data, paced
        self.rates = self.root / "rates.json"  # the pacer's control file (`lab.pacer.Control`)
        # copies of the data a lying volume serves (`keep_copy`), in two slots: the one kept now is never the one
        # served (a second repetition's copy, written over the file being served, had truncated it under fio)
        self.copies = (self.root / "copy-1.img", self.root / "copy-2.img")
        self.log = self.root / "pacer.log"

    def info(self) -> VolumeInfo | None:
        if not self.dir.exists():
            return None
        try:
            raw = json.loads(self.state.read_text())
            return VolumeInfo(root=raw["root"], device=raw["device"], major_minor=raw["major_minor"],
                              spec=VolumeSpec(**raw["spec"]), backing_dev=int(raw["backing_dev"]),
                              backing_ino=int(raw["backing_ino"]),
                              rules=tuple(tuple(r) for r in raw.get("rules", ())))
        except (OSError, ValueError, KeyError, TypeError):
            return None  # also a state from before backing_dev/backing_ino: down() finds our file's devices

    def _our_devices(self, info: VolumeInfo | None) -> tuple[list[str], dict[str, LoopBacking]]:
        """(the loop devices reading the lab's own file — the pacer's, or volume.img for a lab from before it —
        and, with ``info``, only while that is still the file recorded when its device was made; every attached
        loop device -> its backing file)."""
        attached = loop_backings(run(["losetup", "--json", "--list", "--output", LOSETUP_COLUMNS], timeout_s=10))
        files = {str(self.paced), str(self.backing)}
        # a device whose file cannot be reached (its pacer dead) is known by the lab's own path alone; had been
        # passed over, and left attached for good once the lab's directory went
        ours = [device for device, backing in attached.items() if backing.file in files
                and (info is None or backing.ino is None
                     or (backing.dev, backing.ino) == (info.backing_dev, info.backing_ino))]
        return ours, attached

    def _mounted(self) -> bool:
        """The pacer's mount is there, alive or not (os.path.ismount says no to a dead FUSE daemon's)."""
        return str(self.mount) in mount_points(Path("/proc/self/mountinfo").read_text())

    def _left_alone(self, info: VolumeInfo) -> str:
        return (f"volume lab: {info.device} no longer reads the file the lab made it over ({self.paced}): its "
                "number was reused after a reboot or a killed run; left attached and unused")

    def _pacer_running(self) -> bool:
        return bool(self.dir.live()) and os.path.ismount(self.mount)

    def status(self) -> str:
        info = self.info()
        if info is None:
            return f"volume lab: down ({self.root} holds no lab)"
        if info.device not in self._our_devices(info)[0]:
            return self._left_alone(info)
        if not self._pacer_running():
            return f"volume lab: {info.device} is attached but its pacer is not running (`lab volume down`, then up)"
        return (f"volume lab: up, {info.device} ({format_bytes(info.spec.size_bytes)}): "
                f"{caps_text(info.spec, info.device)}")

    @claims_lab
    def up(self, spec: VolumeSpec) -> tuple[VolumeInfo, str]:
        """The lab with ``spec`` (kept if it is up already on its own device), and the line ``down`` said about
        a recorded device it left alone ("" if none)."""
        current = self.info()
        if (current is not None and current.spec == spec and current.device in self._our_devices(current)[0]
                and self._pacer_running() and self._whole()):
            return current, ""
        left_alone = self.down()
        self.dir.ensure()
        try:
            with open(self.backing, "xb") as handle:  # sparse: nothing is written until fio writes
                handle.truncate(spec.size_bytes)
            self.mount.mkdir(mode=0o700)
            self.rates.write_text(rates_json(spec))
            pid = self.dir.start("pacer", [sys.executable, "-m", "storbench.lab.pacer", "--backing",
                                           str(self.backing), "--mount", str(self.mount), "--rates", str(self.rates)],
                                 self.log).pid
            self._wait_for_pacer(pid)
            try:
                device = run(["losetup", "--find", "--show", "--direct-io=on", str(self.paced)], timeout_s=30).strip()
            except UserError as e:
                raise UserError(f"volume lab: no loop device with direct I/O over the pacer's file: {e}",
                                hint="the volume lab needs root and a kernel with loop devices and FUSE") from e
            name = Path(device).name
            if Path(f"/sys/block/{name}/loop/dio").read_text().strip() != "1":
                raise UserError(f"volume lab: {device} reads the pacer's file through the page cache, one request "
                                "at a time, not with direct I/O", hint="a kernel whose FUSE supports direct I/O")
            numbers = run(["lsblk", "-dno", "MAJ:MIN", device], timeout_s=10).strip()
            backing = os.stat(self.paced)
            info = VolumeInfo(root=str(self.root), device=device, major_minor=numbers, spec=spec,
                              backing_dev=backing.st_dev, backing_ino=backing.st_ino)
            self.state.write_text(json.dumps(asdict(info)))
        except BaseException:
            self.down()
            raise
        return info, left_alone

    def _whole(self) -> bool:
        """No fault left on it: not frozen, serving its own file (a kept lab interrupted mid-fault had been taken
        again frozen, every repetition hanging to the watchdog)."""
        try:
            control = read_control(self.rates.read_text())
        except (OSError, ValueError):
            return False
        return not control.frozen and control.backing is None

    def _wait_for_pacer(self, pid: int) -> None:
        deadline = time.monotonic() + PACER_START_S
        while not os.path.ismount(self.mount):
            if not alive(pid) or time.monotonic() > deadline:
                said = self.log.read_text(errors="replace").strip().splitlines() if self.log.exists() else []
                last = said[-1] if said else "no output"
                hint = ("sudo storbench setup --labs installs pyfuse3 (and libfuse3) for the pacer"
                        if "No module named" in last else "see " + str(self.log))
                raise UserError(f"volume lab: the pacer did not mount its file within {PACER_START_S}s: {last}",
                                hint=hint)
            time.sleep(0.05)

    def _control(self, **changes: object) -> None:
        """Rewrite the pacer's control file with ``changes`` and have it read it (SIGHUP)."""
        daemons = self.dir.live()
        if self.info() is None or not daemons:
            raise UserError("volume lab: not up", hint="storbench lab volume up")
        control = json.loads(self.rates.read_text())
        written = self.rates.with_suffix(".new")  # renamed over it whole: the pacer never reads half a file
        written.write_text(json.dumps({**control, **changes}))
        os.replace(written, self.rates)
        for daemon in daemons:
            os.kill(daemon.pid, signal.SIGHUP)

    def set_caps(self, iops: int | None, bw_bytes_per_s: int | None, *, thaw: bool = False) -> VolumeInfo:
        """Change the caps of the running lab from its next I/O on (as a burst credit running out would); with
        ``thaw``, thaw it in the same change."""
        info = self.info()
        if info is None:
            raise UserError("volume lab: not up", hint="storbench lab volume up")
        self._control(iops=iops, bw_bytes_per_s=bw_bytes_per_s, **({"frozen": False} if thaw else {}))
        info = replace(info, spec=replace(info.spec, iops=iops, bw_bytes_per_s=bw_bytes_per_s))
        self.state.write_text(json.dumps(asdict(info)))
        return info

    def freeze(self, frozen: bool) -> None:
        """Hold every new I/O until thawed (a stalled volume), or thaw it."""
        self._control(frozen=frozen)

    def _slots(self) -> tuple[Path, Path]:
        """The file the pacer serves now (the volume's own, or the copy a lying volume switched to), and the copy
        slot not being served."""
        backing = read_control(self.rates.read_text()).backing
        served = Path(backing) if backing is not None else self.backing
        return served, next(copy for copy in self.copies if copy != served)

    def keep_copy(self) -> None:
        """Have the pacer snapshot the file served at this moment into the slot not served
        (`lab.pacer_snapshot.Snapshot`: every write acknowledged after it missing, every one before in it), once it
        says it took it; a copy that fails (no room) is said, and leaves nothing a later `serve_copy` could serve."""
        _, spare = self._slots()
        for leftover in (spare, *self._markers(spare)):
            leftover.unlink(missing_ok=True)
        taking = uuid.uuid4().hex
        self._control(snapshot=str(spare), snapshot_id=taking)
        taken, failed = self._markers(spare)
        deadline = time.monotonic() + SNAPSHOT_WAIT_S
        while time.monotonic() < deadline:
            if failed.exists():
                raise UserError(f"volume lab: the copy of its data was not kept: {failed.read_text()[:200]}",
                                hint=f"free space in {self.root.parent}")
            if taken.exists() and taken.read_text() == taking:
                return
            time.sleep(0.01)
        raise UserError(f"volume lab: the pacer did not take the copy of its data in {SNAPSHOT_WAIT_S:g} s",
                        hint=f"see its log, {self.log}")

    def _markers(self, copy: Path) -> tuple[Path, Path]:
        """What the pacer writes beside a copy: that it took it (the taking's id), or why the copy failed."""
        return copy.with_name(f"{copy.name}.taken"), copy.with_name(f"{copy.name}.failed")

    def serve_copy(self) -> None:
        """Serve the copy kept earlier from now on (the pacer finishes it first): every write acknowledged since it
        was taken is gone, as on a volume that lies — the test bed a durability check must catch."""
        before, kept = self._slots()
        taken, failed = self._markers(kept)
        served = kept.with_name(f"{kept.name}.served")
        control = read_control(self.rates.read_text())
        if (not kept.exists() or failed.exists() or not taken.exists() or control.snapshot != str(kept)
                or taken.read_text() != control.snapshot_id):
            raise UserError("volume lab: no copy kept to serve", hint="keep a copy at the fault first")
        served.unlink(missing_ok=True)
        self._control(backing=str(kept))
        info = self.info()  # the pacer finishes the copy (at the slowest copying speed allowed), then serves it
        deadline = time.monotonic() + SNAPSHOT_WAIT_S + (info.spec.size_bytes if info else 0) / SNAPSHOT_BYTES_PER_S
        while time.monotonic() < deadline:
            if served.exists() and served.read_text() == control.snapshot_id:
                return
            if failed.exists():
                break
            time.sleep(0.01)
        # no copy served: the control file names the file served before again (a later signal had served a copy
        # that was no copy), and the lie did not happen
        self._control(backing=None if before == self.backing else str(before))
        if failed.exists():
            raise UserError(f"volume lab: the copy of its data could not be served: {failed.read_text()[:200]}",
                            hint=f"free space in {self.root.parent}")
        raise UserError("volume lab: the pacer did not serve the copy in time", hint=f"see its log, {self.log}")

    @frees_lab
    def down(self) -> str:
        """Detach the loop devices reading the lab's own file (also of a half-made lab), stop the pacer (it
        unmounts; a mount it left is unmounted lazily), clear the throttle rules of a lab from before the pacer,
        delete the directory. Safe when nothing is up. Returns one line about a recorded device that now reads
        another file and was left alone ("" if none)."""
        if not self.dir.exists():
            return ""
        info = self.info()
        ours, attached = self._our_devices(info)
        if info is not None:
            for path, _ in info.rules:
                with contextlib.suppress(OSError):  # the cgroup is gone with its processes: so is the rule
                    Path(path).write_text(clearing_line(Path(path).name, info.major_minor) + "\n")
        for device in ours:
            with contextlib.suppress(UserError):
                run(["losetup", "-d", device], timeout_s=30)
        self.dir.kill(graceful_s=5)
        if self._mounted():  # the pacer was killed, or a loop device left alone still holds the file
            with contextlib.suppress(UserError):
                run(["umount", "--lazy", str(self.mount)], timeout_s=30)
        if self._mounted():
            raise UserError(f"volume lab: {self.mount} is still mounted; not deleting the lab directory under it",
                            hint=f"umount {self.mount}, then storbench lab volume down")
        self.dir.remove()
        if info is not None and info.device in attached and info.device not in ours:
            return self._left_alone(info)
        return ""


# ---- the volume as a lab kind (lab.registry) -------------------------------------------------------------------

def _command_up(lab: VolumeLab, args: argparse.Namespace, say: Say) -> None:

    try:
        bw = parse_size_bytes(args.bw.removesuffix("/s")) if args.bw else None
        spec = VolumeSpec(parse_size_bytes(args.size), args.iops, bw)
    except ValueError as exc:
        raise UserError(str(exc), hint="sizes look like 1GiB; bandwidth like 100MiB/s") from None
    info, left_alone = lab.up(spec)
    if left_alone:
        say(left_alone)
    say(f"volume lab: up; {caps_text(info.spec, info.device)} (each I/O waits its turn, evenly)")
    say(f"plan target: {{kind: block, device: {info.device}, destructive: true}} (storbench's own device; "
        "or a plan's lab: {volume: ...} brings one up itself)")


def _command_down(lab: VolumeLab, say: Say) -> None:
    left_alone = lab.down()  # a recorded device that now reads someone else's file: said instead
    say(left_alone or f"volume lab: down; loop device, pacer and {lab.root} removed")


def _command_options() -> tuple[CliOption, ...]:
    return (CliOption(("--size",), {"default": "1GiB", "help": "device size (default 1GiB, sparse file)"}),
            CliOption(("--iops",), {"type": int, "default": None, "help": "IOPS cap, reads and writes together"}),
            CliOption(("--bw",), {"default": None,
                                  "help": "bandwidth cap, reads and writes together (e.g. 100MiB/s)"}))


class VolumeKind(LabKindBase):
    """The volume lab: up for each lab configuration with a `lab.volume`; it offers its loop device to block
    targets."""

    name = "volume"
    command: LabCommand[VolumeLab] = LabCommand(
        help="a provisioned volume: a loop device paced at an IOPS or bandwidth cap",
        open=VolumeLab, up=_command_up, down=_command_down, options=_command_options)

    faults: tuple[FaultOffer, ...] = (FaultOffer("volume", "freeze", "volume", "thaw",
                         "hold every I/O, as a volume that stalls (its I/O resumes at the thaw)", holds_io=True),
              FaultOffer("volume", "lose-writes", "volume", "serve the copy of",
                         "keep a copy of the volume's data; at the restore serve it: writes acknowledged in between "
                         "vanish, as on a volume that lies", acts_at_restore=True),
              FaultOffer("volume", "throttle", "volume", "lift the throttle on",
                         "cap the volume at `to:` IOPS (its bandwidth cap kept), as a cloud volume whose burst "
                         "credit runs out; at the restore its own caps again", takes="IOPS"))

    def wanted(self, group: LabGroup) -> bool:
        return group.lab.volume is not None

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        lab = VolumeLab()
        if step.action == "freeze":
            lab.freeze(not restore)
            return "volume lab: I/O held" if not restore else "volume lab: I/O resumed"
        if step.action == "lose-writes":
            if restore:
                lab.serve_copy()
                return "volume lab: now serving the copy kept at the fault (later writes are gone)"
            lab.keep_copy()
            return "volume lab: copy of the data kept"
        if step.action == "throttle" and (offer := find_offer(step, self.faults)) is not None:
            own = case.lab.volume
            if own is None:
                raise UserError("volume lab: this case is not on the volume lab")
            if restore:
                lab.set_caps(own.iops, own.bw_bytes_per_s)
                return f"volume lab: caps back to {caps_words(own.iops, own.bw_bytes_per_s) or 'none'}"
            level = level_of(step, offer)
            lab.set_caps(level, own.bw_bytes_per_s)
            return f"volume lab: capped at {caps_words(level, own.bw_bytes_per_s)}"
        return super().fault(step, case, running, restore=restore)

    def lost(self, case: Case, running: Mapping[LabPoint, object], faulted: frozenset[str] = frozenset()
             ) -> LabLost | None:
        """The pacer gone after a repetition (its recorded process, or its mount): the device no longer answers, and
        every repetition after it would measure errors (a write check reading "0 of 0"). No command is run."""
        lab = VolumeLab()
        if case.lab.volume is None or lab.info() is None or lab._pacer_running():
            return None
        return LabLost(f"volume lab: its pacer stopped during the run; its log {lab.log}",
                       "once the cause is fixed, run the plan again with --resume: the repetitions stored so far "
                       "are kept")

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        """After a repetition with faults: the volume thawed and at its own caps again, should a restore have
        failed (the next repetition would hang, or run at the fault's cap); None when it already was."""
        lab, own = VolumeLab(), case.lab.volume
        if own is None or lab.info() is None:
            return None
        control = read_control(lab.rates.read_text())  # what the pacer obeys
        if not control.frozen and (control.iops, control.bw_bytes_per_s) == (own.iops, own.bw_bytes_per_s):
            return None
        started = time.time()
        lab.set_caps(own.iops, own.bw_bytes_per_s, thaw=True)
        return LabHealed("volume", time.time() - started)

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:
        point, observer = group.lab.volume, group.observer
        assert point is not None
        volume_lab = VolumeLab()

        def volume_down() -> None:
            if left_alone := volume_lab.down():
                observer.event(LabLeftAlone("volume", left_alone))

        labs.downs.append(volume_down)
        volume, left_alone = volume_lab.up(VolumeSpec(point.size_bytes, point.iops, point.bw_bytes_per_s))
        if left_alone:
            observer.event(LabLeftAlone("volume", left_alone))
        labs.environment = replace(labs.environment, volume_device=volume.device)
        observer.event(LabUp("volume", f"{volume.device}, {format_bytes(point.size_bytes)}",
                             detail=caps_text(volume.spec, volume.device)))


KIND = VolumeKind()
