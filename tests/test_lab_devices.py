"""The Ceph lab's loop devices (`lab.devices`): removed only while they still read one of the lab's own files.
After a reboot the lab directory persists and the recorded /dev/loopN may be another's device (a snap, the volume
lab's, a CI job's): `remove` must leave it attached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from storbench.lab import devices

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("losetup") is None,
                                reason="needs root and losetup")


def _attach(path: Path) -> str:
    with open(path, "wb") as handle:
        handle.truncate(4 << 20)
    return subprocess.run(["losetup", "--find", "--show", str(path)], check=True, capture_output=True,
                          text=True).stdout.strip()


def _attached(loop: str) -> bool:
    return Path(f"/sys/block/{Path(loop).name}/loop/backing_file").exists()


def test_a_recorded_loop_device_that_reads_another_file_is_left_alone(tmp_path: Path) -> None:
    lab, elsewhere = tmp_path / "lab", tmp_path / "elsewhere"
    lab.mkdir()
    elsewhere.mkdir()
    ours = _attach(lab / "device0.img")
    theirs = _attach(elsewhere / "snap.img")  # the name a rebooted machine gave to someone else's file
    try:
        (lab / devices.STATE_FILE).write_text(json.dumps({"loops": [ours, theirs]}))
        devices.remove(lab)
        assert not _attached(ours)
        assert _attached(theirs)
        assert not (lab / devices.STATE_FILE).exists()
    finally:
        for loop in (ours, theirs):
            if _attached(loop):
                subprocess.run(["losetup", "-d", loop], check=False)


def test_a_loop_device_the_record_missed_is_found_by_its_file(tmp_path: Path) -> None:
    """A Ctrl-C while losetup attached a device (it is attached, never recorded), or a record cut short: the lab's
    down had detached only what was recorded, then deleted the device files under the devices still reading them,
    attached until a reboot. A device reading one of the lab's files is found by that file."""
    lab, elsewhere = tmp_path / "lab", tmp_path / "elsewhere"
    lab.mkdir()
    elsewhere.mkdir()
    recorded, missed = _attach(lab / "device0.img"), _attach(lab / "device1.img")
    theirs = _attach(elsewhere / "device0.img")  # another directory's file of the same name
    try:
        (lab / devices.STATE_FILE).write_text('{"loops": ["' + recorded + '"')  # cut short
        devices.remove(lab)
        assert not _attached(recorded) and not _attached(missed) and _attached(theirs)
    finally:
        for loop in (recorded, missed, theirs):
            if _attached(loop):
                subprocess.run(["losetup", "-d", loop], check=False)
