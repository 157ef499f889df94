"""`--help` works for the program and for every command and subcommand, found by walking the parser tree."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from storbench.cli import build_parser, main


def _command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command path of the parser tree: (), ("run",), ("lab",), ("lab", "ceph"), ..."""
    paths = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                paths += _command_paths(child, (*prefix, name))
    return paths


COMMAND_PATHS = _command_paths(build_parser())


def test_the_walk_finds_nested_commands() -> None:
    # the tree walk is what makes the test below cover every command; check it sees nesting
    assert () in COMMAND_PATHS and ("run",) in COMMAND_PATHS and ("lab", "ceph") in COMMAND_PATHS
    assert ("k8s", "cleanup") in COMMAND_PATHS
    assert len(COMMAND_PATHS) >= 15


@pytest.mark.parametrize("path", COMMAND_PATHS, ids=lambda p: " ".join(p) or "storbench")
def test_help_exits_cleanly(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*path, "--help"])  # a broken help string raises here (argparse formats it lazily)
    captured = capsys.readouterr()
    assert code == 0
    assert "Traceback" not in captured.out + captured.err
    assert captured.out.startswith("usage: storbench" + "".join(f" {part}" for part in path))
    assert len(captured.out.splitlines()) > 2, "the help lists options, not only the usage line"


def test_program_help_in_a_process() -> None:
    done = subprocess.run([sys.executable, "-m", "storbench", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and done.stdout.startswith("usage: storbench")
    assert "compare" in done.stdout and "show" in done.stdout


def test_program_help_names_every_lab(capsys: pytest.CaptureFixture[str]) -> None:
    """The top-level help said `lab ceph|nfs` of five labs: it names them from the parser, all of them."""
    labs = sorted(path[1] for path in COMMAND_PATHS if len(path) == 2 and path[0] == "lab")
    assert len(labs) >= 5
    assert main(["--help"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    named = help_text.split("storbench lab ", 1)[1].split()[0].split("|")
    assert sorted(named) == labs


def test_version_names_storbench_the_fio_a_run_would_use_and_python(capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import platform
    import shutil

    from storbench import __version__

    fio = shutil.which("fio")
    if fio is not None:
        assert main(["--version"]) == 0
        said = capsys.readouterr().out.strip()
        assert said.startswith(f"storbench {__version__}; fio-") and f"({fio})" in said
        assert said.endswith(f"; Python {platform.python_version()}")
    monkeypatch.setenv("STORBENCH_FIO", "/nonexistent/fio")
    assert main(["--version"]) == 0
    assert "fio not found ('/nonexistent/fio')" in capsys.readouterr().out


def test_doctor_with_a_wrong_fio_path_says_the_path_not_install_fio(capsys: pytest.CaptureFixture[str]) -> None:
    """`doctor --fio /nonexistent` listed fio as missing with `apt-get install -y fio`, though fio is installed:
    the path given is wrong, said in one line as `plan --fio` says it."""
    from storbench.cli import main

    assert main(["doctor", "--fio", "/nonexistent"]) == 2
    err = capsys.readouterr().err
    assert "fio not found ('/nonexistent')" in err and "check the path --fio names" in err and "apt-get" not in err
