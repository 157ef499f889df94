"""`storbench import`: read fio json/json+ files and store them as one run (the logic is `storbench.importer`), or merge
other storbench databases' runs (`storbench.store.merge`)."""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from storbench import __version__
from storbench.cli.common import _console, db_option
from storbench.errors import UserError
from storbench.units import count_of

if TYPE_CHECKING:  # the importer and the store load only for the command that uses them
    from storbench.importer import PreparedImport
    from storbench.store.db import Store


def cmd_import(args: argparse.Namespace) -> int:
    from storbench.config.values import SAFE_NAME_RE
    from storbench.fio.parse import load_fio_json_lenient
    from storbench.importer import (
        FioFile,
        file_sha256,
        import_fio_output,
        not_importable,
        prepare_import,
        report_sha256,
    )
    from storbench.store import open_store, store_exists
    from storbench.store.merge import is_sqlite_file

    for option, value in (("--target", args.target), ("--name", args.name)):
        if not SAFE_NAME_RE.fullmatch(value):  # as a plan's names: selected, shown and exported as they are
            raise UserError(f"{option} {value!r} is not a name", hint="letters, digits, '_', '.' or '-' (at most 64; "
                            "a plan's target and plan names are the same)")
    databases = [name for name in args.files if is_sqlite_file(name)]
    if databases:
        if len(databases) < len(args.files):
            raise UserError("give storbench databases or fio output files to one import, not both",
                            hint="import the databases, then the fio files, with two commands")
        return _merge_databases(args, databases)
    files = []
    failed: list[str] = []
    err = _console(stderr=True)
    # an existing database is opened for writing at once (an older one is upgraded; one that is not storbench's is
    # refused untouched); a new one is made only when there is something to import
    store = open_store(args.db) if store_exists(args.db) else None
    try:
        known: dict[str, int | None] = dict(store.imported_files()) if store is not None and not args.again else {}
        duplicates = 0
        for name in args.files:  # every file is tried; each bad one gets its line
            try:
                text = _read_output(name)
                output = load_fio_json_lenient(text, name)
                if (refused := not_importable(output)) is not None:
                    raise refused
                sha = report_sha256(output)
                seen = next((key for key in (sha, file_sha256(text)) if key in known), None)  # older imports: bytes
                if seen is not None:
                    duplicates += 1
                    where = (f"already imported (run {known[seen]}); --again imports it anyway"
                             if known[seen] is not None else "given twice in this import (the same fio report)")
                    err.print(f"storbench: skipped {name}: {where}", markup=False, soft_wrap=True)
                    continue
                known[sha] = None
                if not import_fio_output(output, text, args.target):  # and jobs of one name ran one setting
                    raise UserError("fio output with no job in it", where=name,
                                    hint="pass the output of a fio run that ran a job")
                files.append(FioFile(name, text, output))
            except (OSError, UserError) as exc:
                refusal = exc if isinstance(exc, UserError) else UserError(
                    f"cannot read it ({exc.strerror})", where=name,
                    hint="pass fio's JSON output files (fio --output-format=json+) or results databases")
                if not refusal.where:
                    refusal = UserError(refusal.message, where=name, hint=refusal.hint)
                if len(args.files) == 1:  # the one file given: its refusal is the one line
                    raise UserError(f"{refusal.message}; nothing imported", where=refusal.where,
                                    hint=refusal.hint) from None
                failed.append(name)
                err.print(f"storbench: skipped {refusal.one_line()}", markup=False, soft_wrap=True)  # a line each
        if not files and duplicates and not failed:
            _console().print(f"nothing new to import: all {duplicates} files were imported before", markup=False)
            return 0
        if not files:
            before = f", {duplicates} imported before" if duplicates else ""
            raise UserError(f"none of the {count_of(len(args.files), 'file')} could be imported ({len(failed)} not "
                            f"fio output storbench can import{before}); nothing imported",
                            hint="pass fio --output-format=json+ (or json) output files")
        prepared = prepare_import(files, args.target)
        store = store or open_store(args.db)
        run_id = save_import(store, prepared, plan_name=args.name, host=platform.node(),
                             kernel=platform.release(), clock=time.time)
    finally:
        if store is not None:
            store.close()
    _console().print(f"imported {len(prepared.repetitions)} repetitions of {prepared.cases} cases from {len(files)} "
                     f"files as run {run_id} in {args.db}" + (f"; {len(failed)} files skipped (above)" if failed
                                                             else "")
                     + (f"; {duplicates} skipped as imported already" if duplicates else ""), markup=False)
    return 2 if failed else 0


