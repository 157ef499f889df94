"""Raw block devices: writing is refused without `destructive: true`, and always while mounted."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from helpers import repetition_rows, run_cli, write_plan
from storbench.targets.guards import device_in_use, parse_mounted_devices, parse_swap_devices

MARKER = b"storbench-marker-do-not-destroy" * 32

MOUNTINFO = """\
22 1 254:1 / / rw,relatime - ext4 /dev/vda1 rw
42 27 7:0 / /mnt/x rw,relatime - ext4 /dev/loop0 rw
"""


def test_mountinfo_and_swaps_parsing() -> None:
    assert parse_mounted_devices(MOUNTINFO) == {(254, 1), (7, 0)}
    swaps = "Filename Type Size Used Priority\n/dev/sdb2 partition 100 0 -2\n"
    assert parse_swap_devices(swaps) == {"/dev/sdb2"}


def test_device_in_use_rules() -> None:
    mounted = parse_mounted_devices(MOUNTINFO)
    assert device_in_use([(7, 0)], mounted, ["/dev/loop0"], frozenset(), []) is not None
    assert device_in_use([(7, 1)], mounted, ["/dev/loop1"], frozenset(), []) is None
    # a partition mounted makes the whole disk busy
    assert device_in_use([(8, 0), (254, 1)], mounted, ["/dev/sda", "/dev/sda1"], frozenset(), []) is not None
    assert device_in_use([(8, 16)], frozenset(), ["/dev/sdb", "/dev/sdb2"], frozenset({"/dev/sdb2"}), []) is not None
    assert "dm-0" in (device_in_use([(8, 32)], frozenset(), ["/dev/sdc"], frozenset(), ["dm-0"]) or "")
    # an active swap area /proc/swaps names /dev/dm-1, the plan by another name: its device number tells
    assert "swap" in (device_in_use([(253, 1)], frozenset(), ["/dev/mapper/rhel-swap"], frozenset({"/dev/dm-1"}), [],
                                    swap_numbers=frozenset({(253, 1)})) or "")


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[str]:
    if os.geteuid() != 0 or shutil.which("losetup") is None:
        pytest.skip("needs root and losetup")
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.write(MARKER)
        f.truncate(32 * 1024 * 1024)
    done = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"no loop device: {done.stderr.strip()}")
    device = done.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["umount", device], capture_output=True, check=False)
        subprocess.run(["losetup", "-d", device], check=False)


def _plan(device: str, rw: str, destructive: str) -> str:
    return f"""
name: rawdev
targets:
  dev: {{kind: block, device: {device}{destructive}}}
workload:
  rw: {rw}
  bs: 4k
  runtime: 1s
  direct: true
