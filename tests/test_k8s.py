"""Kubernetes: the manifests and pod-log reading (pure, always run), and a real single-node cluster with 3 fio
pods on ReadWriteOnce, ReadWriteMany and Block-mode claims (behind `-m k8s`: scripts/k8s-e2e.sh)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from helpers import inside, run_cli, write_plan
from storbench.execute.k8s_manifests import (
    BLOCK_DEVICE,
    POD_SCRIPT,
    claim_manifest,
    claim_names,
    pod_job_binding,
    pod_manifest,
    pod_plans,
    split_pod_log,
)
from storbench.execute.kubernetes import PodResult, judge_pods
from storbench.model import Case, PvcTarget, Status, WorkloadPoint

FIXTURES = Path(__file__).parent / "fixtures"


def pvc_case(access_mode: str = "ReadWriteOnce", volume_mode: str = "Filesystem", clients: int = 3) -> Case:
    target = PvcTarget("fast_ssd", size_bytes=1 << 30, storage_class="gp3", access_mode=access_mode,
                       volume_mode=volume_mode, namespace="bench", container_image="registry.example/fio:3.33",
                       image_pull_policy="IfNotPresent", node_selector=(("disk", "nvme"),), destructive=False,
                       start_budget_s=20.0)
    return Case("c0ffee123456", target, WorkloadPoint("randread", 4096, 8, 1, 5.0, 1.0, True, "libaio"),
                clients=clients)


def test_claims_per_pod_or_shared() -> None:
    assert claim_names(pvc_case().target, 3) == ["sb-fast-ssd-1", "sb-fast-ssd-2", "sb-fast-ssd-3"]
    assert claim_names(pvc_case("ReadWriteMany").target, 3) == ["sb-fast-ssd"] * 3
    claim = claim_manifest("sb-fast-ssd-1", pvc_case().target, "run7")
    assert claim["spec"] == {"accessModes": ["ReadWriteOnce"], "volumeMode": "Filesystem",
                             "resources": {"requests": {"storage": str(1 << 30)}}, "storageClassName": "gp3"}
    assert claim["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "storbench"  # type: ignore[index]


def test_pods_spread_wait_for_a_common_start_and_take_no_plan_text_in_their_script() -> None:
    case = pvc_case()
    plans = pod_plans(case, "run7", 2)
    assert [p.name for p in plans] == [f"sb-c0ffee123456-run7-r2-c{i}" for i in (1, 2, 3)]
    pod = pod_manifest(plans[0], case.target, 1_800_000_000, "run7", "rep")
    spec = pod["spec"]
    container = spec["containers"][0]  # type: ignore[index]
    assert container["command"] == ["/bin/sh", "-c", POD_SCRIPT]  # a constant script
    assert container["env"] == [{"name": "START_AT", "value": "1800000000"}]
    assert container["image"] == "registry.example/fio:3.33"
    assert spec["nodeSelector"] == {"disk": "nvme"}  # type: ignore[index]
    assert spec["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"  # type: ignore[index]
    assert {"name": "data", "mountPath": "/data"} in container["volumeMounts"]
    block = pod_manifest(plans[0], pvc_case(volume_mode="Block").target, 1, "run7", "rep")
    block_container = block["spec"]["containers"][0]  # type: ignore[index]
    assert block_container["volumeDevices"] == [{"name": "data", "devicePath": BLOCK_DEVICE}]
    assert ("filename", BLOCK_DEVICE) in pod_job_binding(pvc_case(volume_mode="Block").target).options


def _log(started: float, json_text: str, status: int) -> str:
    return (f"fio: cache invalidation warning\nSTORBENCH-START {started}\nSTORBENCH-FIO-JSON\n{json_text}\n"
            f"STORBENCH-EXIT {status}\n")


def test_pod_logs_give_clients_skew_and_failures() -> None:
    fio_json = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
    started, text, status = split_pod_log(_log(100.25, fio_json, 0))
    assert started == 100.25 and status == 0 and json.loads(text)["fio version"]
    later = json.loads(fio_json)
    later["timestamp_ms"] += 400
    later_json = json.dumps(later)
    case = Case("c1", pvc_case().target, WorkloadPoint("randrw", 4096, 8, 2, 1.0, 0.0, True, "libaio", 70),
                clients=2)
    results = [PodResult("p1", "node-a", "Succeeded", _log(100.0, fio_json, 0)),
               PodResult("p2", "node-b", "Succeeded", _log(100.4, later_json, 0))]
    outcome = judge_pods(case, results, 2, job_text="x", started_at_s=0.0, finished_at_s=1.0, timeout_s=10)
    assert outcome.status == Status.OK and [c.client for c in outcome.clients] == ["p1@node-a", "p2@node-b"]
    assert outcome.start_skew_s == pytest.approx(0.4)
    failed = judge_pods(case, [results[0], PodResult("p2", "node-b", "Failed", "exec format error\n")], 2,
                        job_text="x", started_at_s=0.0, finished_at_s=1.0, timeout_s=10)
    assert failed.status == Status.FAILED and "pod p2 (Failed) returned no fio output" in failed.error
    stuck = judge_pods(case, [results[0], PodResult("p2", "", "Pending (watchdog)", "")], 2, job_text="x",
                       started_at_s=0.0, finished_at_s=1.0, timeout_s=10)
    assert stuck.status == Status.TIMEOUT and "watchdog" in stuck.error


@pytest.mark.parametrize(("target", "says"), [
    ("{kind: pvc, size: 1GiB, namespace: Bad_NS}", "namespace must be a DNS label"),
    ("{kind: pvc, size: 1GiB, image: 'x; rm -rf /'}", "is not an image reference"),
    ("{kind: pvc, size: 1GiB, node_selector: {'a b': c}}", "is not a valid label"),
    ("{kind: pvc, size: 1GiB, volume_mode: Block}", "writes to a raw Block volume"),
])
def test_bad_pvc_targets_are_one_line(target: str, says: str, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, f"name: k\ntargets:\n  sc: {target}\nworkload:\n  rw: randwrite\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------------------------------------------------------
# A real cluster


K8S_PLAN = """
name: k8s
targets:
  rwo: {kind: pvc, size: 64MiB, access_mode: ReadWriteOnce, image_pull_policy: Never}
  rwx: {kind: pvc, size: 64MiB, access_mode: ReadWriteMany, image_pull_policy: Never}
  block: {kind: pvc, size: 256MiB, volume_mode: Block, destructive: true, image_pull_policy: Never}
