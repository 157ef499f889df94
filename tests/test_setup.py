"""`storbench setup` from the installed package: the packages of each option, and source packages taken from the
machine's own apt sources (its mirror, an internal one), never a host storbench names."""

from __future__ import annotations

import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.apt_sources import configured_entries, deb_src_text, has_sources
from storbench.errors import UserError
from storbench.requirements import SETUP_PACKAGES, setup_packages

INTERNAL_DEB822 = """Types: deb
# the site's mirror
URIs: https://mirror.internal.example/debian
Suites: bookworm bookworm-updates
Components: main contrib
Signed-By: /usr/share/keyrings/internal.gpg

Types: deb
URIs: https://mirror.internal.example/debian-security
Suites: bookworm-security
Components: main
Enabled: no
"""
ONE_LINE = """# deb http://deb.debian.org/debian bookworm main
deb [arch=amd64 signed-by=/usr/share/keyrings/other.gpg] http://apt.internal.example/debian bookworm main # ours
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
"""


def test_source_entries_are_derived_from_the_machines_own_binary_entries() -> None:
    entries = configured_entries({"/etc/apt/sources.list.d/internal.sources": INTERNAL_DEB822,
                                  "/etc/apt/sources.list": ONE_LINE})
    assert not has_sources(entries)
    text = deb_src_text(entries)
    stanzas = text.split("\n\n")
    assert "deb.debian.org" not in text  # commented out there: not a source
    assert "Types: deb-src\nURIs: https://mirror.internal.example/debian\nSuites: bookworm bookworm-updates\n" \
           "Components: main contrib\nSigned-By: /usr/share/keyrings/internal.gpg" in text
    assert "debian-security" not in text  # Enabled: no
    assert "URIs: http://apt.internal.example/debian\nSuites: bookworm\nComponents: main\n" \
           "Architectures: amd64\nSigned-By: /usr/share/keyrings/other.gpg" in text
    assert len(stanzas) == 2 and "cdrom" not in text  # every enabled deb entry but a disc
    # a machine that has source entries already keeps its own; our own file is not read as the machine's
    with_src = {"/etc/apt/sources.list": ONE_LINE + "deb-src http://apt.internal.example/debian bookworm main\n"}
    assert has_sources(configured_entries(with_src))
    assert not has_sources(configured_entries({"/etc/apt/sources.list.d/storbench-deb-src.sources":
                                               "Types: deb-src\nURIs: http://x/debian\nSuites: bookworm\n"}))
    assert deb_src_text(configured_entries({})) == ""
    # a deb-src of another repository (or of the security suite alone) is not Debian main's: derived for the rest
    other_src = configured_entries({"/etc/apt/sources.list": ONE_LINE + "deb-src http://other.example/x stable main\n",
                                    "/etc/apt/sources.list.d/internal.sources": INTERNAL_DEB822})
    assert not has_sources(other_src) and "apt.internal.example" in deb_src_text(other_src)
    covered = configured_entries({"/etc/apt/sources.list": ONE_LINE + "deb-src http://apt.internal.example/debian "
                                                           "bookworm main\n"})
    assert deb_src_text(covered) == ""  # nothing missing, nothing written
    # a third party's own repository (Docker's `stable`) has no source packages: none derived for it
    docker = configured_entries({"/etc/apt/sources.list": "deb-src http://apt.internal.example/debian bookworm main\n"
                                 "deb http://apt.internal.example/debian bookworm main\n"
                                 "deb [arch=amd64] https://download.docker.example/linux/debian bookworm stable\n"})
    assert has_sources(docker) and deb_src_text(docker) == ""
    # deb822 field names in any case, as apt reads them
    lower = configured_entries({"/etc/apt/sources.list.d/x.sources": "types: deb\nuris: http://m/debian\n"
                                                                     "suites: bookworm\ncomponents: main\n"})
    assert lower and lower[0].uris == ("http://m/debian",) and not has_sources(lower)


def test_each_option_adds_its_packages_once() -> None:
    base = setup_packages(dev=False, labs=False, k8s=False)
    assert base == SETUP_PACKAGES["base"] and "fio" in base
    everything = setup_packages(dev=True, labs=True, k8s=True)
    assert len(everything) == len(set(everything))  # skopeo, gcc, iproute2 in several options: once
    assert {"ceph-osd", "nfs-ganesha", "libnfs-dev", "containerd", "skopeo", "chromium"} <= set(everything)
    assert "containerd" not in setup_packages(dev=False, labs=True, k8s=False)


def test_the_metadata_engines_source_comes_with_the_package() -> None:
    assert "nfsmeta_op" in (files("storbench") / "native" / "storbench_nfsmeta.c").read_text()


