"""Labs are kinds behind one interface (lab.base.LabKind) in one registry (lab.registry.KINDS): the CLI's `lab`
commands are made from it and the run's lab sessions loop over it. Kinds registered here are fakes: no daemon,
nothing brought up; they get their command, and are brought up and torn down by the session loop in order,
without the CLI or the session naming them."""

from __future__ import annotations

import argparse
import contextlib
import os
import types
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import pytest

from storbench import sessions
from storbench.checks import Checked, check_everything
from storbench.cli import build_parser, main
from storbench.config import LoadedPlan, load_plan_text
from storbench.errors import UserError
from storbench.events import LabLeftAlone, LabUp, RunEvent
from storbench.faults import FaultStep
from storbench.fio.options import FioCapabilities
from storbench.lab import registry
from storbench.lab.base import CliOption, LabCommand, LabGroup, LabKindBase, Say, SessionLabs
from storbench.lab.registry import COMMAND_ORDER, KINDS
from storbench.model import (
    NO_LAB,
    Case,
    CephLabPoint,
    LabPoint,
    PathTarget,
    VolumeLabPoint,
    WorkloadPoint,
    cluster_of,
)
from storbench.plan import expand
from storbench.report.events import event_text


def test_every_lab_kind_is_registered_once_with_up_down_and_status() -> None:
    assert set(KINDS) == {"ceph", "nfs", "volume", "hosts", "k8s"}
    assert sorted(COMMAND_ORDER) == sorted(KINDS)
    for name, kind in KINDS.items():
        assert kind.name == name
        command = kind.command
        assert command.help and callable(command.open) and callable(command.up) and callable(command.down)
        lab = command.open(Path("/nonexistent/storbench-lab"))  # opening a lab touches nothing
        assert callable(lab.status) and lab.root == Path("/nonexistent/storbench-lab")
        assert all(offer.lab == name for offer in kind.faults)
        with pytest.raises(AssertionError, match="offers no faults"):  # an action it does not offer
            kind.fault(FaultStep(at_s=1, action="explode", target="x"), _CASE, {}, restore=False)
    assert {(o.action, o.restore != "") for o in KINDS["volume"].faults} == {("freeze", True), ("lose-writes", True),
                                                                              ("throttle", True)}
    assert {o.action for o in KINDS["ceph"].faults} == {"kill", "freeze", "stop", "out"}
    with pytest.raises(UserError, match="no lab cluster"):  # an offered fault, but no cluster under the case
        KINDS["ceph"].fault(FaultStep(at_s=1, action="kill", target="osd.1"), _CASE, {}, restore=False)
    assert all(kind.settle(_CASE, {}) is None for kind in KINDS.values())  # nothing running: nothing to heal


_CASE = Case(case_id="c", target=PathTarget(name="t", path="/t", size_bytes=1 << 20),
             workload=WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1, ramp_s=0,
                                    direct=True, ioengine="libaio"))


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
    monkeypatch.setattr("storbench.lab.COMMAND_ORDER", (*COMMAND_ORDER, "fake"))  # the names the help gives
    assert main(["lab", "fake", "up", "--size", "2GiB", "--dir", "/fake/here"]) == 0
    assert main(["lab", "fake", "status"]) == 0
    assert main(["lab", "fake", "down", "--dir", "/fake/here"]) == 0
    assert calls == ["up /fake/here size=2GiB", "down /fake/here"]
    assert capsys.readouterr().out.splitlines() == [
        "fake lab: up", "fake lab: down (/fake/default holds no lab)", "fake lab: down; /fake/here removed"]
    assert main(["--help"]) == 0  # the kinds named without importing them
    assert "storbench lab ceph|nfs|volume|hosts|k8s|fake up|down|status" in " ".join(capsys.readouterr().out.split())
    assert main(["lab", "--help"]) == 0  # the kinds' own commands
    assert "a lab that brings nothing up" in capsys.readouterr().out


# ---- the run's lab sessions are a loop over the registry ---------------------------------------------------------

CAPS = FioCapabilities(binary="/usr/bin/fio", version="fio-3.33", options=frozenset(), engines=frozenset())
PLAN = """
name: labs
targets:
  t: {{kind: path, path: {data}, size: 4MiB}}
workload: {{rw: randread, bs: 4k, iodepth: 1, runtime: 1s, direct: false}}
repeat: 1
"""


