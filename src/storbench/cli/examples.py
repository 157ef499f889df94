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
        if args.output != "-":
            raise UserError("-o writes one example: name it", hint=f"storbench example quickstart -o {args.output}")
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
    import os

    from storbench.doctor import examine
    from storbench.execute.fio_binary import find_fio
    from storbench.requirements import REQUIREMENTS, doctor_lines

    try:
        fio: str | None = find_fio(args.fio)
    except UserError:
        if args.fio or os.environ.get("STORBENCH_FIO"):  # the path given is wrong, not fio missing: as `plan` says
            raise
        fio = None
    found = examine(fio)
    if fio is not None and not found[REQUIREMENTS[0]].present:  # it ran, but is no fio: what it said, not "install"
        raise UserError(f"{fio} does not look like fio ({found[REQUIREMENTS[0]].detail})",
                        hint="pass --fio with the path of a fio binary, or unset STORBENCH_FIO")
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


def cmd_setup(args: argparse.Namespace) -> int:
    import os

    from storbench.machine_setup import build_fio_nfs, install_packages, missing_packages, python_modules
    from storbench.requirements import setup_packages

    console = _console()

    def say(line: str) -> None:
        console.print(line, markup=False, soft_wrap=True)

    packages = setup_packages(dev=args.dev, labs=args.labs, k8s=args.k8s)
    if os.geteuid() != 0:
        missing = missing_packages(packages)
        if missing:
            raise UserError(f"storbench setup installs system packages ({' '.join(missing)}) and runs as root",
                            hint="run it with sudo: sudo storbench setup" + " --labs" * args.labs + " --k8s" * args.k8s
                            + " --dev" * args.dev)
    install_packages(packages, say)
    if args.labs and not args.system_only:
        python_modules(say)
    if args.labs:
        say(f"setup: fio with the nfs and http engines at {build_fio_nfs(say)}")
    say("setup: done; storbench doctor says what each target kind and lab has now")
    return 0


def add_setup(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("setup", help="install what storbench needs from this machine's package sources, as root "
                       "(fio; with --labs Ceph, nfs-ganesha and a fio with the nfs and http engines built from "
                       "Debian's source package)")
    p.add_argument("--labs", action="store_true", help="the Ceph, NFS, hosts and volume labs, the registry and "
                   "`storbench image`, and fio with the nfs and http engines (built once, cached)")
    p.add_argument("--k8s", action="store_true", help="what the Kubernetes lab runs on (its Kubernetes binaries "
                   "come from scripts/build-kubernetes.sh in a clone)")
    p.add_argument("--dev", action="store_true",
                   help="the test tools: Chromium, a Prometheus pair, PostgreSQL and perf")
    p.add_argument("--system-only", action="store_true", help="system packages and the fio build only, not the "
                   "Python modules the labs import (scripts/setup.sh installs those from its lock file)")
    p.set_defaults(func=cmd_setup)
