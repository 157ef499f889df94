"""Lab cgroups are made under storbench's own cgroup, never at the root where a limit placed on storbench does not
reach them: /proc/self/cgroup parsed, and the groups made in a fake cgroup tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from storbench.errors import UserError
from storbench.lab import cpu_quota

V1_TEXT = """9:name=systemd:/
8:pids:/
4:memory:/process_api/3f8e9174
3:cpuset:/jobs/bench
2:cpu,cpuacct:/jobs/bench
0::/
"""
V2_TEXT = "0::/user.slice/user-0.slice/session-4.scope\n"


def test_proc_self_cgroup_is_parsed_per_controller() -> None:
    own = cpu_quota.parse_proc_cgroup(V1_TEXT)
    assert own["cpu"] == own["cpuacct"] == "/jobs/bench"
    assert own["memory"] == "/process_api/3f8e9174" and own["pids"] == "/" and own[""] == "/"
    assert own["name=systemd"] == "/"
    assert cpu_quota.parse_proc_cgroup(V2_TEXT) == {"": "/user.slice/user-0.slice/session-4.scope"}
    assert cpu_quota.parse_proc_cgroup("garbage\n3:cpu:relative\n") == {}


def test_own_group_dir_is_under_the_mount_and_refuses_odd_paths() -> None:
    mount = Path("/sys/fs/cgroup/cpu")
    assert cpu_quota.own_group_dir(mount, "/") == mount
    assert cpu_quota.own_group_dir(mount, "/a/b") == mount / "a" / "b"
    assert cpu_quota.own_group_dir(mount, "/a/../..") is None
    assert cpu_quota.own_group_dir(mount, "/a (deleted)") is None


def _v1_tree(root: Path) -> Path:
    cpu = root / "cpu,cpuacct"
    (cpu / "jobs" / "bench").mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text("-1\n")
    (root / "cpu").symlink_to(cpu)
    return cpu


def test_v1_groups_are_made_under_our_own_cpu_cgroup(tmp_path: Path) -> None:
    cpu = _v1_tree(tmp_path)
    made = cpu_quota.limit("ceph", {"osd.0": 123}, 1.5, cgroup_root=tmp_path, proc_cgroup=V1_TEXT)
    group = tmp_path / "cpu" / "jobs" / "bench" / "storbench-lab-ceph-osd.0"
    assert made == {"osd.0": group}
    assert (group / "cgroup.procs").read_text() == "123\n"
    assert cpu_quota.read_limit(group) == 1.5
    assert not list(cpu.glob("storbench-lab-*"))  # nothing at the root
    ctl = cpu_quota.controller(tmp_path, V1_TEXT)
    assert ctl is not None and cpu_quota.group_dir(ctl, "ceph", "osd.0") == group
    legacy = cpu / "storbench-lab-ceph-osd.1"  # made at the root by an older version
    legacy.mkdir()
    (group / "cgroup.procs").unlink()
    (group / "cpu.cfs_quota_us").unlink()
    cpu_quota.remove_groups("ceph", cgroup_root=tmp_path, proc_cgroup=V1_TEXT)
    assert not group.exists() and not legacy.exists()


def test_v1_cpusets_are_made_under_our_own_cpuset_cgroup(tmp_path: Path) -> None:
    cpuset = tmp_path / "cpuset"
    ours = cpuset / "jobs" / "bench"
    ours.mkdir(parents=True)
    (cpuset / "cpuset.cpus").write_text("0-3\n")
    (ours / "cpuset.effective_cpus").write_text("0-1\n")
    (ours / "cpuset.effective_mems").write_text("0\n")
    cpu_quota.pin("ceph", {"osd.0": 7}, None, cgroup_root=tmp_path, proc_cgroup=V1_TEXT)
    group = ours / "storbench-lab-ceph-osd.0"
    assert (group / "cpuset.cpus").read_text() == "0-1\n" and (group / "cgroup.procs").read_text() == "7\n"
    assert not list(cpuset.glob("storbench-lab-*"))


def test_no_cgroup_of_ours_in_the_hierarchy_is_no_controller(tmp_path: Path) -> None:
    _v1_tree(tmp_path)
    assert cpu_quota.controller(tmp_path, "2:cpu,cpuacct:/elsewhere\n") is None  # not in this mount's view
    assert cpu_quota.controller(tmp_path, "4:memory:/x\n") is None
    with pytest.raises(UserError, match="under storbench's own cgroup"):
        cpu_quota.limit("ceph", {"osd.0": 1}, 1.0, cgroup_root=tmp_path, proc_cgroup="4:memory:/x\n")


def _v2_tree(root: Path) -> Path:
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    ours = root / "user.slice" / "user-0.slice" / "session-4.scope"
    ours.mkdir(parents=True)
    (ours / "cgroup.controllers").write_text("cpu memory pids\n")
    return ours


def test_v2_at_the_root_makes_groups_at_the_root(tmp_path: Path) -> None:
    _v2_tree(tmp_path)
    made = cpu_quota.limit("ceph", {"osd.0": 5}, 2.0, cgroup_root=tmp_path, proc_cgroup="0::/\n")
    assert made["osd.0"] == tmp_path / "storbench-lab-ceph-osd.0"
    assert (tmp_path / "cgroup.subtree_control").read_text() == "+cpu\n"
    assert (made["osd.0"] / "cpu.max").read_text() == "200000 100000\n"


def test_v2_below_the_root_enables_cpu_in_our_cgroup(tmp_path: Path) -> None:
    ours = _v2_tree(tmp_path)
    made = cpu_quota.limit("ceph", {"osd.0": 5}, 1.0, cgroup_root=tmp_path, proc_cgroup=V2_TEXT)
    assert made["osd.0"] == ours / "storbench-lab-ceph-osd.0"
    assert (ours / "cgroup.subtree_control").read_text() == "+cpu\n"
    assert not (tmp_path / "cgroup.subtree_control").exists() and not list(tmp_path.glob("storbench-lab-*"))


def test_v2_cgroup_holding_processes_refuses_rather_than_escape(tmp_path: Path) -> None:
    ours = _v2_tree(tmp_path)
    (ours / "cgroup.subtree_control").mkdir()  # the write fails, as the kernel's EBUSY would
    with pytest.raises(UserError, match="own cgroup") as caught:
        cpu_quota.limit("ceph", {"osd.0": 5}, 1.0, cgroup_root=tmp_path, proc_cgroup=V2_TEXT)
    assert "\n" not in str(caught.value) and caught.value.hint
    assert not list(tmp_path.rglob("storbench-lab-*"))


def test_a_quota_our_own_cgroup_refuses_is_one_line(tmp_path: Path) -> None:
    _v1_tree(tmp_path)
    group = tmp_path / "cpu" / "jobs" / "bench" / "storbench-lab-ceph-osd.0"
    (group / "cpu.cfs_quota_us").mkdir(parents=True)  # the write fails, as v1's EINVAL above the parent's quota
    with pytest.raises(UserError, match=r"cannot give osd.0 a CPU quota of 1.5 cores") as caught:
        cpu_quota.limit("ceph", {"osd.0": 1}, 1.5, cgroup_root=tmp_path, proc_cgroup=V1_TEXT)
    assert "lower osd_cpus" in caught.value.hint


def test_a_lab_group_or_loop_device_that_will_not_go_is_said_and_its_record_kept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cgroup still busy after its wait, or a loop device still attached, had been passed over in silence and the
    record that finds it deleted with the lab directory: `lab ceph down` then said "removed"."""
    import errno
    import itertools
    import json

    from storbench.errors import UserError
    from storbench.lab import cpu_quota, devices

    def busy(path: object) -> None:
        raise OSError(errno.EBUSY, "Device or resource busy")

    monkeypatch.setattr(cpu_quota.os, "rmdir", busy)
    with pytest.raises(UserError, match=r"storbench-lab-ceph-osd\.0 still have processes in them"):
        cpu_quota._remove_dirs([tmp_path / "storbench-lab-ceph-osd.0"], timeout_s=0.05)
    record = tmp_path / devices.STATE_FILE
    record.write_text(json.dumps({"loops": ["/dev/loop97"]}))
    clock = itertools.count(0, 5.0)
    monkeypatch.setattr(devices.time, "time", lambda: next(clock))
    monkeypatch.setattr(devices.time, "sleep", lambda s: None)
    monkeypatch.setattr(devices, "run", lambda argv, **_: "")
    monkeypatch.setattr(devices, "_backs_onto", lambda loop, root: loop == "/dev/loop97")
    monkeypatch.setattr(devices, "_attached", lambda loop: True)
    with pytest.raises(UserError, match=r"loop device\(s\) /dev/loop97 still attached"):
        devices.remove(tmp_path)
    assert record.exists()
