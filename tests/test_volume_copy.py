"""The volume lab's lying copy (`lose-writes`), without FUSE: the pacer's snapshot holds the file as it was at its
moment, whatever is written while it is copied (a `cp` of the live file had held the blocks it reached last as they
were when it got there: the checking writer's, past fio's region, with the writes the lie should have lost); and the
lab serves only a copy the pacer took for this keeping, never one that failed or an earlier one."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.lab import pacer_snapshot, volume
from storbench.lab.pacer_snapshot import SNAPSHOT_BLOCK, Snapshot

BLOCKS = 8


def _source(tmp_path: Path) -> tuple[int, list[bytes]]:
    """A served file of BLOCKS blocks, block 3 all zeros (a hole in the copy), the others each its own bytes."""
    blocks = [bytes(SNAPSHOT_BLOCK) if i == 3 else bytes([i + 1]) * SNAPSHOT_BLOCK for i in range(BLOCKS)]
    path = tmp_path / "volume.img"
    path.write_bytes(b"".join(blocks))
    return os.open(path, os.O_RDWR), blocks


def test_a_snapshot_holds_the_file_as_it_was_at_its_moment(tmp_path: Path) -> None:
    source, before = _source(tmp_path)
    try:
        snapshot = Snapshot(source, str(tmp_path / "copy.img"), BLOCKS * SNAPSHOT_BLOCK)

        def write(offset: int, data: bytes) -> None:  # as the pacer's write does: its blocks kept, then written
            snapshot.before_write(offset, len(data))
            os.pwrite(source, data, offset)

        write(6 * SNAPSHOT_BLOCK + 100, b"late")  # a block the copy has not reached: a cp would have copied this
        assert not snapshot.step(2)  # blocks 0 and 1 kept
        write(0, b"after")  # a block kept already
        write(5 * SNAPSHOT_BLOCK - 2, b"span")  # across blocks 4 and 5
        write(3 * SNAPSHOT_BLOCK, b"into the hole")
        assert snapshot.finish() == ""
        assert (tmp_path / "copy.img").read_bytes() == b"".join(before)  # every block as it was at the moment
        now = os.pread(source, BLOCKS * SNAPSHOT_BLOCK, 0)
        assert now[:5] == b"after" and now[6 * SNAPSHOT_BLOCK + 100:6 * SNAPSHOT_BLOCK + 104] == b"late"
    finally:
        os.close(source)


def test_a_snapshot_with_no_room_is_no_copy_and_keeping_a_block_raises_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pacer calls `before_write` in the volume's write: a copy with no room fails, and the write is not
    stopped by it (`before_write` raises nothing)."""
    source, _ = _source(tmp_path)
    try:
        snapshot = Snapshot(source, str(tmp_path / "copy.img"), BLOCKS * SNAPSHOT_BLOCK)

        def no_room(fd: int, data: bytes, offset: int) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(pacer_snapshot.os, "pwrite", no_room)
        snapshot.before_write(0, 4096)  # the volume's own write is not stopped by it
        assert snapshot.finish() == "No space left on device"
    finally:
        os.close(source)


def _lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str, serves: str = "served") -> volume.VolumeLab:
    """A volume lab whose pacer answers a snapshot with ``answer``: "taken", "failed" or nothing (""); and the
    serving of a copy with ``serves``: "served", "failed" or nothing."""
    lab = volume.VolumeLab(tmp_path / "volume")
    lab.root.mkdir(parents=True, mode=0o700)
    lab.rates.write_text(json.dumps({"iops": 100}))

    def control(self: volume.VolumeLab, **changes: object) -> None:  # as the pacer answers it
        control = {**json.loads(lab.rates.read_text()), **changes}
        lab.rates.write_text(json.dumps(control))
        if "snapshot" in changes and answer:
            copy = Path(str(changes["snapshot"]))
            copy.write_bytes(b"kept")
            Path(f"{copy}.{answer}").write_text(str(changes["snapshot_id"]) if answer == "taken" else "no room")
        if changes.get("backing") and serves:
            Path(f"{changes['backing']}.{serves}").write_text(control["snapshot_id"] if serves == "served" else
                                                               "No space left on device")

    monkeypatch.setattr(volume.VolumeLab, "_control", control)
    monkeypatch.setattr(volume, "SNAPSHOT_WAIT_S", 0.2)
    return lab


def test_the_lab_serves_the_copy_the_pacer_took_for_this_keeping_only(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    lab = _lab(tmp_path, monkeypatch, "taken")
    with pytest.raises(UserError, match="no copy kept to serve"):
        lab.serve_copy()
    lab.keep_copy()
    lab.serve_copy()
    assert json.loads(lab.rates.read_text())["backing"] == str(lab.copies[0])
    lab.keep_copy()  # the next lie keeps its copy in the slot not served
    assert json.loads(lab.rates.read_text())["snapshot"] == str(lab.copies[1])
    # a copy taken for an earlier keeping (its id another) is not served
    control = json.loads(lab.rates.read_text())
    lab.rates.write_text(json.dumps({**control, "snapshot_id": "another"}))
    with pytest.raises(UserError, match="no copy kept to serve"):
        lab.serve_copy()


@pytest.mark.parametrize(("serves", "says"), [("failed", "the copy of its data could not be served: No space left"),
                                              ("", "the pacer did not serve the copy in time")])
def test_a_copy_not_served_is_said(serves: str, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pacer finishes the copy when it is to be served; a copy that fails then (no room) is not served, and the
    lie did not happen: said, so its repetition's "0 lost" is not counted as evidence (it had read as clean)."""
    lab = _lab(tmp_path, monkeypatch, "taken", serves)
    lab.keep_copy()
    with pytest.raises(UserError, match=says):
        lab.serve_copy()
    # the control file names the file served before again: a later signal (the next fault's) had served the copy
    assert json.loads(lab.rates.read_text())["backing"] is None


@pytest.mark.parametrize(("answer", "says"), [("failed", "the copy of its data was not kept: no room"),
                                              ("", "the pacer did not take the copy of its data")])
def test_a_copy_not_taken_is_said_and_leaves_nothing_to_serve(answer: str, says: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    lab = _lab(tmp_path, monkeypatch, answer)
    with pytest.raises(UserError, match=says):
        lab.keep_copy()
    with pytest.raises(UserError, match="no copy kept to serve"):
        lab.serve_copy()
