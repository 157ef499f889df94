"""What ran and what fio said, repetition by repetition (`show --raw`): the exact job file, the command, fio's
output and its standard error as stored. Pure."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from storbench.model import Case, Status
from storbench.report.events import case_text
from storbench.safe_text import safe_text

NOT_STORED = {"job": "job file (an imported repetition keeps none)", "command": "command",
              "output": "fio output", "stderr": "standard error"}  # what a text not stored is called


@dataclass(frozen=True)
class RepetitionTexts:
    """One stored repetition's provenance, as the store keeps it (secrets already taken out when stored)."""

    run_id: int
    case: Case
    rep_index: int  # from 0; shown from 1, as `--where repeat=N` takes it
    status: Status
    error: str
    job_text: str
    command: tuple[str, ...]
    output: str
    stderr: str


def _text(item: RepetitionTexts, what: str) -> str:
    if what == "job":
        return item.job_text
    if what == "command":
        return shlex.join(item.command) if item.command else ""
    return item.output if what == "output" else item.stderr


def fio_texts(items: Sequence[RepetitionTexts], what: str) -> str:
    """Each repetition's ``what`` ("job", "command", "output" or "stderr", as `show --raw` names them) after a
    header of lines starting with '#', which fio reads as comments: one repetition's `--raw job` is a job file fio
    runs as it is. Control characters are shown escaped (a crafted database's text never drives the terminal); a
    text not stored says so."""
    blocks = []
    for item in items:
        head = [f"# run {item.run_id}, case {safe_text(item.case.case_id)}, repetition {item.rep_index + 1} "
                f"({item.status.value}): {safe_text(case_text(item.case))}"]
        if item.error:
            head.append(f"# error: {safe_text(item.error)}")
        body = _text(item, what)
        if not body.strip():
            body = f"# no {NOT_STORED[what]} stored for this repetition"
        blocks.append("\n".join(head) + "\n" + safe_text(body, multiline=True).rstrip("\n") + "\n")
    return "\n".join(blocks)
