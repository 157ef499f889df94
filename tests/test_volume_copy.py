"""The volume lab's lying copy (`lose-writes`), without the lab: the copy is kept from the file served into the
slot not served, and a copy that fails leaves nothing a later `serve_copy` could serve (it had served the copy of
two repetitions before, or a partial file)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.lab import volume


def _lab(tmp_path: Path, served: str | None) -> volume.VolumeLab:
    lab = volume.VolumeLab(tmp_path / "volume")
    lab.root.mkdir(parents=True)
    lab.backing.write_bytes(b"now")
    lab.rates.write_text(json.dumps({"backing": served}))
    return lab


def test_a_copy_is_kept_from_the_file_served_into_the_slot_not_served(tmp_path: Path) -> None:
    lab = _lab(tmp_path, None)
    lab.keep_copy()
    assert lab.copies[0].read_bytes() == b"now"
    lab.rates.write_text(json.dumps({"backing": str(lab.copies[0])}))  # served since the first lie
    lab.copies[0].write_bytes(b"after the first lie")
    lab.keep_copy()
    assert lab.copies[1].read_bytes() == b"after the first lie" and lab.copies[0].read_bytes() == b"after the first lie"


def test_a_copy_that_fails_leaves_nothing_to_serve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lab = _lab(tmp_path, str(tmp_path / "volume" / "copy-1.img"))
    lab.copies[0].write_bytes(b"served")
    lab.copies[1].write_bytes(b"two repetitions old")

    def no_room(command: list[str], timeout_s: float) -> str:
        Path(command[-1]).write_bytes(b"par")  # what cp wrote before it ran out of room
        raise UserError("cp: error writing: No space left on device")

    monkeypatch.setattr(volume, "run", no_room)
    with pytest.raises(UserError, match="No space left"):
        lab.keep_copy()
    assert not lab.copies[1].exists() and lab.copies[0].read_bytes() == b"served"
    assert [p.name for p in lab.root.iterdir() if "partial" in p.name] == []
    with pytest.raises(UserError, match="no copy kept to serve"):
        lab.serve_copy()
