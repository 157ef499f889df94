"""What an installed copy brings without the repository: `storbench example [NAME]`, the example plans that come
with storbench (package data, `storbench/examples`), listed with their descriptions or one printed or written; and
`storbench doctor`, what this machine has for each target kind and lab (`storbench.requirements`)."""

from __future__ import annotations

import argparse
import difflib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from storbench.cli.common import _console, _write_output
from storbench.errors import UserError


def _examples() -> dict[str, Traversable]:
    """Every example plan by name (its file name without `.yaml`)."""
    folder = files("storbench") / "examples"
    return {entry.name.removesuffix(".yaml"): entry for entry in folder.iterdir() if entry.name.endswith(".yaml")}


def _description(text: str) -> str:
    """The plan's `description:` line (each example has one), read as text: no plan is loaded to list them."""
    line = next((line for line in text.splitlines() if line.startswith("description:")), "")
    return line.removeprefix("description:").strip()


def cmd_example(args: argparse.Namespace) -> int:
    examples = _examples()
    if not args.name:
        console = _console()
        for name in sorted(examples):
            console.print(f"{name:<24} {_description(examples[name].read_text())}", markup=False, soft_wrap=True)
        console.print("\nstorbench example NAME -o plan.yaml writes one; storbench plan plan.yaml shows what it runs",
                      markup=False)
        return 0
    found = examples.get(args.name)
    if found is None:
        close = difflib.get_close_matches(args.name, list(examples), n=3)
        raise UserError(f"no example plan named {args.name!r}",
                        hint=f"did you mean {' or '.join(close)}?" if close else "storbench example lists them")
    if args.output and args.output != "-" and Path(args.output).exists():
        raise UserError(f"{args.output} exists; storbench example does not write over a file",
                        hint="remove it, or pick another name with -o")
    _write_output(found.read_text(), args.output)
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("example", help="list the example plans, or print or write one (storbench example quickstart "
                       "-o plan.yaml)")
    p.add_argument("name", nargs="?", metavar="NAME", help="the example (none: list them all)")
    p.add_argument("-o", "--output", default="-", help="file to write (default: standard output); never one that "
                   "exists")
    p.set_defaults(func=cmd_example)


def cmd_doctor(args: argparse.Namespace) -> int:
    from storbench.doctor import examine
    from storbench.execute.fio_binary import find_fio
    from storbench.requirements import REQUIREMENTS, doctor_lines

    try:
        fio: str | None = find_fio(args.fio)
    except UserError:
        fio = None
    found = examine(fio)
    out = _console()
    out.print("storbench doctor: what this machine has for each target kind and lab", markup=False)
    for line in doctor_lines(found):
        out.print(f"  {line}", markup=False, soft_wrap=True)
    return 0 if found[REQUIREMENTS[0]].present else 1


def add_doctor(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("doctor", help="what this machine has for each target kind and lab, and the command that "
                       "installs what is missing (exit 1 without fio)")
    p.add_argument("--fio", default=None, help="fio binary (default: $STORBENCH_FIO or fio on PATH)")
    p.set_defaults(func=cmd_doctor)
