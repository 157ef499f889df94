"""Ctrl-C and clean-ups: a clean-up runs to its end whatever the user presses meanwhile; a command's first Ctrl-C
interrupts it and the ones after it are held. Real SIGINTs sent to this process, so these tests run alone, in the
main thread (`serial`: never beside another test, never in an xdist worker's thread)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from storbench.cli.common import interrupted_once
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


def test_a_labs_commands_do_not_get_the_terminals_ctrl_c() -> None:
    """A command storbench runs (an unmount, `ip link del`) is in a session of its own: the terminal's Ctrl-C goes
    to the process group storbench leads there, not to the command in the middle of a clean-up."""
    assert run(["ps", "-o", "sid=", "-p", str(os.getpid())]).strip() != run(["sh", "-c", "ps -o sid= -p $$"]).strip()