class _Observer:
    def __init__(self) -> None:
        self.events: list[str] = []

    def event(self, event: RunEvent) -> None:
        self.events.append(event_text(event))


@pytest.fixture
def planned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LoadedPlan, list[Case], Checked]:
    from storbench import checks

    monkeypatch.setattr(checks, "fio_capabilities", lambda binary, engines=(): CAPS)
    loaded = load_plan_text(PLAN.format(data=tmp_path / "data"), "plan.yaml")
    cases = expand(loaded)
    return loaded, cases, check_everything(loaded, cases, CAPS.binary, create=True)


class _SessionKind(LabKindBase):
    """A lab kind that brings nothing up: it writes down what the session asks of it."""

    def __init__(self, name: str, calls: list[str], *, fails: bool = False, live: str | None = None) -> None:
        self.name = name
        self.calls = calls
        self.fails = fails
        self.live = live
        self.command = _fake_kind(calls).command

    def wanted(self, group: LabGroup) -> bool:
        return True

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:
        labs.downs.append(lambda: self.calls.append(f"down {self.name}"))  # before up: a half-made lab goes too
        self.calls.append(f"up {self.name} (nfs_url {labs.environment.nfs_url})")
        if self.fails:
            raise UserError(f"{self.name} lab: did not come up")
        labs.environment = replace(labs.environment, nfs_url=f"nfs://{self.name}/export")  # offered to the next
        labs.running[cluster_of(group.lab)] = self
        group.observer.event(LabUp(self.name))

    def enter(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        return None if self.live is None else LabLeftAlone(self.name, f"{self.name} lab: {self.live}")

    def health(self, case: Case, running: Mapping[LabPoint, object]) -> str | None:
        return f"{self.name} is fine" if running.get(cluster_of(case.lab)) is self else None


def test_a_registered_kind_is_brought_up_in_order_and_torn_down_in_reverse(
        planned: tuple[LoadedPlan, list[Case], Checked], monkeypatch: pytest.MonkeyPatch) -> None:
    loaded, cases, checked = planned
    calls: list[str] = []
    kinds = {"zeta": _SessionKind("zeta", calls, live="links shaped"), "alpha": _SessionKind("alpha", calls),
             "mu": _SessionKind("mu", calls, live="OSDs restarted")}
    monkeypatch.setattr(sessions, "KINDS", kinds)
    observer = _Observer()
    with sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=False) as context:
        assert calls == ["up zeta (nfs_url None)", "up alpha (nfs_url nfs://zeta/export)",
                         "up mu (nfs_url nfs://alpha/export)"]
        said = [event_text(e) for e in context.enter(cases[0])]
        assert said == ["zeta lab: links shaped", "mu lab: OSDs restarted"]  # the registry's order
        assert context.health_for(cases[0]) == "mu is fine"  # the last kind up on this cluster
        assert context.for_case(cases[0]) is checked.targets["t"]
    assert calls[3:] == ["down mu", "down alpha", "down zeta"]
    assert observer.events == ["zeta lab: up", "alpha lab: up", "mu lab: up", "alpha lab: torn down",
                               "mu lab: torn down", "zeta lab: torn down"]  # by name, as before


def test_a_kind_that_fails_to_come_up_stops_the_rest_and_what_came_up_is_torn_down(
        planned: tuple[LoadedPlan, list[Case], Checked], monkeypatch: pytest.MonkeyPatch) -> None:
    loaded, cases, checked = planned
    calls: list[str] = []
    monkeypatch.setattr(sessions, "KINDS", {"a": _SessionKind("a", calls), "b": _SessionKind("b", calls, fails=True),
                                            "c": _SessionKind("c", calls)})
    observer = _Observer()
    with pytest.raises(UserError, match="b lab: did not come up"), \
            sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=False):
        raise AssertionError("the session never starts")
    assert calls == ["up a (nfs_url None)", "up b (nfs_url nfs://a/export)", "down b", "down a"]
    assert observer.events[-3:] == ["a lab: torn down", "b lab: torn down", "c lab: torn down"]
    calls.clear()
    monkeypatch.setattr(sessions, "KINDS", {"a": _SessionKind("a", calls)})
    with sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=True):
        pass
    assert calls == ["up a (nfs_url None)"]  # --keep-lab: left up


