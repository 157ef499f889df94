"""`storbench import`: read fio json/json+ files and store them as one run (the logic is `storbench.importer`)."""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

from storbench.cli.common import _console, db_option
from storbench.errors import UserError


def cmd_import(args: argparse.Namespace) -> int:
    from storbench.fio.parse import load_fio_json_lenient
    from storbench.importer import FioFile, prepare_import, save_import
    from storbench.store import open_store

    files = []
    for name in args.files:
        try:
            text = Path(name).read_text(errors="replace")
        except OSError as exc:
            raise UserError(f"cannot read {name}: {exc.strerror}") from None
        files.append(FioFile(name, text, load_fio_json_lenient(text, name)))
    prepared = prepare_import(files, args.target)
    store = open_store(args.db)
    run_id = save_import(store, prepared, plan_name=args.name, host=platform.node(), kernel=platform.release(),
                         clock=time.time)
    store.close()
    _console().print(f"imported {len(prepared.repetitions)} repetitions of {prepared.cases} cases from {len(files)} "
                     f"files as run {run_id} in {args.db}")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("import", help="ingest existing fio json/json+ output files")
    p.add_argument("files", nargs="+", metavar="FIO_JSON")
    db_option(p)
    p.add_argument("--target", default="imported", help="target name to file the results under")
    p.add_argument("--name", default="import", help="plan name for the imported run")
    p.set_defaults(func=cmd_import)