repeat: 1
"""


def _first_bytes(device: str) -> bytes:
    with open(device, "rb") as f:
        return f.read(len(MARKER))


@pytest.mark.fio
def test_write_without_destructive_is_refused_and_data_untouched(loop_device: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, _plan(loop_device, "randwrite", ""))
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 2
    assert "destroying its data" in err and "destructive: true" in err and len(err.strip().splitlines()) == 1
    assert _first_bytes(loop_device) == MARKER
    assert not (tmp_path / "r.db").exists() or repetition_rows(tmp_path / "r.db") == []


@pytest.mark.fio
def test_reading_a_device_needs_no_permission(loop_device: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, _plan(loop_device, "randread", ""))
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 0, err
    assert _first_bytes(loop_device) == MARKER


@pytest.mark.fio
def test_destructive_write_runs(loop_device: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, _plan(loop_device, "write", ", destructive: true"))
    code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
    assert code == 0, err
    assert [s for _, _, s in repetition_rows(tmp_path / "r.db")] == ["ok"]
    assert _first_bytes(loop_device) != MARKER


@pytest.mark.fio
def test_mounted_device_is_refused_even_when_destructive(loop_device: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("needs mkfs.ext4")
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_device], check=True)
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    if subprocess.run(["mount", loop_device, str(mount_point)], capture_output=True, check=False).returncode:
        pytest.skip("cannot mount here")
    try:
        plan = write_plan(tmp_path, _plan(loop_device, "randwrite", ", destructive: true"))
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
        assert code == 2 and "mounted" in err and len(err.strip().splitlines()) == 1
        # fio only reads, but the checking writer writes past its region: the device is as much in use
        checked = write_plan(tmp_path, _plan(loop_device, "randread", ", size: 1MiB, destructive: true")
                             + "check_writes: {blocks: 64}\n", "checked.yaml")
        code, _, err = run_cli(capsys, "run", str(checked), "--db", str(tmp_path / "r.db"))
        assert code == 2 and "cannot be written to while in use" in err and "mounted" in err, err
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


def test_not_a_block_device_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, _plan("/dev/null", "randread", ""))
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "not a block device" in err


def test_device_in_use_rules_beyond_this_mount_namespace() -> None:
    free = ([(7, 3)], frozenset(), ["/dev/loop3"], frozenset(), [])
    assert device_in_use(*free) is None
    assert "ceph-osd (pid 42)" in (device_in_use(*free, open_by=[(42, "ceph-osd")]) or "")
    lab = device_in_use(*free, loop_backing="/var/lib/storbench/lab/k8s/block-1.img",
                        lab_roots=["/var/lib/storbench/lab"])
    assert lab is not None and "storbench lab" in lab
    assert device_in_use(*free, loop_backing="/srv/disk.img", lab_roots=["/var/lib/storbench/lab"]) is None
    assert "loop7" in (device_in_use(*free, backs_loops=["loop7"]) or "")


@pytest.mark.fio
def test_a_device_another_process_holds_open_is_refused(loop_device: str, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """What a Ceph OSD (or a database, or a VM) on the device looks like: a process with it open."""
    with open(loop_device, "rb") as held:
        holder = subprocess.Popen(["sleep", "60"], stdin=held)
    try:
        plan = write_plan(tmp_path, _plan(loop_device, "randwrite", ", destructive: true"))
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
        assert code == 2 and f"open by sleep (pid {holder.pid})" in err, err
    finally:
        holder.kill()
        holder.wait()
    assert _first_bytes(loop_device) == MARKER


@pytest.mark.fio
def test_a_device_mounted_in_another_mount_namespace_is_refused(loop_device: str, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    if shutil.which("mkfs.ext4") is None or shutil.which("unshare") is None:
        pytest.skip("needs mkfs.ext4 and unshare")
    subprocess.run(["mkfs.ext4", "-q", "-F", loop_device], check=True)
    mount_point = tmp_path / "mnt"
    mount_point.mkdir()
    # the mount exists only inside the new namespace; the sleeping shell keeps that namespace alive
    inside = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                               f"mount {loop_device} {mount_point} && echo mounted && exec sleep 60"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert inside.stdout is not None and inside.stdout.readline().strip() == "mounted"
        assert str(mount_point) not in Path("/proc/self/mounts").read_text()  # invisible from here
        plan = write_plan(tmp_path, _plan(loop_device, "randwrite", ", destructive: true"))
        code, _, err = run_cli(capsys, "run", str(plan), "--db", str(tmp_path / "r.db"))
        assert code == 2 and "another mount namespace" in err, err
    finally:
        inside.kill()
        inside.wait()


def _root_device() -> str | None:
    """The block device the root file system is mounted from (/dev/vda, /dev/nvme0n1p2), or None."""
    st = os.stat("/")
    link = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if not link.exists():
        return None
    device = Path("/dev") / link.resolve().name
    return str(device) if device.is_block_device() else None


def test_a_mounted_device_is_told_it_cannot_be_used_not_to_add_destructive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A randwrite on the mounted root disk was told to add `destructive: true`, then refused as mounted: the
    first hint led nowhere. The device in use is said first, with or without `destructive`. (`plan` only reads.)"""
    device = _root_device()
    if device is None:
        pytest.skip("the root file system is not on a block device here")
    for destructive in ("", ", destructive: true"):
        plan = write_plan(tmp_path, _plan(device, "randwrite", destructive))
        code, _, err = run_cli(capsys, "plan", str(plan))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{device} cannot be written to while in use: it (or one of its partitions) is mounted" in err
        assert "add 'destructive: true'" not in err and "destructive: true does not change this" in err


def test_no_test_file_goes_into_the_systems_own_directories(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A plan's bytes (`buffer_pattern`) written as a file where programs read files (/etc/cron.d, completion
    scripts, systemd units) could be run as root: a path target there is refused in one line, whatever its
    owner and mode; storbench's lab directory and /var/tmp are not the system's."""
    from storbench.targets.guards import system_directory

    assert system_directory("/etc/cron.d") == "/etc" and system_directory("/usr/share/bash-completion") == "/usr"
    assert system_directory("/") == "/" and system_directory("/var/spool/cron") == "/var"
    assert system_directory("/var/lib/storbench/lab/nfs/mnt") is None and system_directory("/var/tmp/x") is None
    assert system_directory("/etcetera") is None and system_directory(str(tmp_path)) is None
    # a home's dot-directories, read at login (Fedora's ~/.bashrc sources ~/.bashrc.d/*); its other directories not
    assert system_directory("/root/.bashrc.d") == "/root/.bashrc.d"
    assert system_directory("/home/bob/.config/autostart") == "/home/bob/.config"
    assert system_directory("/root/bench") is None and system_directory("/home/bob/data/.x") is None
    plan = write_plan(tmp_path, "name: planted\ntargets:\n  d: {kind: path, path: /etc/cron.d, size: 4k}\n"
                      "workload: {rw: write, bs: 4k, runtime: 1s, fio: {buffer_pattern: '0x2a'}}\nkeep_files: true\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "/etc/cron.d is in the system's own directory /etc" in err, err
    assert len(err.strip().splitlines()) == 1 and "hint:" in err


def test_a_device_is_written_through_its_own_node_not_a_name_for_it(loop_device: str, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A link to the device: checked and written as the node it names now (fio had been given the link, which its
    owner could point elsewhere after the checks); a path out of /dev through '..' is refused when the plan loads."""
    from storbench.model import BlockTarget
    from storbench.targets.block import check_block_target

    alias = Path(f"/dev/storbench-test-{os.getpid()}")
    alias.symlink_to(loop_device)
    try:
        prepared = check_block_target(BlockTarget("dev", device=str(alias)), [])
        assert dict(prepared.binding.options)["filename"] == loop_device
    finally:
        alias.unlink()
    plan = write_plan(tmp_path, _plan("/dev/../tmp/disk", "randread", ""))
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "without '.' or '..'" in err, err
    # a logical volume of a volume group not active: its directory in /dev is not there either (it had raised)
    plan = write_plan(tmp_path, _plan("/dev/storbench-no-vg/lv0", "randread", ""), "novg.yaml")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and "cannot stat /dev/storbench-no-vg/lv0" in err, err
