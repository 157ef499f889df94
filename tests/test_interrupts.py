"""Ctrl-C and clean-ups: a clean-up runs to its end whatever the user presses meanwhile; a command's first Ctrl-C
interrupts it and the ones after it are held. Real SIGINTs sent to this process, so these tests run alone, in the
main thread (`serial`: never beside another test, never in an xdist worker's thread)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from storbench.cli.common import held_saying, interrupted_once
from storbench.errors import UserError
from storbench.shell import interrupts_held, run

pytestmark = pytest.mark.serial


def _press() -> None:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.05)  # the handler runs in the main thread at its next bytecode


def test_a_ctrl_c_during_a_clean_up_waits_for_its_end() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupts_held():
        steps.append("unmounted")
        _press()
        steps.append("loop device detached")  # reached: the press was held
    assert steps == ["unmounted", "loop device detached"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # given back
    with interrupts_held():  # nothing pressed: nothing raised
        steps.append("done")
    with pytest.raises(ValueError, match="its own"), interrupts_held():  # a failing clean-up tells its own error
        _press()
        raise ValueError("its own")


def test_a_commands_first_ctrl_c_interrupts_and_the_next_ones_are_held(capfd: pytest.CaptureFixture[str]) -> None:
    cleaned: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupted_once("tearing down the labs"):
        try:
            _press()
            raise AssertionError("the first Ctrl-C interrupts")
        finally:
            _press()
            _press()  # an impatient user: held, the clean-up goes on
            cleaned.append("lab down")
    assert cleaned == ["lab down"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler
    err = capfd.readouterr().err
    assert err.count("storbench: tearing down the labs first; Ctrl-C is held until that is done") == 1, err


def test_lab_down_holds_every_ctrl_c_and_says_so_once(capfd: pytest.CaptureFixture[str]) -> None:
    """`storbench lab KIND down`: no press stops a teardown, and the user is told why the first did nothing."""
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), held_saying("tearing the nfs lab down"):
        _press()
        steps.append("ganesha stopped")
        _press()
        steps.append("export removed")
    assert steps == ["ganesha stopped", "export removed"]
    err = capfd.readouterr().err
    assert err.count("storbench: tearing the nfs lab down first; Ctrl-C is held until that is done") == 1, err
    with held_saying("tearing the nfs lab down"):  # nothing pressed: nothing said, nothing raised
        steps.append("done")
    assert capfd.readouterr().err == ""


def test_a_labs_commands_do_not_get_the_terminals_ctrl_c() -> None:
    """A command storbench runs (an unmount, `ip link del`) is in a session of its own: the terminal's Ctrl-C goes
    to the process group storbench leads there, not to the command in the middle of a clean-up."""
    assert run(["ps", "-o", "sid=", "-p", str(os.getpid())]).strip() != run(["sh", "-c", "ps -o sid= -p $$"]).strip()


def test_a_press_held_in_a_teardown_is_the_commands_first_and_the_next_is_held(
        capfd: pytest.CaptureFixture[str]) -> None:
    """A run that ended well, the first Ctrl-C pressed during its last teardown: held until the lab is down, then
    it interrupts the command as its first press; one pressed in the clean-up after that (the test files removed)
    is held as a second press is, so that clean-up runs to its end too."""
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupted_once("cleaning up"):
        try:
            with interrupts_held():
                _press()
                steps.append("lab down")
        finally:
            _press()
            steps.append("test files removed")
    assert steps == ["lab down", "test files removed"]
    assert "Ctrl-C is held until that is done" in capfd.readouterr().err


def test_a_command_given_up_takes_what_it_started_with_it(tmp_path: Path) -> None:
    """Past its time (or interrupted while storbench waits), a command's whole session is killed: a process it
    started in the background does not live on, as it did when only the command itself was killed."""
    pid_file = tmp_path / "pid"
    with pytest.raises(UserError, match="did not finish in 1s"):
        run(["sh", "-c", f"sleep 60 & echo $! > {pid_file}; wait"], timeout_s=1)
    stat = Path(f"/proc/{int(pid_file.read_text())}/stat")
    time.sleep(0.2)
    # gone, or dead and not yet reaped by whichever process took it in (a zombie: state Z)
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def _signal(signum: int) -> None:
    os.kill(os.getpid(), signum)
    time.sleep(0.05)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_sigterm_or_sighup_is_a_ctrl_c(signum: int) -> None:
    """`timeout`, `kill` or a closed SSH session end a run as Ctrl-C does (left to their defaults they ended Python
    at once: no teardown ran): the first interrupts, one during a clean-up is held to its end; the handlers
    before are back after."""
    before = signal.getsignal(signum)
    cleaned: list[str] = []
    with pytest.raises(KeyboardInterrupt), interrupted_once("tearing down the labs"):
        try:
            _signal(signum)
            raise AssertionError("the first signal interrupts")
        finally:
            with interrupts_held():
                _signal(signum)
                cleaned.append("lab down")
    assert cleaned == ["lab down"] and signal.getsignal(signum) == before


@pytest.mark.fio
def test_a_run_ended_by_sigterm_removes_its_test_files_and_says_how_to_go_on(tmp_path: Path) -> None:
    """A real `storbench run` given SIGTERM mid-repetition (a CI job's `timeout`): fio is stopped, the test files are
    removed, the finished repetitions are stored, and the line says how to resume; exit 130."""
    import subprocess
    import sys

    data = tmp_path / "data"
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"name: termed\ntargets:\n  d: {{kind: path, path: {data}, size: 8MiB}}\n"
                    "workload: {rw: randread, bs: 4k, runtime: 2s, direct: false}\nrepeat: 4\n"
                    "telemetry: {enabled: false}\n")
    process = subprocess.Popen([sys.executable, "-m", "storbench", "run", str(plan), "--db", str(tmp_path / "r.db")],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)  # into the second or third repetition
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 130, out + err
    assert "interrupted: every finished repetition is stored" in err and "--resume" in err, err
    assert not list(data.glob("storbench.*")), list(data.iterdir())


def test_a_ctrl_c_in_the_clean_up_after_the_last_repetition_leaves_the_run_finished(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every repetition stored, then Ctrl-C while the test files go: the press is held to the clean-up's end and
    interrupts after it, and the run is finished (it had been left "interrupted, or still running", all there)."""
    from storbench import orchestrate
    from storbench.checks import check_everything
    from storbench.config import load_plan_text
    from storbench.execute.fake import FakeExecutor, Replay
    from storbench.plan import expand
    from storbench.store import open_store

    output = (Path(__file__).parent / "fixtures" / "randrw-numjobs2.jsonplus.json").read_text()
    loaded = load_plan_text(f"name: held\ntargets:\n  t: {{kind: path, path: {tmp_path / 'data'}, size: 1MiB}}\n"
                            "workload: {rw: randrw, bs: 4k, runtime: 1s, direct: false}\nrepeat: 2\n"
                            "telemetry: {enabled: false}\n", "plan.yaml")
    cases = expand(loaded)
    checked = check_everything(loaded, cases, "/usr/bin/fio", create=True)
    removed: list[str] = []

    def remove_pressed(*args: object, **kwargs: object) -> None:
        _press()
        removed.append("test files")  # reached: held

    monkeypatch.setattr(orchestrate, "remove_run_test_files", remove_pressed)
    store = open_store(tmp_path / "r.db")
    try:
        with pytest.raises(KeyboardInterrupt):
            orchestrate.run_plan(loaded, cases, checked, store, FakeExecutor(lambda call: Replay(output)),
                                 _Quiet(), resume=False)
        (run,) = store.runs()
        assert removed == ["test files"] and len(store.repetitions()) == 2
        assert run.finished_at_s is not None
    finally:
        store.close()


class _Quiet:
    def run_started(self, *args: object) -> None:
        pass

    def repetition_started(self, *args: object) -> None:
        pass

    def repetition_finished(self, *args: object) -> None:
        pass

    def event(self, *args: object) -> None:
        pass


def test_after_the_command_every_press_is_ignored_to_the_process_end() -> None:
    """An impatient user pressing on: a Ctrl-C after an interrupted command had said how to go on, landing on the
    way out, turned its exit 130 into a traceback and -2 (seen in CI). The process's entry ignores them from there;
    one that lands as the command returns is exit 130."""
    from storbench.cli import entry
    from storbench.shell import INTERRUPTS

    before = {signum: signal.getsignal(signum) for signum in INTERRUPTS}
    try:
        with pytest.raises(SystemExit) as ended:
            entry(lambda: 130)
        assert ended.value.code == 130
        assert all(signal.getsignal(signum) is signal.SIG_IGN for signum in INTERRUPTS)
        _press()  # ignored: nothing raised

        def pressed_on_return() -> int:
            raise KeyboardInterrupt

        with pytest.raises(SystemExit) as ended:
            entry(pressed_on_return)
        assert ended.value.code == 130
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
