"""Labs are kinds behind one interface (lab.base.LabKind) in one registry (lab.registry.KINDS): the CLI's `lab`
commands are made from it, and a kind registered here (a fake: no daemon, nothing brought up) gets its command
without the CLI naming it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from storbench.cli import build_parser, main
from storbench.lab import registry
from storbench.lab.base import CliOption, LabCommand, LabKindBase, Say
from storbench.lab.registry import COMMAND_ORDER, KINDS


def test_every_lab_kind_is_registered_once_with_up_down_and_status() -> None:
    assert set(KINDS) == {"ceph", "nfs", "volume", "hosts", "k8s"}
    assert sorted(COMMAND_ORDER) == sorted(KINDS)
    for name, kind in KINDS.items():
        assert kind.name == name
        command = kind.command
        assert command.help and callable(command.open) and callable(command.up) and callable(command.down)
        lab = command.open(Path("/nonexistent/storbench-lab"))  # opening a lab touches nothing
        assert callable(lab.status) and lab.root == Path("/nonexistent/storbench-lab")
        assert kind.faults == ()  # the failover issue adds them


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_the_lab_commands_are_the_registry_in_its_order() -> None:
    labs = _subcommands(_subcommands(build_parser())["lab"])
    assert tuple(labs) == COMMAND_ORDER


class _FakeLab:
    def __init__(self, root: Path | None, calls: list[str]) -> None:
        self.root = root or Path("/fake/default")
        self.calls = calls

    def status(self) -> str:
        return f"fake lab: down ({self.root} holds no lab)"


def _fake_kind(calls: list[str]) -> LabKindBase:
    def up(lab: _FakeLab, args: argparse.Namespace, say: Say) -> None:
        calls.append(f"up {lab.root} size={args.size}")
        say("fake lab: up")

    def down(lab: _FakeLab, say: Say) -> None:
        calls.append(f"down {lab.root}")
        say(f"fake lab: down; {lab.root} removed")

    class FakeKind(LabKindBase):
        name = "fake"
        command: LabCommand[_FakeLab] = LabCommand(
            help="a lab that brings nothing up", open=lambda root: _FakeLab(root, calls), up=up, down=down,
            options=lambda: (CliOption(("--size",), {"default": "1GiB", "help": "its size"}),))

    return FakeKind()


def test_a_kind_registered_gets_its_lab_command(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[str] = []
    monkeypatch.setitem(KINDS, "fake", _fake_kind(calls))
    monkeypatch.setattr(registry, "COMMAND_ORDER", (*COMMAND_ORDER, "fake"))
    assert main(["lab", "fake", "up", "--size", "2GiB", "--dir", "/fake/here"]) == 0
    assert main(["lab", "fake", "status"]) == 0
    assert main(["lab", "fake", "down", "--dir", "/fake/here"]) == 0
    assert calls == ["up /fake/here size=2GiB", "down /fake/here"]
    assert capsys.readouterr().out.splitlines() == [
        "fake lab: up", "fake lab: down (/fake/default holds no lab)", "fake lab: down; /fake/here removed"]
    assert main(["--help"]) == 0
    assert "storbench lab ceph|nfs|volume|hosts|k8s|fake up|down|status" in " ".join(capsys.readouterr().out.split())
