"""The command line: the only place that reads argv, prints, and turns errors into exit codes.

One module per command group: `run` (plan, run), `results` (show, export, saturation), `compare` (compare, report),
`labs` (lab, k8s), `imports` (import), `examples` (example, doctor, setup), `docs` (docs), `image` (image build,
push); `common` holds what they share. Which results a command reads is decided in `storbench.selection`, importing in
`storbench.importer`.

Each command imports what it uses inside its handler: `storbench --help` and a command's start load only that
command's modules, not numpy, scipy, plotly, the store or the labs of every other command. That is the rule here;
elsewhere an import inside a function says why on the spot (`tests/test_architecture.py` holds both).

Exit status: 0 success, 1 some repetitions failed, 2 a user error (one line, no traceback),
130 interrupted (everything finished so far is stored; continue with --resume).
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from storbench import __version__
from storbench.cli import compare, docs, examples, history, image, imports, labs, results, run
from storbench.cli.common import _console, _write_output
from storbench.cli.run import plan_before_resume
from storbench.errors import UserError, closest

__all__ = ["_write_output", "build_parser", "main"]


def version_line() -> str:
    """storbench's version, the fio a run would use ($STORBENCH_FIO or fio on PATH) with its own version, and the
    Python it runs on: what a bug report needs."""
    import platform

    from storbench.execute.fio_binary import find_fio, fio_version

    try:
        binary = find_fio()
        fio = f"{fio_version(binary)} ({binary})"
    except UserError as exc:
        fio = exc.message
    return f"storbench {__version__}; {fio}; Python {platform.python_version()}"


class _Version(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(version_line())
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """argparse with storbench's one line for a bad command line: the error and a hint, not the usage block."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (hint: {self.prog} --help)\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole command line; given the ``argv`` it is for, `lab`'s kinds only when it is a `lab` command (their
    options import every lab kind)."""
    parser: argparse.ArgumentParser = _Parser(
        prog="storbench",
        description="Declarative, reproducible, statistically honest storage benchmarks on real fio.",
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show storbench's version, the fio it would run (and its version) and the Python")
    sub: argparse._SubParsersAction[argparse.ArgumentParser] = parser.add_subparsers(dest="command",
                                                                                     metavar="COMMAND")
    run.add_commands(sub)
    results.add_commands(sub)
    compare.add_commands(sub)
    command = next((arg for arg in argv if not arg.startswith("-")), None) if argv is not None else "lab"
    labs.add_commands(sub, labs=command == "lab")
    imports.add_commands(sub)
    examples.add_commands(sub)
    docs.add_commands(sub)
    examples.add_doctor(sub)
    examples.add_setup(sub)
    image.add_commands(sub)
    history.add_commands(sub)
    return parser


def _command_parser(parser: argparse.ArgumentParser, command: str | None) -> argparse.ArgumentParser:
    """The parser of ``command`` (`storbench show`), or the whole command line's."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and command in action.choices:
            return action.choices[command]  # type: ignore[no-any-return]
    return parser


def _unknown_text(unknown: Sequence[str], parser: argparse.ArgumentParser) -> str:
    """'unrecognized arguments: --formt json', with the option meant when one is close."""
    options = {option.lstrip("-"): option for action in parser._actions for option in action.option_strings
               if option.startswith("--")}
    flag = next((word.split("=", 1)[0].lstrip("-") for word in unknown if word.startswith("--")), None)
    close = closest(flag, set(options)) if flag else None  # the names without their dashes, which match anything
    return f"unrecognized arguments: {' '.join(unknown)}" + (f"; did you mean '{options[close]}'?" if close else "")


def main(argv: Sequence[str] | None = None) -> int:
    # Start-up and exit cost: the ~600 modules a command imports are kept for the whole process, so the cyclic
    # collector need not walk them again (`gc.freeze`: at each full collection, and at interpreter exit, where
    # walking them took ~0.15 s). Objects made later are collected as usual.
    gc.freeze()
    try:
        return _main(argv)
    finally:
        gc.freeze()


def _main(argv: Sequence[str] | None) -> int:
    arguments = plan_before_resume(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments)
    try:
        args, unknown = parser.parse_known_args(arguments)
        if unknown:  # said by the command's own parser: its --help, and the option meant
            command = _command_parser(parser, getattr(args, "command", None))
            command.error(_unknown_text(unknown, command))
    except SystemExit as exc:  # argparse already printed its one-line usage error
        return int(exc.code or 0)
    if not getattr(args, "command", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except UserError as exc:
        _console(stderr=True).print(f"storbench: error: {exc.one_line()}", markup=False, soft_wrap=True)
        return 2
    except Exception as exc:
        # SQLite's own word for a damaged file (any other error is a fault); loaded only by commands that read a store
        sqlite3 = sys.modules.get("sqlite3")
        if sqlite3 is None or type(exc) is not sqlite3.DatabaseError:
            raise
        from storbench.store.db import DAMAGED_HINT  # lazy: each command loads what it uses

        line = UserError(f"the results database is damaged: {exc}", hint=DAMAGED_HINT).one_line()
        _console(stderr=True).print(f"storbench: error: {line}", markup=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        _console(stderr=True).print("interrupted", markup=False)
        return 130


def entry(command: Callable[[], int] | None = None) -> NoReturn:
    """The `storbench` process (its console script and `python -m storbench`; `kubectl storbench` gives its own
    ``command``): ``main``, then every later Ctrl-C,
    SIGTERM or SIGHUP ignored to the process's end. An interrupted command has said how to go on: a press after its
    clean-up had turned its exit 130 into a traceback and -2 on the way out (an impatient user, pressing on)."""
    import signal  # lazy: the process's end only

    from storbench.shell import INTERRUPTS  # lazy: with it

    try:
        code = (command or main)()
    except KeyboardInterrupt:  # pressed after the command returned, before the line below
        code = 130
    finally:
        for signum in INTERRUPTS:
            signal.signal(signum, signal.SIG_IGN)
    raise SystemExit(code)
