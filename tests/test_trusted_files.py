"""Files root reads or runs that someone else could have written: a plan's ceph.conf and S3 credentials file,
the libnfs/libcurl fio build and its engine. Real files, real owners and modes (root makes them another user's)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from helpers import run_cli, write_plan
from storbench.errors import UserError
from storbench.targets.nfs import nfs_fio_binary, nfs_metadata_engine
from storbench.trusted_files import file_problem, untrusted

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files to another user")
OTHER_UID = 4242

RBD_PLAN = """name: conf-check
targets:
  ceph:
    kind: rbd
    size: 1GiB
    conf: {conf}
workload: {{rw: randread, bs: 4k, runtime: 1s}}
"""

def test_a_file_root_may_use_is_a_regular_file_of_a_trusted_owner_closed_to_others() -> None:
    regular, link, directory = 0o100000, 0o120000, 0o040000
    owners = {0, 1000}
    assert file_problem(regular | 0o644, 0, owners) is None
    assert file_problem(regular | 0o600, 1000, owners) is None
    assert file_problem(regular | 0o644, 4242, owners) == "is owned by uid 4242"
    assert file_problem(regular | 0o664, 0, owners) == "has mode 0664, writable by group or others"
    assert file_problem(regular | 0o646, 0, owners) == "has mode 0646, writable by group or others"
    assert file_problem(link | 0o777, 0, owners) == "is a symbolic link"
    assert file_problem(directory | 0o755, 0, owners) == "is not a regular file"


@pytest.fixture
def conf_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "etc"
    directory.mkdir(mode=0o755)
    (directory / "ceph.conf").write_text("[global]\nmon_host = 127.0.0.1\n")
    (directory / "ceph.conf").chmod(0o644)
    return directory


@needs_root
@pytest.mark.skipif(shutil.which("rbd") is None, reason="needs the rbd tool (checked for rbd targets)")
def test_an_rbd_conf_someone_else_could_write_is_refused_naming_the_key(
        conf_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    conf = conf_dir / "ceph.conf"
    plan = write_plan(tmp_path, RBD_PLAN.format(conf=conf))
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, out + err  # root's file in root's directories: fine

    os.chown(conf, OTHER_UID, OTHER_UID)  # another user's conf could name any log_file, keyring or monitor
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and len(err.strip().splitlines()) == 1, out + err
    assert f"plan.yaml:6: targets.ceph.conf: {conf} is owned by uid {OTHER_UID}" in err, err
    assert "chown root and chmod go-w it" in err, err

    monkeypatch.setenv("SUDO_UID", str(OTHER_UID))  # ... unless that user is the one who ran sudo
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, out + err
    monkeypatch.delenv("SUDO_UID")

    os.chown(conf, 0, 0)
    conf.chmod(0o664)
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "has mode 0664, writable by group or others" in err, err

    conf.chmod(0o644)
    conf_dir.chmod(0o777)  # anyone could swap the file for their own
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and f"{conf_dir} is writable by group or others" in err, err
    conf_dir.chmod(0o1777)  # sticky, like /tmp: only the file's owner (root) can rename or delete it
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, out + err

    conf_dir.chmod(0o755)
    link = tmp_path / "link.conf"
    link.symlink_to(conf)
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, RBD_PLAN.format(conf=link), "link.yaml")))
    assert code == 2 and f"{link} is a symbolic link" in err, err

    missing = conf_dir / "missing" / "ceph.conf"  # someone could create the directory later
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, RBD_PLAN.format(conf=missing), "gone.yaml")))
    assert code == 2 and f"{conf_dir / 'missing'} does not exist" in err, err
    too_long = conf_dir / ("x" * 300) / "ceph.conf"
    code, out, err = run_cli(capsys, "plan", str(write_plan(tmp_path, RBD_PLAN.format(conf=too_long), "long.yaml")))
    # refused by the plan's schema now, before any file is looked at (a name over Linux's 255 bytes)
    assert code == 2 and "targets.ceph.conf: one of its names is 300 bytes long" in err, err


@needs_root
def test_an_ancestor_of_another_user_is_refused_unless_they_ran_sudo(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    (home / "ceph.conf").write_text("")
    (home / "ceph.conf").chmod(0o644)
    os.chown(home, OTHER_UID, OTHER_UID)  # the conf is root's, but its owner can rename it away and plant another
    monkeypatch.delenv("SUDO_UID", raising=False)
    assert untrusted(home / "ceph.conf", {0}) == f"{home} is owned by uid {OTHER_UID}"
    assert untrusted(home / "ceph.conf", {0, OTHER_UID}) is None


def _fake_build(cache: Path) -> Path:
    """A cached fio build as storbench setup --labs leaves it: fio and the metadata engine, root's, 0755."""
    build = cache / "storbench" / "fio-nfs"
    build.mkdir(parents=True, mode=0o755)
    for name in ("fio", "storbench-nfsmeta.so"):
        (build / name).write_text("#!/bin/sh\nprintf 'Available IO engines:\\n\\tnfs\\n'\n")  # --enghelp
        (build / name).chmod(0o755)
    return build