workload:
  rw: randwrite
  bs: 4k
  iodepth: 4
  runtime: 2s
clients: 3
repeat: 1
lab:
  k8s: {block_volumes: 3, block_size: 256MiB}
"""


def _binaries_built() -> bool:
    from storbench.lab.k8s import binaries_dir

    return (binaries_dir() / "kubelet").exists()


@pytest.mark.k8s
@pytest.mark.fio
@pytest.mark.skipif(os.environ.get("STORBENCH_K8S") != "1", reason="set STORBENCH_K8S=1 (scripts/k8s-e2e.sh)")
@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("containerd") is None or not _binaries_built(),
                    reason="needs root, scripts/setup.sh --k8s and scripts/build-kubernetes.sh")
def test_three_pods_on_rwo_rwx_and_block_claims_leave_nothing_behind(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("storbench.lab.ceph.DEFAULT_LAB_DIR", tmp_path / "lab")
    monkeypatch.delenv("KUBECONFIG", raising=False)
    plan = write_plan(tmp_path, K8S_PLAN)
    db = tmp_path / "r.db"
    with inside(tmp_path):
        code, out, err = run_cli(capsys, "run", str(plan), "--db", str(db))
    assert code == 0, out + err
    assert "k8s lab: up" in out and "k8s lab: torn down" in out
    code, out, _ = run_cli(capsys, "export", "--db", str(db), "--per-client", "--format", "json")
    records = json.loads(out)
    merged = [r for r in records if not r["client"]]
    assert sorted(r["target"] for r in merged) == ["block", "rwo", "rwx"]
    for record in merged:
        assert record["status"] == "ok" and record["clients_reporting"] == 3 and record["iops"] > 0
        assert record["start_skew_s"] is not None and record["start_skew_s"] < 2.0
        pods = [r for r in records if r["client"] and r["case_id"] == record["case_id"]]
        assert len(pods) == 3 and all("@storbench-node" in r["client"] for r in pods)
        # the merged IOPS are the pods' summed; the export rounds each figure to 0.1
        assert record["iops"] == pytest.approx(sum(r["iops"] for r in pods), abs=0.05 * (len(pods) + 1))
    # the lab is gone: no daemons, no bridges, no directory, no loop devices
    from storbench.lab.process import pids_with

    assert pids_with(str(tmp_path / "lab")) == []
    assert not (tmp_path / "lab" / "k8s").exists()
    links = os.popen("ip -o link show").read()
    assert "sbk8s0" not in links and "sbk8spods0" not in links
    assert str(tmp_path) not in os.popen("losetup --list").read()