MAX_OUTPUT_BYTES = 1 << 30  # one fio output file at most (json+ of a long run with many jobs is tens of MB)


def _read_output(name: str) -> str:
    """A fio output file's text, read once (a pipe, `<(...)` or /dev/stdin too), at most MAX_OUTPUT_BYTES."""
    with open(name, "rb") as f:
        data = f.read(MAX_OUTPUT_BYTES + 1)
    if len(data) > MAX_OUTPUT_BYTES:
        raise UserError(f"more than {MAX_OUTPUT_BYTES >> 20:,} MiB: not one fio output", where=name,
                        hint="pass fio --output-format=json+ (or json) output files")
    return data.decode(errors="replace")


def _merge_databases(args: argparse.Namespace, databases: list[str]) -> int:
    """`storbench import OTHER.db ...`: every run of each database not in --db yet, copied whole."""
    from storbench.store import open_store, store_exists
    from storbench.store.merge import merge_database

    out = _console()
    made = not store_exists(args.db)
    store = open_store(args.db)
    try:
        for name in databases:
            try:
                merged = merge_database(store, name, time.time)
            except UserError:
                if made and not store.runs():  # a refused first merge leaves no empty database behind
                    store.close()
                    for leftover in (args.db, f"{args.db}-wal", f"{args.db}-shm"):
                        Path(leftover).unlink(missing_ok=True)
                raise
            new = [m for m in merged if not m.already_here]
            here = [m for m in merged if m.already_here and not m.updated]
            grown = [m for m in merged if m.updated]
            moved = ", ".join(f"{m.source_run_id} as {m.run_id}" for m in new)
            out.print(f"{name}: {count_of(len(new), 'run')} merged into {args.db}"
                      + (f" (run {moved}; {count_of(sum(m.repetitions for m in new), 'repetition')})" if new else "")
                      + "".join(f"; run {m.source_run_id}, there as {m.run_id}, brought up to date ({m.added} "
                                "repetitions added)" for m in grown)
                      + (f"; {len(here)} already there (run " + ", ".join(f"{m.source_run_id} is {m.run_id}"
                                                                          for m in here) + "), skipped"
                         if here else ""), markup=False, soft_wrap=True)
    finally:
        store.close()
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help="ingest existing fio json/json+ output files, or merge other storbench "
                       "databases' runs")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="fio json/json+ output files (stored as one run), or storbench databases (each of their "
                   "runs not in --db yet is copied whole, with the database it came from)")
    db_option(p)
    p.add_argument("--target", default="imported", help="target name to file the results under")
    p.add_argument("--name", default="import", help="plan name for the imported run")
    p.add_argument("--again", action="store_true",
                   help="import files even if the same output was imported before (a second run of them)")
    p.set_defaults(func=cmd_import)


def save_import(store: Store, prepared: PreparedImport, *, plan_name: str, host: str, kernel: str,
                clock: Callable[[], float]) -> int:
    """Store ``prepared`` as one run of source "import" (each repetition notes the file it came from), in one
    transaction: an import that fails leaves nothing behind. Returns the run's id."""
    with store.transaction():
        run_id = store.create_run(
            plan_name=plan_name, plan_text=prepared.plan_text, plan_sha256="", source="import",
            storbench_version=__version__, fio_version=prepared.fio_version, host=host, kernel=kernel,
            run_order="imported", seed=0, tags=[], started_at_s=clock(),
        )
        for item in prepared.repetitions:
            store.save_repetition(run_id, item.case, item.rep_index, item.outcome,
                                  (("imported_from", item.source), ("imported_sha256", item.source_sha256)))
        store.finish_run(run_id, clock())
    return run_id