def test_a_teardown_step_that_fails_does_not_leave_the_labs_after_it_up(
        planned: tuple[LoadedPlan, list[Case], Checked], monkeypatch: pytest.MonkeyPatch) -> None:
    """The test files' removal (an S3 listing on an unhealthy cluster) and one lab's `down` (an unmount) raise:
    every other lab still goes down; the first error is raised after, or the session's own when it failed."""
    loaded, cases, checked = planned
    calls: list[str] = []

    class Stuck(_SessionKind):
        def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:
            super().bring_up(group, labs)

            def stuck() -> None:
                calls.append(f"down {self.name} failed")
                raise UserError(f"{self.name} lab: umount failed")

            labs.downs[-1] = stuck

    monkeypatch.setattr(sessions, "KINDS", {"a": _SessionKind("a", calls), "b": Stuck("b", calls),
                                            "c": _SessionKind("c", calls)})

    def unreachable(targets: object, observer: object, **kwargs: object) -> None:
        calls.append("files")
        raise UserError("s3: listing the bucket failed")

    monkeypatch.setattr(sessions, "remove_run_test_files", unreachable)
    observer = _Observer()
    with pytest.raises(UserError, match="s3: listing the bucket failed"), \
            sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=False):
        pass
    assert calls[3:] == ["files", "down c", "down b failed", "down a"]
    # the error raised is the first; the second is told, and the lab it left is not said to be torn down
    assert observer.events[3:] == [
        "b lab: not cleaned up: b lab: umount failed (storbench lab b down removes what is left)",
        "a lab: torn down", "c lab: torn down"]
    calls.clear()
    observer = _Observer()
    with pytest.raises(KeyboardInterrupt), \
            sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=False):
        raise KeyboardInterrupt  # the session's own error is the one raised; the clean-up's are told
    assert calls[3:] == ["files", "down c", "down b failed", "down a"]
    assert observer.events[3:5] == ["the run's test data: not cleaned up: s3: listing the bucket failed",
                                    "b lab: not cleaned up: b lab: umount failed (storbench lab b down removes "
                                    "what is left)"]
    try:  # a session that ends well inside a caller's own except block still raises its clean-up's error
        raise ValueError("the caller's")
    except ValueError:
        with pytest.raises(UserError, match="s3: listing the bucket failed"), \
                sessions.lab_session(loaded, NO_LAB, cases, checked, _Observer(), keep=False):
            pass


def test_a_lab_for_the_whole_run_is_torn_down_after_it_also_when_it_fails() -> None:
    from storbench.lab.base import RunLab

    calls: list[str] = []
    lab = RunLab(up=lambda: (calls.append("up") or "info", LabUp("x", seconds=0.0)), down=lambda: calls.append("down"))
    observer = _Observer()
    with pytest.raises(KeyboardInterrupt), sessions.run_lab(lab, "x", observer, keep=False) as info:
        assert info == "info"
        raise KeyboardInterrupt
    assert calls == ["up", "down"] and observer.events == ["x lab: up in 0s", "x lab: torn down"]
    with sessions.run_lab(None, "x", observer, keep=False) as nothing:
        assert nothing is None
    assert calls == ["up", "down"]

    def stuck() -> None:
        raise UserError("x lab: umount failed")

    stuck_lab = RunLab(up=lambda: ("info", LabUp("x", seconds=0.0)), down=stuck)
    observer = _Observer()
    with pytest.raises(KeyboardInterrupt), sessions.run_lab(stuck_lab, "x", observer, keep=False):
        raise KeyboardInterrupt  # the run's own error stays the one raised: the tear-down's is told
    assert observer.events[1:] == ["x lab: not cleaned up: x lab: umount failed (storbench lab x down removes what "
                                   "is left)"]
    with pytest.raises(UserError, match="umount failed"), sessions.run_lab(stuck_lab, "x", _Observer(), keep=False):
        pass