@needs_root
def test_the_nfs_fio_build_and_its_engine_are_used_only_from_root_or_our_own_directories(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    build = _fake_build(cache)
    monkeypatch.delenv("STORBENCH_FIO_NFS", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    assert nfs_fio_binary() == str(build / "fio")
    assert nfs_metadata_engine(str(build / "fio")) == str(build / "storbench-nfsmeta.so")

    ran = tmp_path / "ran"  # a planted fio would run as root: it must not even be asked for its engines
    (build / "fio").write_text(f"#!/bin/sh\ntouch {ran}\necho nfs\n")
    os.chown(build / "fio", OTHER_UID, OTHER_UID)
    with pytest.raises(UserError) as refused:
        nfs_fio_binary()
    assert f"{build / 'fio'} is owned by uid {OTHER_UID}" in refused.value.one_line()
    assert "STORBENCH_FIO_NFS" in refused.value.hint and not ran.exists()
    os.chown(build / "fio", 0, 0)

    os.chown(cache, OTHER_UID, OTHER_UID)  # a user's cache, as with sudo -E: they could swap the build
    with pytest.raises(UserError, match=re.escape(f"{cache} is owned by uid {OTHER_UID}")):
        nfs_fio_binary()
    os.chown(cache, 0, 0)
    monkeypatch.setenv("SUDO_UID", str(OTHER_UID))  # code runs only from root's or the euid's files, sudo or not
    os.chown(build / "storbench-nfsmeta.so", OTHER_UID, OTHER_UID)
    with pytest.raises(UserError, match=re.escape(f"storbench-nfsmeta.so is owned by uid {OTHER_UID}")):
        nfs_metadata_engine(str(build / "fio"))

    (build / "storbench-nfsmeta.so").unlink()
    (build / "storbench-nfsmeta.so").symlink_to(build / "fio")
    with pytest.raises(UserError, match=re.escape("storbench-nfsmeta.so is a symbolic link")):
        nfs_metadata_engine(str(build / "fio"))

    monkeypatch.setenv("STORBENCH_FIO_NFS", str(build / "fio"))  # the operator's choice passes the same check
    build.chmod(0o775)
    with pytest.raises(UserError, match=re.escape(f"{build} is writable by group or others")):
        nfs_fio_binary()


@needs_root
def test_the_k8s_lab_runs_no_kubernetes_binary_another_user_could_have_planted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from storbench.errors import UserError
    from storbench.lab.k8s import K8sLab, binaries_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    binaries = binaries_dir()
    binaries.mkdir(parents=True)
    for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet"):
        (binaries / name).write_text("#!/bin/sh\ntouch /tmp/planted\n")
        (binaries / name).chmod(0o755)
    os.chown(binaries / "kube-scheduler", OTHER_UID, OTHER_UID)
    lab = K8sLab(tmp_path / "lab")
    with pytest.raises(UserError, match=r"k8s lab: kube-scheduler: .* is owned by uid 4242; refusing to run it"):
        lab.up("fio")
    assert not (tmp_path / "lab").exists()  # refused before the lab was made
