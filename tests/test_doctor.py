"""Issue 34: `storbench doctor` says what this machine has for each target kind and lab, and for what is missing
the exact command that installs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.requirements import REQUIREMENTS, Found, doctor_lines


def test_each_missing_piece_comes_with_the_command_that_installs_it() -> None:
    fio, ceph = REQUIREMENTS[0], next(r for r in REQUIREMENTS if r.name == "ceph-osd")
    lines = doctor_lines({fio: Found(True, "fio-3.33 at /usr/bin/fio"), ceph: Found(False)})
    assert lines[0] == "ok       fio (fio-3.33 at /usr/bin/fio): every target"
    ceph_line = next(line for line in lines if "ceph-mon" in line)
    assert ceph_line == ("missing  ceph-mon, -mgr, -osd: the Ceph lab; install: apt-get install -y ceph-mon ceph-mgr "
                         "ceph-osd ceph-common")
    assert len(lines) == len(REQUIREMENTS)  # a piece no probe answered is missing, not left out
    assert all(r.install for r in REQUIREMENTS) and len({r.what for r in REQUIREMENTS}) == len(REQUIREMENTS)


def test_doctor_says_whether_the_cpu_offers_the_counters_cycles_need(tmp_path: Path) -> None:
    """perf alone does not count cycles: a VM without a virtual PMU has perf and no CPU counters (`plan` refuses
    telemetry.cycles there), so doctor looks for the kernel's CPU performance-monitoring unit too."""
    from storbench.doctor import _pmu

    for unit in ("breakpoint", "software", "tracepoint"):
        (tmp_path / unit).mkdir()
    missing = _pmu("", str(tmp_path))
    assert missing == Found(False, f"under {tmp_path} only breakpoint, software, tracepoint")
    pmu = next(r for r in REQUIREMENTS if r.probe == "pmu")
    line = next(x for x in doctor_lines({pmu: missing}) if x.startswith("missing  CPU performance counters"))
    assert line.startswith(f"missing  CPU performance counters (under {tmp_path} only breakpoint, software, "
                           "tracepoint): telemetry.cycles (CPU cycles per I/O); install: a machine whose CPU"), line
    (tmp_path / "cpu_core").mkdir()  # a hybrid CPU's
    assert _pmu("", str(tmp_path)) == Found(True, f"cpu_core under {tmp_path}")


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_doctor_probes_this_machine_and_fails_only_without_fio(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 0 and "  ok       fio (fio-" in out and "every target" in out
    assert "fio's libaio engine" in out  # fio's own answer: Debian's has it
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on PATH: every program missing, each with its install
    monkeypatch.delenv("STORBENCH_FIO", raising=False)
    code, out, _ = run_cli(capsys, "doctor")
    assert code == 1
    assert "  missing  fio: every target; install: apt-get install -y fio" in out
    assert "  missing  nfs-ganesha: the NFS lab; install: apt-get install -y nfs-ganesha nfs-ganesha-vfs rpcbind" in out


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_what_a_fio_binary_supports_is_asked_once_per_binary_content(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`plan`, `run` and `doctor` ask fio (version, options, engines, each engine's options) once per binary: the
    answers are cached by its content's hash; an engine not asked before is asked alone; a binary rebuilt in place
    is asked again; a cache file others could have written is not read."""
    from storbench.execute.fio_binary import fio_capabilities

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    fio = tmp_path / "fio"
    fio.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {shutil.which("fio")} "$@"\n')
    fio.chmod(0o755)
    first = fio_capabilities(str(fio), ("libaio",))
    asked = calls.read_text().splitlines()
    assert asked == ["--version", "--cmdhelp", "--enghelp", "--enghelp=libaio"]
    assert fio_capabilities(str(fio), ("libaio",)) == first and len(calls.read_text().splitlines()) == 4
    both = fio_capabilities(str(fio), ("libaio", "psync"))
    assert calls.read_text().splitlines()[4:] == ["--enghelp=psync"] and both.version == first.version
    (cached,) = (tmp_path / "cache" / "storbench" / "fio-capabilities").glob("*.json")
    assert cached.stat().st_mode & 0o777 == 0o600
    cached.chmod(0o666)  # writable by others: not trusted, asked again
    fio_capabilities(str(fio), ("libaio",))
    assert len(calls.read_text().splitlines()) == 5 + 4
    fio.write_text(fio.read_text() + "# rebuilt\n")  # new content, new hash: asked again
    fio_capabilities(str(fio), ())
    assert len(calls.read_text().splitlines()) == 9 + 3


@pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio")
def test_a_wrong_fio_given_is_said_as_such_not_install_fio(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORBENCH_FIO", str(tmp_path / "fio-typo"))
    code, out, err = run_cli(capsys, "doctor")
    assert code == 2 and "fio-typo" in err and "apt-get install -y fio" not in out + err, out + err
    monkeypatch.delenv("STORBENCH_FIO")
    code, out, err = run_cli(capsys, "doctor", "--fio", "/bin/true")
    assert code == 2 and "/bin/true" in err and "does not look like fio" in err, out + err
    assert "apt-get install -y fio" not in out + err


def test_the_install_advice_is_a_command_that_works_here() -> None:
    """storbench is not on a package index: no `pip install 'storbench[...]'`; losetup is Debian's mount package."""
    for requirement in REQUIREMENTS:
        assert "storbench[" not in requirement.install, requirement
    assert next(r for r in REQUIREMENTS if r.name == "losetup").install == "apt-get install -y mount"