def test_the_registry_brings_a_plans_labs_up_in_the_order_it_always_did(
        planned: tuple[LoadedPlan, list[Case], Checked]) -> None:
    """Volume, then NFS (its URL goes to the targets on Ceph), then Ceph; each kind wanted exactly when the lab
    point names it (the "torn down" lines stay those of `LabPoint.kinds`); hosts and k8s are up for the run."""
    loaded, cases, checked = planned
    ceph = CephLabPoint(osds=2, osd_size_bytes=1 << 30, objectstore="bluestore", pool_size=2)
    volume = VolumeLabPoint(size_bytes=1 << 30, iops=1000)
    for lab in (LabPoint(ceph=ceph, nfs=True, volume=volume), LabPoint(nfs=True), LabPoint(volume=volume),
                LabPoint(ceph=ceph), NO_LAB):
        group = LabGroup(loaded, lab, cases, checked, (), _Observer())
        wanted = [kind.name for kind in KINDS.values() if kind.wanted(group)]
        assert sorted(wanted) == sorted(set(lab.kinds()) - {"hosts"})
        assert wanted == [name for name in ("volume", "nfs", "ceph") if name in wanted]
    assert KINDS["hosts"].for_run(loaded, CAPS) is None and KINDS["k8s"].for_run(loaded, CAPS) is None


def test_a_failed_repetition_on_a_lab_cluster_carries_its_health_through_the_ceph_kind() -> None:
    """The same as test_robustness's: the session's running clusters, asked through the registry's kinds."""
    class Cluster:
        def __init__(self, answer: str | None) -> None:
            self.answer = answer

        def ceph(self, *args: str, timeout_s: float = 60) -> str:
            assert args == ("health", "detail")
            if self.answer is None:
                raise UserError("timed out")
            return self.answer

    lab = LabPoint(ceph=CephLabPoint(osds=2, osd_size_bytes=1 << 30, objectstore="bluestore", pool_size=2))
    case = Case(case_id="c", target=PathTarget(name="t", path="/t", size_bytes=1 << 20),
                workload=WorkloadPoint(rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1, ramp_s=0,
                                       direct=True, ioengine="libaio"), lab=lab)
    detail = "HEALTH_WARN 1 osds down\n[WRN] OSD_DOWN: 1 osds down\n    osd.1 is down\n[WRN] X\n    y\n"
    session = sessions.LabContext(targets={}, ceph_socket_patterns=(), ceph_labs={cluster_of(lab): Cluster(detail)})
    assert session.health_for(case) == "HEALTH_WARN 1 osds down; [WRN] OSD_DOWN: 1 osds down; osd.1 is down; [WRN] X"
    silent = sessions.LabContext(targets={}, ceph_socket_patterns=(), ceph_labs={cluster_of(lab): Cluster(None)})
    assert "did not answer" in (silent.health_for(case) or "")
    assert sessions.LabContext(targets={}, ceph_socket_patterns=()).health_for(case) is None
    assert sessions.LabContext(targets={}, ceph_socket_patterns=()).enter(case) == []  # no cluster: nothing live


# ---- what every lab shares: its directory, its state, its daemons' records and one port check -------------------

def test_one_port_check_for_every_lab() -> None:
    import socket

    from storbench.lab.labdir import port_open

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert port_open("127.0.0.1", port)
    assert not port_open("127.0.0.1", port, timeout_s=0.2)  # closed now: refused at once


def test_a_lab_dir_reads_its_state_and_nothing_from_a_directory_that_holds_no_lab(tmp_path: Path) -> None:
    import os
    import stat

    from storbench.lab.labdir import LabDir, require_tools

    if os.stat(tmp_path).st_mode & (stat.S_IWGRP | stat.S_IWOTH) or os.stat(tmp_path).st_uid not in (0, os.geteuid()):
        pytest.skip("the temporary directory's parents are not ones a lab directory may sit below")
    lab = LabDir(tmp_path / "lab")
    assert not lab.exists() and lab.read_state() is None and lab.daemons() == []
    lab.ensure()
    assert lab.exists() and stat.S_IMODE(os.stat(lab.root).st_mode) == 0o700
    assert lab.read_state() is None  # up has not written it yet
    lab.state.write_text('{"root": "x"}')
    assert lab.read_state() == {"root": "x"}
    lab.remove()
    assert not lab.root.exists()
    with pytest.raises(UserError, match="fake lab: storbench-no-such-tool is not installed"):
        require_tools("fake", ("sh", "storbench-no-such-tool"), hint="install it")


def test_every_kind_of_run_event_has_words() -> None:
    """The run loop and the labs emit typed events (storbench/events.py); the CLI words every kind of them
    (report/events.event_text has one arm per kind: a new kind without words would raise at the terminal)."""
    import inspect
    import typing

    from storbench import events
    from storbench.report import events as words

    kinds = {kind.__name__ for kind in typing.get_args(events.RunEvent)}
    declared = {name for name, value in vars(events).items()
                if inspect.isclass(value) and value.__module__ == events.__name__}
    assert kinds == declared, "an event class is not in RunEvent"
    source = inspect.getsource(words.event_text)
    assert {kind for kind in kinds if f"case {kind}():" not in source} == set()
    assert event_text(events.LabTornDown("ceph")) == "ceph lab: torn down"
    assert event_text(events.LabUp("hosts", seconds=1.25, servers=3)) == "hosts lab: 3 fio servers up in 1.2s"


