"""Which stored results a command works on: runs, `--where` filters, selectors and latency objectives.

The query layer under `show`, `export`, `compare`, `saturation` and `report`. Parsing and resolving are pure;
`select` reads the results database. Mistakes are `UserError`s naming the flag that fixes them; nothing here
prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from storbench.errors import UserError, did_you_mean
from storbench.model import RunInfo
from storbench.records import Record

if TYPE_CHECKING:  # heavy modules (scipy, sqlite) load only for the commands that use them
    from storbench.stats.compare import Selector
    from storbench.stats.knee import LatencyObjective

SLO_HINT = "e.g. --slo p99<=10ms or --slo mean<=500us"


@dataclass(frozen=True)
class Selection:
    records: list[Record]
    runs: list[RunInfo]
    label: str

    @property
    def tags(self) -> dict[int, tuple[str, ...]]:
        return {r.run_id: r.tags for r in self.runs}

    @property
    def memory(self) -> dict[int, int | None]:
        return {r.run_id: r.mem_total_bytes for r in self.runs}


def parse_where(items: Sequence[str]) -> list[tuple[str, str]]:
    """`--where KEY=VALUE` items as (key, value) pairs."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UserError(f"--where {item!r} is not KEY=VALUE", hint="e.g. --where rw=randread --where bs=4k")
        pairs.append((key.strip(), value.strip()))
    return pairs


def where_items(where: Sequence[str], targets: Sequence[str] = ()) -> list[str]:
    """`--where` items with each `--target NAME` as one more `target=NAME`."""
    return [*where, *(f"target={t}" for t in targets)]


def resolve_runs(runs: Sequence[RunInfo], run: str, db: str, *, default_latest: bool) -> tuple[list[int], str]:
    """`--run` text ('', 'all', '3', '2,3') against the stored runs: (run ids, a label for titles)."""
    if run == "all" or (not run and not default_latest):
        return [r.run_id for r in runs], "all runs"
    if not run:
        latest = runs[-1].run_id
        return [latest], f"run {latest} (latest; --run all for every run)"
    try:
        wanted = [int(part) for part in run.split(",")]
    except ValueError:
        raise UserError(f"--run {run!r} is not a run number", hint="e.g. --run 3, --run 2,3 or --run all") from None
    known = {r.run_id for r in runs}
    missing = [w for w in wanted if w not in known]
    if missing:
        raise UserError(f"no run {missing[0]} in {db}", hint="runs: " + ", ".join(str(r) for r in sorted(known)))
    return wanted, "run " + ",".join(map(str, wanted))


def filter_where(records: Sequence[Record], where: Sequence[str]) -> list[Record]:
    """The records matching every `--where` item; an unknown field is a UserError with a suggestion."""
    from storbench.records import RECORD_FIELDS, filter_records

    pairs = parse_where(where)
    try:
        return filter_records(records, pairs)
    except ValueError as exc:
        key = str(exc)
        raise UserError(f"--where: unknown field {key!r}",
                        hint=did_you_mean(key, RECORD_FIELDS) or "fields: " + ", ".join(RECORD_FIELDS)) from None


def select(db: str, run: str, where: Sequence[str], *, default_latest: bool, per_client: bool = False) -> Selection:
    """Read the records of the chosen runs from the results database ``db`` and keep those matching ``where``."""
    from storbench.records import repetition_records
    from storbench.store import open_store

    if not Path(db).exists():
        raise UserError(f"no results database {db}", hint="run a plan first, or pass --db PATH")
    store = open_store(db)
    runs = store.runs()
    if not runs:
        raise UserError(f"{db} holds no runs yet", hint="run `storbench run PLAN` first")
    run_ids, label = resolve_runs(runs, run, db, default_latest=default_latest)
    records = repetition_records(store.repetitions(run_ids), per_client=per_client)
    store.close()
    records = filter_where(records, where)
    return Selection(list(records), [r for r in runs if r.run_id in run_ids], label)


def parse_selector_flag(text: str, flag: str) -> Selector:
    """A `--baseline`/`--candidate` selector; a malformed one is a UserError naming ``flag``."""
    from storbench.stats.compare import parse_selector

    try:
        return parse_selector(text)
    except ValueError as exc:
        raise UserError(f"{flag} {text!r}: {exc}",
                        hint="e.g. 3, run=3, target=nvme, tag=after, bs=4k,rw=randread, pool_size=2") from None


def check_selector_keys(selection: Selection, *selectors: Selector) -> None:
    """Every key a selector uses is a record field, a lab parameter of the selection, `run` or `tag`."""
    from storbench.records import RECORD_FIELDS, lab_parameters
    from storbench.stats.compare import unknown_keys

    for selector in selectors:
        unknown = unknown_keys(selector, selection.records)
        if unknown:
            lab_keys = sorted({k for r in selection.records for k in lab_parameters(r)})
            raise UserError(f"selector {selector.text!r}: unknown key {unknown[0]!r}",
                            hint=did_you_mean(unknown[0], [*RECORD_FIELDS, *lab_keys, "run", "tag"])
                            or "keys: record fields (see export), lab parameters, run, tag")


def parse_objective(text: str | None) -> LatencyObjective | None:
    """An `--slo` latency objective (None when not given); a malformed one is a UserError."""
    if not text:
        return None
    from storbench.stats.knee import parse_slo

    try:
        return parse_slo(text)
    except ValueError as exc:
        raise UserError(f"--slo: {exc}", hint=SLO_HINT) from None
