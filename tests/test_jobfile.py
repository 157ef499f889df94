"""Golden fio job files, and values that must never reach a job file."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from storbench.config import load_plan_text
from storbench.execute.k8s_manifests import pod_job_binding
from storbench.fio.jobfile import JobBinding, escape_fio_path, render_job
from storbench.model import Case, CephfsTarget, NfsTarget, PvcTarget, RbdTarget, WorkloadPoint
from storbench.plan import expand

GOLDEN = Path(__file__).parent / "golden"
PLAN = """
name: golden
targets:
  disk: {kind: path, path: /srv/bench, size: 1GiB}
  nvme: {kind: block, device: /dev/nvme0n1, destructive: true}
workload:
  rw: [randread, randrw]
  rwmixread: 70
  bs: [4k, 1m]
  iodepth: 32
  numjobs: 4
  runtime: 30s
  ramp: 5s
  fio: {norandommap: true, randrepeat: 0}
exclude:
  - {target: nvme, bs: 1m}
"""
BINDINGS = {
    "disk": JobBinding(options=(("directory", "/srv/bench"), ("filename_format", "storbench.$jobnum.$filenum"))),
    "nvme": JobBinding(options=(("filename", "/dev/nvme0n1"),)),
}


def _rendered() -> dict[str, str]:
    cases = expand(load_plan_text(PLAN, "golden.yaml"))
    out = {}
    for case in cases:
        w = case.workload
        name = f"{case.target.name}-{w.rw}-{w.bs_bytes}.fio"
        out[name] = render_job(case, BINDINGS[case.target.name])
    return out


def test_job_files_match_golden() -> None:
    rendered = _rendered()
    assert len(rendered) == 6
    if os.environ.get("STORBENCH_UPDATE_GOLDEN"):
        for name, text in rendered.items():
            (GOLDEN / name).write_text(text)
        pytest.fail("golden files rewritten: review the diff, then run again without STORBENCH_UPDATE_GOLDEN")
    for name, text in rendered.items():
        assert (GOLDEN / name).read_text() == text, f"{name} differs from its golden file"
    assert sorted(p.name for p in GOLDEN.glob("*.fio")) == sorted(rendered)


def test_randrw_job_has_the_mix_and_randread_does_not() -> None:
    rendered = _rendered()
    assert "rwmixread=70" in rendered["disk-randrw-4096.fio"]
    assert "rwmixread" not in rendered["disk-randread-4096.fio"]


@pytest.mark.parametrize("evil", ["4k\n[evil]\nexec_prerun=rm -rf /", "${HOME}", "a;b", "x#y", "[sec]", "'q'"])
def test_render_refuses_values_that_would_change_the_file(evil: str) -> None:
    case = expand(load_plan_text(PLAN, "golden.yaml"))[0]
    bad_case = replace(case, workload=replace(case.workload, fio_options=(("norandommap", evil),)))
    with pytest.raises(ValueError, match="refusing"):
        render_job(bad_case, BINDINGS["disk"])
    with pytest.raises(ValueError, match="refusing"):
        render_job(case, JobBinding(options=(("directory", evil),)))


def test_colons_in_paths_are_escaped() -> None:
    assert escape_fio_path("/mnt/a:b") == "/mnt/a\\:b"


def test_layout_job_writes_every_file_once_sequentially() -> None:
    from storbench.fio.jobfile import render_layout_job

    binding = JobBinding(options=(("nfs_url", "nfs://10.213.7.2/export"),
                                  ("filename_format", "storbench.$jobnum.$filenum")))
    text = render_layout_job(binding, 256 * 1024 * 1024, 4, "nfs")
    lines = text.splitlines()
    assert lines[1] == "[global]" and lines[-1] == "[layout]"
    assert {"ioengine=nfs", "rw=write", "bs=1m", "size=256m", "numjobs=4", "nfs_url=nfs://10.213.7.2/export",
            "filename_format=storbench.$jobnum.$filenum"} <= set(lines)
    with pytest.raises(ValueError, match="refusing"):
        render_layout_job(JobBinding(options=(("rbdname", "img\n[evil]"),)), 1 << 20, 1, "rbd")


def test_each_repetition_and_client_gets_its_own_reproducible_seed() -> None:
    plan = PLAN.replace("  fio: {norandommap: true, randrepeat: 0}\n", "")
    case = expand(load_plan_text(plan, "golden.yaml"))[0]
    binding = BINDINGS[case.target.name]
    first, again, second = (render_job(case, binding, rep) for rep in (0, 0, 1))
    assert first == again  # a re-run (or --resume) repeats the same offsets
    seeds = [next(line for line in text.splitlines() if line.startswith("randseed=")) for text in (first, second)]
    assert seeds[0] != seeds[1]
    assert first.replace(seeds[0], "") == second.replace(seeds[1], "")  # nothing else differs
    assert render_job(case, binding, 0, client=2) != first
    assert "randseed" not in render_job(case, binding)  # without a repetition: the plain case job
    # a plan that chose its own randomness keeps it
    own = expand(load_plan_text(PLAN, "golden.yaml"))[0]
    assert "randseed" not in render_job(own, BINDINGS[own.target.name], 1)


def test_the_nfs_removal_job_deletes_only_storbench_files() -> None:
    from storbench.fio.nfs_jobs import render_nfs_removal_job

    text = render_nfs_removal_job("nfs://10.213.7.2/export", "/cache/storbench-nfsmeta.so",
                                  ["storbench.0.0", "storbench.c2.1.0"])
    assert "nfsmeta_op=delete\n" in text and "filename=storbench.0.0:storbench.c2.1.0\n" in text
    assert "ioengine=external:/cache/storbench-nfsmeta.so\n" in text
    for bad in (["../etc/passwd"], ["storbench.0.0:x"], ["data.db"], []):
        with pytest.raises(ValueError):
            render_nfs_removal_job("nfs://10.213.7.2/export", "/e.so", bad)


def test_the_nfs_clear_job_deletes_every_name_a_metadata_case_could_have_made() -> None:
    """The metadata cycle's delete phase cut by its runtime left files on the export: the next cycle's create
    opened them (a create counted for a lookup), and they stayed after the run. The clear job names every file of
    every client's jobs in the operation's own directory, and passes over those not there."""
    from storbench.fio.nfs_jobs import render_nfs_clear_job
    from storbench.model import NFS_METADATA_ENGINE

    binding = JobBinding(options=(("nfs_url", "nfs://10.213.7.2/export"),
                                  ("filename_format", "storbench.$jobnum.$filenum")),
                         external_engine="/cache/storbench-nfsmeta.so")
    case = Case("c1", NfsTarget("export", url="nfs://10.213.7.2/export", size_bytes=None),
                WorkloadPoint("metadata", 4096, 1, 3, 5.0, 0.0, False, NFS_METADATA_ENGINE, files=60), clients=2)
    text = render_nfs_clear_job(case, binding)
    assert "nfsmeta_op=delete\n" in text and "nfsmeta_missing_ok=1\n" in text and "nrfiles=60\n" in text
    assert "numjobs=3\n" in text and "ioengine=external:/cache/storbench-nfsmeta.so\n" in text
    for client in (1, 2):  # each client's own names, in the cycle's directory
        assert f"[clear{client}]\nnfsmeta_url=nfs://10.213.7.2/export\n" \
            f"filename_format=/storbench-files/metadata/storbench.c{client}.$jobnum.$filenum\n" in text, text
    one = render_nfs_clear_job(replace(case, clients=1, workload=replace(case.workload, rw="create")), binding)
    assert "filename_format=/storbench-files/create/storbench.$jobnum.$filenum\n" in one and "[clear2]" not in one
    with pytest.raises(ValueError):
        render_nfs_clear_job(replace(case, workload=replace(case.workload, files=None)), binding)


def test_a_create_only_job_is_the_same_job_with_its_set_up_alone() -> None:
    from storbench.fio.layout import consumes_its_files, create_only_job, lays_out_at_start

    disk, nvme = (next(c for c in expand(load_plan_text(PLAN, "golden.yaml")) if c.target.name == name)
                  for name in ("disk", "nvme"))
    case = disk
    text = render_job(case, BINDINGS["disk"])
    laid = create_only_job(text)
    assert laid.replace("create_only=1\n", "", 1) == text and "[global]\ncreate_only=1\n" in laid
    with pytest.raises(ValueError):
        create_only_job("[job]\nrw=read\n")
    # a plan's startdelay and pre_read would delay or follow the layout: set back at the section's end
    delayed = render_job(replace(case, workload=replace(case.workload, fio_options=(
        *case.workload.fio_options, ("startdelay", "30s"), ("pre_read", "1")))), BINDINGS["disk"])
    assert create_only_job(delayed).endswith("startdelay=30s\npre_read=1\nstartdelay=0\npre_read=0\n")
    disk_files, device = BINDINGS["disk"], BINDINGS["nvme"]
    assert lays_out_at_start(case, disk_files)
    # the files are made by what is measured
    for rw in ("create", "metadata"):
        assert not lays_out_at_start(replace(case, workload=replace(case.workload, rw=rw)), disk_files)
    for rw in ("stat", "delete"):  # files fio lays out before it measures; delete's go with each repetition
        laid_first = replace(case, workload=replace(case.workload, rw=rw))
        assert lays_out_at_start(laid_first, disk_files) and consumes_its_files(laid_first) == (rw == "delete")
    assert not consumes_its_files(case)
    # objects PUT by a fill section first: laid out too (`fio.layout.layout_job` runs the fill alone)
    assert lays_out_at_start(replace(case, workload=replace(case.workload, rw="get")), disk_files)
    assert not lays_out_at_start(replace(case, workload=replace(case.workload, rw="put")), disk_files)
    assert not lays_out_at_start(nvme, device)  # a block device: nothing to lay out
    for target in (CephfsTarget(name="fs", size_bytes=1 << 30),  # a mounted claim, a CephFS mount: files in it
                   PvcTarget(name="c", size_bytes=1 << 30, storage_class=None, access_mode="ReadWriteOnce",
                             volume_mode="Filesystem", namespace="n", container_image="i", image_pull_policy="Never",
                             node_selector=(), destructive=False, start_budget_s=10.0)):
        binding = pod_job_binding(target) if isinstance(target, PvcTarget) else disk_files
        assert lays_out_at_start(replace(case, target=target), binding)
    claim = PvcTarget(name="c", size_bytes=1 << 30, storage_class=None, access_mode="ReadWriteOnce",
                      volume_mode="Block", namespace="n", container_image="i", image_pull_policy="Never",
                      node_selector=(), destructive=False, start_budget_s=10.0)
    assert not lays_out_at_start(replace(case, target=claim), pod_job_binding(claim))  # the claim is the device
    image = JobBinding(options=(("clientname", "admin"), ("pool", "rbd"), ("rbdname", "i")))
    assert not lays_out_at_start(replace(case, target=RbdTarget(name="img", size_bytes=1 << 30, pool="rbd",
                                                                image="i", client="admin")), image)  # when prepared
    export = JobBinding(options=(("nfs_url", "nfs://10.0.0.1/e"), ("filename_format", "f.$jobnum")))
    assert not lays_out_at_start(replace(case, target=NfsTarget(name="e", size_bytes=1 << 30)), export)  # with its lab


def test_a_failed_layout_says_why_in_a_few_words() -> None:
    from storbench.execute.base import layout_failure

    assert layout_failure(0, False, "anything") == ""
    assert layout_failure(None, True, "") == "fio did not finish it within its time"
    assert layout_failure(1, False, "fio: pid=0, err=28/file:filesetup.c:240, func=write, error=No space left on "
                                    "device\n") == ("fio exited 1: fio: pid=0, err=28/file:filesetup.c:240, "
                                                     "func=write, error=No space left on device")
    assert layout_failure(1, False, "") == "fio exited 1"


def test_the_client_ceiling_is_measured_with_the_options_that_cost_this_client_cpu() -> None:
    """The ceiling job dropped the case's pass-through options: refilled and compressed buffers, a block-size split
    cost the client CPU that the null engine's ceiling then did not, so "client-bound" (at 80 % of it) fired too
    rarely. Options of the storage path (a rate, a thinktime) stay out: the ceiling is of this client alone."""
    import subprocess

    from storbench.fio.jobfile import render_ceiling_job

    text = ("name: c\ntargets:\n  t: {kind: path, path: /srv/c, size: 1MiB}\nworkload: {rw: randwrite, runtime: 1s,"
            " fio: {refill_buffers: 1, buffer_compress_percentage: 50, bssplit: '4k/50:64k/50', thinktime: 10}}\n")
    (case,) = expand(load_plan_text(text, "c.yaml"))
    job = render_ceiling_job(case)
    assert "\nrefill_buffers=1\n" in job and "\nbuffer_compress_percentage=50\n" in job
    assert "\nbssplit=4k/50:64k/50\n" in job and "thinktime" not in job and "ioengine=null" in job
    parsed = subprocess.run(["fio", "--parse-only", "-"], input=job, capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr  # fio takes them on the null engine