def test_lab_software_versions_are_read_from_what_the_programs_print() -> None:
    from storbench.lab.registry import KINDS

    probes = {probe.name: probe for kind in KINDS.values() for probe in kind.software}
    ceph = "ceph version 16.2.15 (618f440892089921c3e944a991122ddc44e60516) pacific (stable)\n"
    assert probes["ceph"].version(ceph) == "16.2.15"
    assert probes["nfs-ganesha"].version("NFS-Ganesha Release = V4.3\n") == "4.3"
    assert probes["ceph"].version("command not understood") is None


def test_a_kept_hosts_lab_with_shaped_links_is_unshaped_for_a_plan_without_a_link(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--keep-lab` after a run that shaped the links to 10Mbit: the next plan on the hosts lab, with no `link`,
    must not run at 10Mbit unsaid; its run lifts the shaping when the lab comes up. A plan that does not use the
    hosts lab never touches it (another run may be shaping it)."""
    from storbench.fio.options import FioCapabilities
    from storbench.lab import hosts_kind as hosts

    calls: list[tuple[object, object]] = []
    settled: list[bool] = []
    ended: list[bool] = []

    class FakeLab:
        shaped = True

        def up(self, count: int, fio: str) -> object:
            return types.SimpleNamespace(count=count)

        def down(self) -> None: ...

        def link_shaped(self) -> bool:
            return FakeLab.shaped

        def settle(self) -> bool:  # a kept lab with a host cut or slowed is made whole before the run uses it
            settled.append(True)
            return False

        def end_jobs(self) -> list[int]:  # and without the jobs a run killed as it stopped left on its servers
            ended.append(True)
            return []

        def set_link(self, rate: object, delay: object) -> bool:
            calls.append((rate, delay))
            FakeLab.shaped = rate is not None
            return True

    monkeypatch.setattr(hosts, "HostsLab", FakeLab)
    monkeypatch.setattr(hosts, "servers_fio", lambda loaded, caps: "/usr/bin/fio")
    caps = FioCapabilities(binary="/usr/bin/fio", version="fio-3.33", options=frozenset(), engines=frozenset())
    text = "name: h\ntargets:\n  t: {kind: path, path: /tmp/x, size: 1MiB}\nworkload: {rw: randread}\n"
    assert hosts.KIND.for_run(load_plan_text(text, "p.yaml"), caps) is None  # no hosts lab: left alone
    run_lab = hosts.KIND.for_run(load_plan_text(text + "lab: {hosts: {count: 2}}\n", "p.yaml"), caps)
    assert run_lab is not None
    run_lab.up()
    run_lab.up()
    assert calls == [(None, None)]  # lifted once; then nothing to lift
    assert settled == ended == [True, True]
    shaped = hosts.KIND.for_run(load_plan_text(text + "lab: {hosts: {count: 2, link: 1Gbit}}\n", "p.yaml"), caps)
    FakeLab.shaped = True
    assert shaped is not None
    shaped.up()
    assert calls == [(None, None)]  # a plan that shapes the links sets them per case
    case = Case(case_id="c", target=PathTarget(name="t", path="/x", size_bytes=1 << 20), workload=WorkloadPoint(
        rw="randread", bs_bytes=4096, iodepth=1, numjobs=1, runtime_s=1.0, ramp_s=0.0, direct=False,
        ioengine="psync"))
    assert hosts.KIND.enter(case, {}) is None and calls == [(None, None)]  # a case of another plan: untouched


def test_lab_ceph_down_goes_on_past_a_cluster_whose_down_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A killed side-by-side run left three clusters; the first one's `down` raises: the other two still go, and
    the first error is raised after them (the down had stopped at it, the others' OSDs left up)."""
    import shutil

    from storbench.lab import ceph_kind

    class Cluster:
        def __init__(self, name: str, fails: bool) -> None:
            self.root, self.fails = tmp_path / name, fails
            self.root.mkdir()

        def down(self) -> None:
            if self.fails:
                raise UserError(f"{self.root.name}: umount failed")
            shutil.rmtree(self.root)

    first, second, third = Cluster("ceph", True), Cluster("ceph-2", False), Cluster("ceph-3", True)
    monkeypatch.setattr(ceph_kind.CephLab, "side_by_side", staticmethod(lambda root: [second, third]))
    said: list[str] = []
    with pytest.raises(UserError, match=r"^ceph: umount failed"):
        ceph_kind._command_down(first, said.append)  # type: ignore[arg-type]
    assert said == [f"ceph lab: down; {second.root} removed",
                    f"ceph lab: {third.root} not down: ceph-3: umount failed"]
    assert not second.root.exists()


def test_a_ceph_lab_taken_again_thaws_an_osd_a_killed_run_left_frozen(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run killed while an OSD was frozen (SIGSTOP) and the next run within the heartbeat grace: the OSD still
    counts as up, so the cluster was taken again frozen, and nothing thawed it before a faulted repetition did."""
    import signal
    import subprocess
    import time

    from storbench.lab.ceph import CephLab
    from storbench.lab.labdir import Daemon, start_time

    osd = subprocess.Popen(["sleep", "60"])
    try:
        os.kill(osd.pid, signal.SIGSTOP)
        lab = CephLab(tmp_path / "ceph")
        current = types.SimpleNamespace(spec="spec", address="127.0.0.1")
        monkeypatch.setattr(CephLab, "info", lambda self: current)
        monkeypatch.setattr(CephLab, "running", lambda self: True)
        monkeypatch.setattr(type(lab.dir), "live", lambda self: [Daemon("osd.0", osd.pid, start_time(osd.pid))])
        monkeypatch.setattr(CephLab, "connected", lambda self: contextlib.nullcontext())
        monkeypatch.setattr(CephLab, "_wait_ready", lambda self, spec, timeout_s: None)
        assert CephLab.up.__wrapped__(lab, "spec", "127.0.0.1") is current  # type: ignore[attr-defined]
        for _ in range(100):
            state = Path(f"/proc/{osd.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state != "T":
                break
            time.sleep(0.01)
        assert state != "T", "the OSD is still stopped"
    finally:
        osd.kill()
        osd.wait()


def test_a_keep_question_that_fails_tears_the_labs_down(planned: tuple[LoadedPlan, list[Case], Checked],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`--keep-lab` asks at the group's end whether a later group runs (it reads the store): an error there had
    skipped the whole tear-down, the labs left up."""
    loaded, cases, checked = planned
    calls: list[str] = []
    monkeypatch.setattr(sessions, "KINDS", {"a": _SessionKind("a", calls)})

    def unreadable(failing: bool) -> bool:
        raise UserError("results database r.db: disk I/O error")

    observer = _Observer()
    with pytest.raises(UserError, match="disk I/O error"), \
            sessions.lab_session(loaded, NO_LAB, cases, checked, observer, keep=unreadable):
        pass
    assert calls == ["up a (nfs_url None)", "down a"] and observer.events[-1] == "a lab: torn down"


def test_an_nfs_layout_that_fails_part_way_removes_the_files_it_may_have_made(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A layout on a `url:` export that timed out or failed part way raised before the target was prepared, so
    the run's clean-up never knew its files: they stayed on the operator's export."""
    from storbench.model import NfsTarget
    from storbench.targets import nfs

    removed: list[tuple[str, ...]] = []
    monkeypatch.setattr(nfs, "nfs_fio_binary", lambda: "/usr/local/bin/fio-nfs")
    monkeypatch.setattr(nfs.LocalExecutor, "run", lambda self, text, timeout_s: types.SimpleNamespace(
        timed_out=True, returncode=None, output_text="", stderr_tail="nfs: write timed out"))
    monkeypatch.setattr(nfs, "remove_laid_out", lambda prepared: removed.append(prepared.laid_out) or (1, ""))
    spec = NfsTarget("export", url="nfs://server/export", size_bytes=1 << 20)
    case = Case("c1", spec, WorkloadPoint("randread", 4096, 1, 2, 1.0, 0.0, False, "nfs"))
    with pytest.raises(UserError, match="laying out 2 file"):
        nfs.prepare_nfs_target(spec, "nfs://server/export", [case])
    assert removed == [("storbench.0.0", "storbench.1.0")]