def test_setup_says_what_it_would_install_and_that_it_needs_root(capsys: pytest.CaptureFixture[str],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr("storbench.machine_setup.missing_packages", lambda packages: ["ceph-osd"])
    code, _, err = run_cli(capsys, "setup", "--labs")
    assert code == 2 and "runs as root" in err and "ceph-osd" in err and "sudo" in err, err


def test_setup_installs_nothing_that_is_there(capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """On this machine (scripts/setup.sh ran `storbench setup`), the base packages are all there: dpkg is asked,
    apt-get is not run."""
    if subprocess.run(["dpkg", "-s", "fio"], capture_output=True).returncode:
        pytest.skip("fio is not installed from Debian's package here")
    ran: list[tuple[str, ...]] = []
    monkeypatch.setattr("storbench.machine_setup._apt", lambda *args, **kwargs: ran.append(args))
    code, out, err = run_cli(capsys, "setup")
    assert code == 0 and ran == [] and "installing" not in out and "storbench doctor" in out, out + err


def test_setup_for_scripts_builds_the_nfs_fio_but_leaves_python_to_the_lock(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`setup --labs --system-only` (what scripts/setup.sh runs, before it installs the lock): system packages and
    the fio with the nfs and http engines, which the NFS and S3 tests need on a fresh machine; not pyfuse3."""
    built: list[str] = []
    modules: list[str] = []
    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr("storbench.machine_setup.install_packages", lambda packages, say: [])
    monkeypatch.setattr("storbench.machine_setup.build_fio_nfs", lambda say: built.append("fio") or "/cache/fio")
    monkeypatch.setattr("storbench.machine_setup.python_modules", lambda say: modules.append("asked"))
    code, out, err = run_cli(capsys, "setup", "--labs", "--system-only")
    assert code == 0 and built == ["fio"] and modules == [], out + err
    assert "fio with the nfs and http engines at /cache/fio" in out
    code, out, err = run_cli(capsys, "setup", "--labs")
    assert code == 0 and built == ["fio", "fio"] and len(modules) == 1, out + err


def test_the_labs_python_packages_are_installed_at_the_locks_versions_and_hashes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`setup --labs` of an installed copy had installed `pyfuse3>=3.2 trio>=0.22`, whatever the index served. The
    lock it ships is requirements/labs.lock's own blocks, and only the missing packages go to pip, with
    --require-hashes and --no-deps."""
    from importlib.resources import files

    from storbench import machine_setup

    shipped = machine_setup.locked_blocks(files("storbench").joinpath(machine_setup.LAB_MODULES_LOCK).read_text())
    project = machine_setup.locked_blocks((Path(__file__).parents[1] / "requirements" / "labs.lock").read_text())
    assert set(shipped) == set(machine_setup.LOCKED_MODULES)
    assert all(shipped[name] == project[name] and "--hash=sha256:" in shipped[name] for name in shipped)
    asked: list[list[str]] = []
    monkeypatch.setattr(machine_setup.importlib.util, "find_spec", lambda module: None if module == "trio" else 1)
    monkeypatch.setattr(machine_setup, "run", lambda argv, **_: asked.append(
        [*argv, Path(argv[-1]).read_text()]) or "")
    machine_setup.python_modules(lambda line: None)
    (argv,) = asked
    assert "--require-hashes" in argv and "--no-deps" in argv
    assert argv[-1].startswith("trio==") and argv[-1].count("==") == 1  # only what is missing


def test_a_skip_for_want_of_what_the_test_set_up_installs_fails_the_suite() -> None:
    """scripts/test.sh sets STORBENCH_SET_UP=1 after `setup.sh --dev --labs`: a lab test that then skips for want
    of what that set-up installs (the nfs fio, Ceph, Chromium) fails; the Kubernetes and long scenarios, which it does
    not set up, stay skipped, and nothing fails outside test.sh."""
    from conftest import skip_is_a_setup_failure

    nfs = "Skipped: needs root, nfs-ganesha and a libnfs fio (scripts/setup.sh --labs; STORBENCH_FIO_NFS)"
    assert skip_is_a_setup_failure(nfs, set_up=True)
    assert not skip_is_a_setup_failure(nfs, set_up=False)
    assert skip_is_a_setup_failure("no fio with the http engine (x): storbench setup --labs builds it", set_up=True)
    assert skip_is_a_setup_failure("chromium is not installed (scripts/setup.sh --dev installs it)", set_up=True)
    for elsewhere in ("set STORBENCH_K8S=1 (scripts/k8s-e2e.sh); needs root, scripts/setup.sh --k8s",
                      "needs skopeo, docker-registry, apache2-utils and busybox (scripts/setup.sh --labs --k8s)",
                      "a long scenario: scripts/ceph-e2e.sh runs it (STORBENCH_LONG=1)", "needs root"):
        assert not skip_is_a_setup_failure(elsewhere, set_up=True), elsewhere


def test_a_fio_build_that_fails_or_needs_root_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Not root, every package there and no deb-src entry: writing one needs root (it had been a PermissionError
    traceback); a build step that fails says which, with its last lines."""
    from storbench import machine_setup

    monkeypatch.setattr("os.geteuid", lambda: 1000)
    monkeypatch.setattr(machine_setup, "missing_packages", lambda packages: [])
    monkeypatch.setattr(machine_setup, "_source_files", lambda: {"/etc/apt/sources.list": "deb http://m/debian "
                                                                 "bookworm main\n"})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no cached fio
    code, _, err = run_cli(capsys, "setup", "--labs", "--system-only")
    assert code == 2 and "needs root" in err and "sudo storbench setup --labs" in err and "Traceback" not in err, err
    with pytest.raises(UserError, match=r"building fio: make failed: .*No rule to make target"):
        machine_setup._step(["make", "no-such-target"], "building fio: make", timeout_s=60, hint="h", cwd=tmp_path)
    with pytest.raises(UserError, match=r"building fio: ./configure failed \("):
        machine_setup._step(["./configure"], "building fio: ./configure", timeout_s=60, hint="h",
                            cwd=tmp_path)  # no such program here


def test_a_package_dpkg_removed_but_remembers_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench import machine_setup

    answers = {"fio": (0, "install ok installed"), "ceph-osd": (0, "deinstall ok config-files"), "nope": (1, "")}

    def dpkg_query(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        code, status = answers[argv[-1]]
        return subprocess.CompletedProcess(argv, code, status, "")

    monkeypatch.setattr(machine_setup.subprocess, "run", dpkg_query)
    monkeypatch.setattr(machine_setup.shutil, "which", lambda name: f"/usr/bin/{name}")
    assert machine_setup.missing_packages(("fio", "ceph-osd", "nope")) == ["ceph-osd", "nope"]
