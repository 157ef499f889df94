"""Kubernetes with a plan from someone else, run as root: unprivileged pods, no kubeconfig from a plan, and only
storbench's own objects used or deleted. The cluster is a fake CoreV1Api (the real one: scripts/k8s-e2e.sh)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
from kubernetes.client.exceptions import ApiException

from helpers import inside, run_cli, write_plan
from storbench.errors import UserError
from storbench.execute.k8s_manifests import pod_manifest, pod_plans
from storbench.execute.kubernetes import KubernetesExecutor
from storbench.model import Case, PvcTarget, Status, WorkloadPoint

FIXTURES = Path(__file__).parent / "fixtures"


def run_labels(run_label: str) -> dict[str, str]:
    return {"app.kubernetes.io/managed-by": "storbench", "storbench/run": run_label}


def pvc_case(volume_mode: str = "Filesystem", clients: int = 2, access_mode: str = "ReadWriteOnce") -> Case:
    target = PvcTarget("fast_ssd", size_bytes=1 << 30, storage_class=None, destructive=True, access_mode=access_mode,
                       volume_mode=volume_mode, namespace="bench", container_image="registry.example/fio:3.33",
                       image_pull_policy="IfNotPresent", node_selector=(), start_budget_s=1.0)
    return Case("c0ffee123456", target, WorkloadPoint("randread", 4096, 8, 1, 5.0, 1.0, True, "libaio"),
                clients=clients)


# ---------------------------------------------------------------------------------------------------------------
# The pods


@pytest.mark.parametrize("volume_mode", ["Block", "Filesystem"])
def test_fio_pods_are_unprivileged_without_capabilities_or_an_api_token(volume_mode: str) -> None:
    case = pvc_case(volume_mode)
    pod = pod_manifest(pod_plans(case, "run7", 1)[0], case.target, 1, "run7", "rep")
    spec = pod["spec"]
    container = spec["containers"][0]  # type: ignore[index]
    security = container["securityContext"]
    assert "privileged" not in security  # volumeDevices gives the pod its device without it
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert spec["automountServiceAccountToken"] is False  # type: ignore[index]
    assert "hostNetwork" not in spec and "hostPID" not in spec and "hostIPC" not in spec  # type: ignore[operator]
    assert [v for v in spec["volumes"] if "hostPath" in v] == []  # type: ignore[index]
    if volume_mode == "Block":
        assert container["volumeDevices"] == [{"name": "data", "devicePath": "/dev/storbench"}]


RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                      "projected", "secret"}


def restricted_violations(pod: dict[str, object]) -> list[str]:
    """What Kubernetes' restricted Pod Security Standard (its documented rules, v1.33) refuses in ``pod``."""
    spec: dict = pod["spec"]  # type: ignore[assignment]
    pod_security: dict = spec.get("securityContext") or {}
    found = []
    for volume in spec["volumes"]:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"volume {volume['name']}: {sorted(kinds)}")
    for container in spec["containers"]:
        security: dict = container.get("securityContext") or {}
        if security.get("privileged") or security.get("allowPrivilegeEscalation") is not False:
            found.append("privilege escalation allowed")
        if "ALL" not in (security.get("capabilities") or {}).get("drop", []):
            found.append("capabilities not dropped")
        if set((security.get("capabilities") or {}).get("add", [])) - {"NET_BIND_SERVICE"}:
            found.append("capabilities added")
        if not security.get("runAsNonRoot", pod_security.get("runAsNonRoot")):
            found.append("runAsNonRoot not true")
        if security.get("runAsUser", pod_security.get("runAsUser")) == 0:
            found.append("runAsUser 0")
        seccomp = security.get("seccompProfile") or pod_security.get("seccompProfile") or {}
        if seccomp.get("type") not in ("RuntimeDefault", "Localhost"):
            found.append("no seccomp profile")
        if container.get("ports") and any(port.get("hostPort") for port in container["ports"]):
            found.append("host port")
    if spec.get("hostNetwork") or spec.get("hostPID") or spec.get("hostIPC"):
        found.append("host namespaces")
    return found


@pytest.mark.parametrize("volume_mode", ["Block", "Filesystem"])
def test_restricted_fio_pods_meet_the_restricted_pod_security_standard_and_baseline_ones_run_as_root(
        volume_mode: str) -> None:
    from dataclasses import replace

    from storbench.execute.k8s_manifests import FIO_USER

    case = pvc_case(volume_mode)
    assert case.target.pod_security == "restricted"  # type: ignore[attr-defined]
    pod = pod_manifest(pod_plans(case, "run7", 1)[0], case.target, 1, "run7", "rep")  # type: ignore[arg-type]
    assert restricted_violations(pod) == []
    context = pod["spec"]["securityContext"]  # type: ignore[index]
    assert context["runAsUser"] == context["fsGroup"] == FIO_USER  # the claim given to fio's group
    baseline = replace(case.target, pod_security="baseline")
    pod = pod_manifest(pod_plans(case, "run7", 1)[0], baseline, 1, "run7", "rep")  # type: ignore[arg-type]
    assert restricted_violations(pod) == ["runAsNonRoot not true", "no seccomp profile"]


def test_a_claim_fios_user_cannot_write_is_said_with_what_to_do_not_as_missing_output() -> None:
    from storbench.execute.k8s_manifests import EXIT_MARKER, UNWRITABLE_MARKER, split_pod_log
    from storbench.execute.pod_results import PodResult, judge_pods

    assert split_pod_log(f"{UNWRITABLE_MARKER} /data\n").unwritable == "/data"
    for path, says in (("/data", "StorageClass does not apply the pod's fsGroup"),
                       ("/dev/storbench", "device_ownership_from_security_context")):
        log = f"{UNWRITABLE_MARKER} {path}\n{EXIT_MARKER} 3\n"
        outcome = judge_pods(pvc_case(clients=1), [PodResult(pod="p1", node="n1", phase="Failed", log=log)], 1,
                             job_text="", started_at_s=0.0, finished_at_s=1.0, timeout_s=10.0)
        assert outcome.status == Status.FAILED
        assert f"{path} is not writable by fio's user (65532" in outcome.error and says in outcome.error
        assert "pod_security: baseline" in outcome.error
    from dataclasses import replace as changed

    baseline = pvc_case(clients=1)
    baseline = changed(baseline, target=changed(baseline.target, pod_security="baseline"))
    outcome = judge_pods(baseline, [PodResult(pod="p1", node="n1", phase="Failed",
                                              log=f"{UNWRITABLE_MARKER} /data\n")], 1,
                         job_text="", started_at_s=0.0, finished_at_s=1.0, timeout_s=10.0)
    assert "not writable by the image's user (pod_security: baseline)" in outcome.error
    assert "65532" not in outcome.error


@pytest.mark.parametrize(("targets", "lab", "says"), [
    ("  p: {kind: pvc, size: 1GiB}\n", "{}", "makes directories only root may write"),
    ("  p: {kind: pvc, size: 1GiB, storage_class: storbench-hostpath}\n", "{csi: true}", "only root may write"),
    ("  p: {kind: pvc, size: 1GiB, pod_security: baseline}\n  q: {kind: pvc, size: 1GiB, storage_class: x}\n", "{}",
     "share namespace storbench with pod_security baseline and restricted"),
])
def test_restricted_pods_on_root_only_storage_or_mixed_in_one_namespace_are_one_line(
        targets: str, lab: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, f"name: k\ntargets:\n{targets}workload: {{rw: randread}}\nlab:\n  k8s: {lab}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err


def test_pvc_targets_of_both_levels_cannot_be_put_in_one_namespace_with_n(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, "name: k\ntargets:\n  a: {kind: pvc, size: 1GiB, namespace: x, pod_security: baseline}"
                      "\n  b: {kind: pvc, size: 1GiB, namespace: y, storage_class: c}\nworkload: {rw: randread}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, err
    code, _, err = run_cli(capsys, "plan", "-n", "bench", str(plan))
    assert code == 2 and "-n bench puts pvc targets with pod_security baseline and restricted" in err, err


def test_restricted_pods_on_the_labs_csi_class_or_block_volumes_are_planned(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, "name: k\ntargets:\n  c: {kind: pvc, size: 1GiB, storage_class: storbench-csi}\n"
                      "  b: {kind: pvc, size: 1GiB, volume_mode: Block}\nworkload: {rw: randread}\n"
                      "lab:\n  k8s: {csi: true}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, err
    # provisioning and expanding make no pod: the lab's host-path class serves them whatever the level
    plan = write_plan(tmp_path, "name: k\ntargets:\n  h: {kind: pvc, size: 1GiB}\nworkload: {rw: provision}\n"
                      "lab:\n  k8s: {}\n")
    code, _, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, err


# ---------------------------------------------------------------------------------------------------------------
# The kubeconfig

EXEC_KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: 'https://127.0.0.1:1'}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: /bin/sh
      args: [-c, 'touch MARKER; echo {}']
      interactiveMode: Never
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
"""


@pytest.mark.parametrize("command", ["plan", "run"])
def test_a_plan_cannot_name_a_kubeconfig_so_its_exec_plugin_never_runs(command: str, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    marker = tmp_path / "plugin-ran"
    (tmp_path / "evil.kubeconfig").write_text(EXEC_KUBECONFIG.replace("MARKER", str(marker)))
    plan = write_plan(tmp_path, "name: k\ntargets:\n  sc: {kind: pvc, size: 1GiB, kubeconfig: evil.kubeconfig}\n"
                                "workload:\n  rw: randread\n  runtime: 1s\nrepeat: 1\n")
    argv = [command, str(plan)] + (["--db", str(tmp_path / "r.db")] if command == "run" else [])
    with inside(tmp_path):
        code, _, err = run_cli(capsys, *argv)
    assert code == 2 and "kubeconfig is not taken from a plan" in err and len(err.strip().splitlines()) == 1, err
    assert ":3:" in err or "targets.sc.kubeconfig" in err  # names the place
    assert not marker.exists()


def test_a_plan_without_kubeconfig_still_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write_plan(tmp_path, "name: k\ntargets:\n  sc: {kind: pvc, size: 1GiB, kubeconfig: null}\n"
                                "workload:\n  rw: randread\n")
    code, out, err = run_cli(capsys, "plan", str(plan))
    assert code == 0, out + err


# ---------------------------------------------------------------------------------------------------------------
# Only storbench's own objects: a fake cluster


class FakeCore:
    """The CoreV1Api calls the executor makes, over dicts; every call is recorded."""

    def __init__(self, namespaces: dict[str, dict[str, str]] | None = None,
                 claims: dict[str, dict[str, str]] | None = None,
                 config_maps: dict[str, dict[str, str]] | None = None, log: str = "") -> None:
        self.namespaces = dict(namespaces or {})
        self.claims = dict(claims or {})
        self.config_maps = dict(config_maps or {})
        self.pods: dict[str, dict[str, str]] = {}
        self.log = log
        self.calls: list[tuple[str, str]] = []

    @staticmethod
    def _labels(manifest: dict[str, object]) -> dict[str, str]:
        return dict(manifest["metadata"].get("labels", {}))  # type: ignore[attr-defined]

    def _create(self, store: dict[str, dict[str, str]], call: str, manifest: dict[str, object]) -> object:
        name = manifest["metadata"]["name"]  # type: ignore[index]
        self.calls.append((call, name))
        if name in store:
            raise ApiException(status=409, reason="Conflict")
        store[name] = self._labels(manifest)
        return manifest

    def _read(self, store: dict[str, dict[str, str]], call: str, name: str) -> object:
        self.calls.append((call, name))
        if name not in store:
            raise ApiException(status=404, reason="Not Found")
        return SimpleNamespace(metadata=SimpleNamespace(name=name, labels=store[name] or None))

    def _remove(self, store: dict[str, dict[str, str]], call: str, name: str) -> None:
        self.calls.append((call, name))
        if name not in store:
            raise ApiException(status=404, reason="Not Found")
        del store[name]

    def read_namespace(self, name: str) -> object:
        return self._read(self.namespaces, "read_namespace", name)

    def list_node(self, **_: object) -> object:  # an identity without cluster-wide reads: no preferred nodes
        self.calls.append(("list_node", ""))
        raise ApiException(status=403, reason="Forbidden")

    def create_namespace(self, manifest: dict[str, object]) -> object:
        return self._create(self.namespaces, "create_namespace", manifest)

    def read_namespaced_service_account(self, name: str, namespace: str) -> object:
        self.calls.append(("read_service_account", namespace))
        return SimpleNamespace(metadata=SimpleNamespace(name=name))

    def delete_namespace(self, name: str) -> None:
        self._remove(self.namespaces, "delete_namespace", name)

    def create_namespaced_persistent_volume_claim(self, namespace: str, manifest: dict[str, object]) -> object:
        return self._create(self.claims, "create_claim", manifest)

    def read_namespaced_persistent_volume_claim(self, name: str, namespace: str) -> object:
        return self._read(self.claims, "read_claim", name)

    def delete_namespaced_persistent_volume_claim(self, name: str, namespace: str) -> None:
        self._remove(self.claims, "delete_claim", name)

    def create_namespaced_config_map(self, namespace: str, manifest: dict[str, object]) -> object:
        return self._create(self.config_maps, "create_configmap", manifest)

    def delete_namespaced_config_map(self, name: str, namespace: str) -> None:
        self._remove(self.config_maps, "delete_configmap", name)

    def create_namespaced_pod(self, namespace: str, manifest: dict[str, object]) -> object:
        return self._create(self.pods, "create_pod", manifest)

    def delete_namespaced_pod(self, name: str, namespace: str, grace_period_seconds: int = 30) -> None:
        self._remove(self.pods, "delete_pod", name)

    def list_namespaced_pod(self, namespace: str, label_selector: str = "", **_: object) -> object:
        return SimpleNamespace(items=[
            SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(phase="Succeeded"),
                            spec=SimpleNamespace(node_name="node-a")) for name in self.pods])

    def read_namespaced_pod_log(self, name: str, namespace: str, **follow: object) -> str:
        return self.log  # all at once, followed or not

    def deleted(self) -> list[tuple[str, str]]:
        return [call for call in self.calls if call[0].startswith("delete_")]


Make = Callable[..., KubernetesExecutor]


@pytest.fixture
def executor(monkeypatch: pytest.MonkeyPatch) -> Make:
    def make(core: FakeCore, namespace: str = "bench") -> KubernetesExecutor:
        monkeypatch.setattr("storbench.execute.kubernetes.core_api", lambda kubeconfig, context=None, **_: core)
        return KubernetesExecutor(None, namespace, "run7")

    return make


def test_labels_for_this_run_are_needed_to_use_an_object() -> None:
    from storbench.execute.k8s_manifests import made_for_run

    assert made_for_run(run_labels("run7"), "run7")
    assert not made_for_run(run_labels("run8"), "run7")
    assert not made_for_run({"storbench/run": "run7"}, "run7")  # not managed by storbench
    assert not made_for_run(None, "run7") and not made_for_run({}, "run7")


def test_someone_elses_claim_of_the_same_name_is_refused_and_left_alone(executor: Make) -> None:
    core = FakeCore(namespaces={"bench": {}}, claims={"sb-fast-ssd-1": {"app": "postgres"}})
    pods = executor(core)
    pods.ensure_namespace()
    with pytest.raises(UserError) as raised:
        pods.ensure_claims(pvc_case())
    assert "claim bench/sb-fast-ssd-1 already exists and is not storbench's" in raised.value.one_line()
    assert len(raised.value.one_line().splitlines()) == 1
    pods.close()
    assert core.deleted() == []
    assert "sb-fast-ssd-1" in core.claims and "bench" in core.namespaces


def test_a_claim_of_another_run_is_refused_too(executor: Make) -> None:
    core = FakeCore(namespaces={"bench": {}}, claims={"sb-fast-ssd": run_labels("run6")})
    with pytest.raises(UserError, match="not storbench's for this run"):
        executor(core).ensure_claims(pvc_case(access_mode="ReadWriteMany"))


def test_a_claim_an_earlier_attempt_of_this_run_made_is_used_and_deleted_with_the_new_ones(executor: Make) -> None:
    """A session killed before its close left its claim; the resumed run used it and had left it for good."""
    core = FakeCore(namespaces={"bench": {}}, claims={"sb-fast-ssd-1": run_labels("run7"),
                                                      "sb-other-1": run_labels("run7")})
    pods = executor(core)
    pods.ensure_namespace()
    pods.ensure_claims(pvc_case())
    assert pods.claims == {"sb-fast-ssd-1", "sb-fast-ssd-2"}
    pods.close()
    # the namespace existed before without this run's labels: it stays; a claim the run never used stays too
    assert core.deleted() == [("delete_claim", "sb-fast-ssd-1"), ("delete_claim", "sb-fast-ssd-2")]
    assert set(core.namespaces) == {"bench"} and set(core.claims) == {"sb-other-1"}


def test_a_namespace_an_earlier_attempt_of_this_run_made_is_removed_and_anothers_is_not(executor: Make) -> None:
    for labels, removed in ((run_labels("run7"), True), (run_labels("run6"), False),
                            ({"app.kubernetes.io/managed-by": "storbench"}, False)):
        core = FakeCore(namespaces={"fresh": dict(labels)})
        pods = executor(core, "fresh")
        pods.ensure_namespace()
        pods.ensure_claims(pvc_case(clients=1))
        pods.close()
        assert (("delete_namespace", "fresh") in core.deleted()) is removed, labels
        assert ("fresh" in core.namespaces) is not removed


def test_a_namespace_storbench_made_is_removed_with_its_claims(executor: Make) -> None:
    core = FakeCore()
    pods = executor(core, "fresh")
    pods.ensure_namespace()
    pods.ensure_claims(pvc_case(clients=1))
    assert core.namespaces["fresh"] == {**run_labels("run7"), "pod-security.kubernetes.io/enforce": "restricted"}
    pods.close()
    assert core.deleted() == [("delete_claim", "sb-fast-ssd-1"), ("delete_namespace", "fresh")]
    assert core.namespaces == {} and core.claims == {}


def test_a_repetition_deletes_its_own_pods_and_config_maps(executor: Make) -> None:
    fio_json = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
    log = f"STORBENCH-START 1\nSTORBENCH-FIO-JSON\n{fio_json}\nSTORBENCH-EXIT 0\n"
    core = FakeCore(namespaces={"bench": {}}, log=log)
    case = Case("c1", pvc_case().target, WorkloadPoint("randrw", 4096, 8, 2, 1.0, 0.0, True, "libaio", 70),
                clients=2)
    pods = executor(core)
    outcome = pods.run_case(case, ["[a]\n", "[b]\n"], 1, timeout_s=5.0)
    assert outcome.status == Status.OK, outcome.error
    assert core.pods == {} and core.config_maps == {}
    assert sorted(kind for kind, _ in core.deleted()) == ["delete_configmap"] * 2 + ["delete_pod"] * 2
    pods.close()
    assert core.claims == {}


def test_a_busy_api_server_is_asked_again_not_the_end_of_the_run(executor: Make) -> None:
    """A real cluster's API server answers 429 (too many requests) or a 5xx now and then, or a poll times out: the
    repetition polls again within its deadline; it had raised, the run stopped, the repetition unstored."""
    from urllib3.exceptions import ReadTimeoutError

    fio_json = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
    log = f"STORBENCH-START 1\nSTORBENCH-FIO-JSON\n{fio_json}\nSTORBENCH-EXIT 0\n"

    class Busy(FakeCore):
        def __init__(self, **given: object) -> None:
            super().__init__(**given)  # type: ignore[arg-type]
            self.answers: list[Exception] = [ApiException(status=429, reason="Too Many Requests"),
                                             ApiException(status=503, reason="Busy"),
                                             ReadTimeoutError(None, "/api/v1/pods", "read timed out")]  # type: ignore[arg-type]

        def list_namespaced_pod(self, namespace: str, label_selector: str = "", **options: object) -> object:
            assert options.get("_request_timeout"), options  # never a poll without a time limit
            if self.answers:
                raise self.answers.pop(0)
            return super().list_namespaced_pod(namespace, label_selector)

    core = Busy(namespaces={"bench": {}}, log=log)
    case = Case("c1", pvc_case().target, WorkloadPoint("randrw", 4096, 8, 2, 1.0, 0.0, True, "libaio", 70),
                clients=2)
    outcome = executor(core).run_case(case, ["[a]\n", "[b]\n"], 1, timeout_s=5.0)
    assert outcome.status == Status.OK and not core.answers, outcome.error
    forbidden = Busy(namespaces={"bench": {}}, log=log)
    forbidden.answers = [ApiException(status=403, reason="Forbidden")]  # not transient: said, not retried
    with pytest.raises(UserError, match="cannot list the run's pods in bench: Forbidden"):
        executor(forbidden).run_case(case, ["[a]\n", "[b]\n"], 1, timeout_s=5.0)


def test_a_config_map_of_the_same_name_is_not_replaced_or_deleted(executor: Make) -> None:
    case = pvc_case()
    plans = pod_plans(case, "run7", 1)
    theirs = plans[1].config_map
    core = FakeCore(namespaces={"bench": {}}, config_maps={theirs: {"app": "theirs"}})
    pods = executor(core)
    with pytest.raises(UserError) as raised:
        pods.run_case(case, ["[a]\n", "[b]\n"], 1, timeout_s=5.0)
    assert f"cannot create configmap bench/{theirs}" in raised.value.one_line()
    # the first client's config map and pod were made and are gone; the other config map stays
    assert core.config_maps == {theirs: {"app": "theirs"}} and core.pods == {}
    assert ("delete_configmap", theirs) not in core.deleted()


def test_fio_warnings_before_the_json_do_not_hide_an_unprivileged_pods_result() -> None:
    from storbench.execute.k8s_manifests import split_pod_log
    from storbench.fio.parse import parse_fio_json

    # what fio 3.33 writes to --output as root without capabilities, buffered, on a block device
    warning = "fio: cache invalidation of /dev/storbench failed: Permission denied\n"
    fio_json = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
    log = f"STORBENCH-START 5\nSTORBENCH-FIO-JSON\n{warning * 3}{fio_json}\nSTORBENCH-EXIT 0\n"
    said = split_pod_log(log)
    assert (said.started_s, said.exit_status) == (5.0, 0)
    assert parse_fio_json(said.json_text).jobs


def test_run_labels_differ_between_results_databases_and_stay_on_resume() -> None:
    from storbench.run_state import run_label

    assert run_label(1, "host-a", "/srv/a.db") == run_label(1, "host-a", "/srv/a.db")
    assert run_label(1, "host-a", "/srv/a.db") != run_label(1, "host-a", "/srv/b.db")
    assert run_label(1, "host-a", "/srv/a.db") != run_label(1, "host-b", "/srv/a.db")
    assert run_label(1, "host-a", "/srv/a.db").startswith("run1-")


def test_k8s_rbac_grants_what_storbench_calls_and_nothing_wider() -> None:
    """`storbench k8s rbac`: a Role in the namespace, and cluster-wide only that namespace read by name and the
    nodes' reads; no wildcard, no secrets, no namespace creation (an administrator makes it)."""
    from storbench.execute.k8s_rbac import rbac_manifests

    manifests = rbac_manifests("bench")
    assert [m["kind"] for m in manifests] == ["ServiceAccount", "Role", "RoleBinding", "ClusterRole",
                                               "ClusterRoleBinding"]
    rules = [rule for m in manifests for rule in m.get("rules", [])]  # type: ignore[attr-defined]
    words = [word for rule in rules for key in ("apiGroups", "resources", "verbs") for word in rule[key]]
    assert "*" not in words and "secrets" not in words and "create" not in [
        verb for rule in rules if "namespaces" in rule["resources"] for verb in rule["verbs"]]
    granted = {(resource, verb) for rule in rules for resource in rule["resources"] for verb in rule["verbs"]}
    for call in [("pods", "create"), ("pods", "watch"), ("pods/log", "get"), ("configmaps", "create"),
                 ("configmaps", "list"), ("pods", "list"), ("persistentvolumeclaims", "list"),  # k8s cleanup's lists
                 ("persistentvolumeclaims", "patch"), ("volumesnapshots", "create"), ("nodes", "list"),
                 ("nodes/proxy", "get"), ("namespaces", "get"), ("serviceaccounts", "get"),
                 # classes that bind on first consumer
                 ("storageclasses", "get"), ("storageclasses", "list"), ("volumeattachments", "list")]:
        assert call in granted, call
    (namespaces,) = [rule for rule in rules if rule["resources"] == ["namespaces"]]
    assert namespaces["resourceNames"] == ["bench"]
    (accounts,) = [rule for rule in rules if rule["resources"] == ["serviceaccounts"]]
    assert accounts["resourceNames"] == ["default"]  # no other account of the namespace is read
    assert all(m["metadata"].get("namespace") in (None, "bench") for m in manifests)  # type: ignore[attr-defined]


def test_a_followed_log_cut_before_the_scripts_last_line_is_read_again_whole() -> None:
    """A pod's log stream may end with its container before its last lines came (seen on a second node: fio's
    JSON cut in the middle); once the container ended, the log is read again and the whole one is kept."""
    import threading

    from storbench.execute.k8s_manifests import EXIT_MARKER
    from storbench.execute.k8s_pods import RepetitionPods

    whole = f"STORBENCH-START 1\nSTORBENCH-FIO-JSON\n{{}}\n{EXIT_MARKER} 0\n"

    class Follower:
        def __init__(self, text: str, said_end: bool) -> None:
            self.text, self.ended, self.said_end = text, threading.Event(), threading.Event()
            self.ended.set()
            if said_end:
                self.said_end.set()

    class Core:
        reads = 0

        def read_namespaced_pod_log(self, name: str, namespace: str, **_: object) -> str:
            Core.reads += 1
            return whole

    pods = RepetitionPods.__new__(RepetitionPods)
    pods.executor = SimpleNamespace(core=Core(), namespace="bench")  # type: ignore[assignment]
    pods.followers = {"cut": Follower(whole[:30], said_end=False),  # type: ignore[dict-item]
                      "full": Follower(whole, said_end=True)}
    assert pods.log_of("cut", ended=True) == whole and Core.reads == 1
    assert pods.log_of("full", ended=True) == whole and Core.reads == 1  # to its last line: not read again


def test_an_ended_pods_log_read_short_or_failing_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The follower cut mid-JSON and the one read after the pod ended timing out or coming short (seen once under
    load: 'fio output unreadable' on a block claim): the log is read again, a second apart, until it holds the
    script's last line."""
    import threading

    from storbench.execute import k8s_pods
    from storbench.execute.k8s_manifests import EXIT_MARKER
    from storbench.execute.k8s_pods import RepetitionPods

    whole = f"STORBENCH-START 1\nSTORBENCH-FIO-JSON\n{{}}\n{EXIT_MARKER} 0\n"
    answers: list[object] = [TimeoutError("read timed out"), whole[:25], whole]

    class Follower:
        def __init__(self) -> None:
            self.text, self.ended, self.said_end = whole[:20], threading.Event(), threading.Event()
            self.ended.set()

    class Core:
        def read_namespaced_pod_log(self, name: str, namespace: str, **_: object) -> str:
            answer = answers.pop(0)
            if isinstance(answer, BaseException):
                raise answer
            return str(answer)

    monkeypatch.setattr(k8s_pods.time, "sleep", lambda seconds: None)
    pods = RepetitionPods.__new__(RepetitionPods)
    pods.executor = SimpleNamespace(core=Core(), namespace="bench")  # type: ignore[assignment]
    pods.followers = {"cut": Follower()}  # type: ignore[dict-item]
    assert pods.log_of("cut", ended=True) == whole and answers == []


def test_cleanup_takes_snapshots_too_and_works_in_one_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    """`storbench k8s cleanup` left a crashed run's VolumeSnapshots (and their billed content); with the least
    identity (`k8s rbac`: no cluster-wide reads) it failed with a raw 403 traceback. Now snapshots go first, -n
    cleans one namespace, and a refused list is one line."""
    from storbench.execute.k8s_access import cleanup

    calls: list[str] = []

    class Core:
        def list_namespace(self) -> object:
            raise ApiException(status=403, reason="Forbidden")

        def read_namespace(self, name: str) -> object:
            return SimpleNamespace(metadata=SimpleNamespace(name=name, labels=None))

        def _items(self, kind: str) -> object:
            return SimpleNamespace(items=[SimpleNamespace(metadata=SimpleNamespace(name=f"sb-{kind}"))])

        def list_namespaced_pod(self, namespace: str, label_selector: str) -> object:
            return self._items("pod")

        def list_namespaced_config_map(self, namespace: str, label_selector: str) -> object:
            return self._items("cm")

        def list_namespaced_persistent_volume_claim(self, namespace: str, label_selector: str) -> object:
            return self._items("claim")

        def __getattr__(self, name: str) -> object:  # the deletions: recorded
            assert name.startswith("delete_"), name
            return lambda item, namespace, **_: calls.append(f"{name} {namespace}/{item}")

    class Custom:
        def list_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str,
                                          label_selector: str) -> dict[str, object]:
            assert plural == "volumesnapshots" and "storbench" in label_selector
            return {"items": [{"metadata": {"name": "sb-snap"}}]}

        def delete_namespaced_custom_object(self, group: str, version: str, namespace: str, plural: str,
                                            name: str) -> None:
            calls.append(f"delete_snapshot {namespace}/{name}")

    monkeypatch.setattr("storbench.execute.k8s_access.core_api", lambda kubeconfig, context=None, **_: Core())
    with pytest.raises(UserError, match="cannot list namespaces: Forbidden") as refused:
        cleanup(None, custom=Custom())
    assert "-n NAMESPACE" in refused.value.hint
    deleted = cleanup(None, namespace="bench", custom=Custom())
    assert deleted == ["volumesnapshot bench/sb-snap", "pod bench/sb-pod", "configmap bench/sb-cm",
                       "persistentvolumeclaim bench/sb-claim"], deleted
    assert calls[0] == "delete_snapshot bench/sb-snap"  # before its claim


def test_a_create_the_api_server_answers_429_or_5xx_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A busy API server (429) or a webhook's timeout (5xx) had stopped the whole run at a pod's create; it is asked
    again a while on. A refusal (403, 409) is said at once."""
    from storbench.execute import kubernetes

    monkeypatch.setattr(kubernetes.time, "sleep", lambda seconds: None)
    executor = KubernetesExecutor.__new__(KubernetesExecutor)
    executor.namespace = "bench"
    answers: list[int] = [503, 429]
    made: list[dict[str, object]] = []

    def creator(namespace: str, manifest: dict[str, object]) -> None:
        if answers:
            raise ApiException(status=answers.pop(0), reason="busy")
        made.append(manifest)

    created: list[tuple[str, str]] = []
    executor._create("pod", "p1", created, creator, {"kind": "Pod"})
    assert made == [{"kind": "Pod"}] and created == [("pod", "p1")]
    answers[:] = [503, 503, 503]
    with pytest.raises(UserError, match="cannot create pod bench/p2: busy"):
        executor._create("pod", "p2", created, creator, {"kind": "Pod"})
    answers[:] = [403]
    with pytest.raises(UserError, match="cannot create pod bench/p3"):
        executor._create("pod", "p3", created, creator, {"kind": "Pod"})
    assert answers == [] and created == [("pod", "p1")]
    # a 5xx whose create was stored after all: asked again, it meets 409 from its own pod, which is this run's and
    # recorded for deletion (it had stopped the run, the pod left behind)
    labels = {"storbench/run": "r1"}

    class Core:
        def read_namespaced_pod(self, name: str, namespace: str) -> object:
            return SimpleNamespace(metadata=SimpleNamespace(labels=labels))

    executor.core, executor.run_label = Core(), "r1"
    answers[:] = [504, 409]
    executor._create("pod", "p4", created, creator, {"kind": "Pod"})
    assert created[-1] == ("pod", "p4") and answers == []
    labels["storbench/run"] = "someone-else"
    answers[:] = [504, 409]
    with pytest.raises(UserError, match="one of that name exists and is not storbench's"):
        executor._create("pod", "p5", created, creator, {"kind": "Pod"})
    # resumed after a kill -9 mid-repetition: its config map (and pod) of that repetition are there, this run's; they
    # are removed and made anew (the first create's 409 had stopped the resume until `k8s cleanup`)
    labels["storbench/run"] = "r1"
    deleted: list[str] = []

    class Stale:
        def read_namespaced_config_map(self, name: str, namespace: str) -> object:
            if name in deleted:
                raise ApiException(status=404, reason="Not Found")
            return SimpleNamespace(metadata=SimpleNamespace(labels=labels))

        def delete_namespaced_config_map(self, name: str, namespace: str) -> None:
            deleted.append(name)

    executor.core = Stale()
    answers[:] = [409]
    executor._create("configmap", "cm6", created, creator, {"kind": "ConfigMap"})
    assert deleted == ["cm6"] and created[-1] == ("configmap", "cm6") and made[-1] == {"kind": "ConfigMap"}


def test_a_statically_linked_fio_has_no_libraries_to_copy(tmp_path: Path) -> None:
    """`ldd` says "not a dynamic executable" and exits 1 for a static binary: `image build` had ended in a
    traceback. Anything else ldd cannot read is one line."""
    from storbench.lab.k8s_images import shared_libraries

    static = tmp_path / "fio"
    static.write_bytes(b"\x7fELF not really\n")  # ldd reads no dynamic section in it
    assert shared_libraries(str(static)) == []
    assert any(path.endswith(".so.6") for path in shared_libraries(shutil.which("ls") or "/bin/ls"))
    with pytest.raises(UserError, match=r"ldd .*missing"):
        shared_libraries(str(tmp_path / "missing"))


def test_a_runs_label_on_a_postgresql_store_is_the_same_from_any_directory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The label's token hashed the store's real path, and a URL made into a path changed with the working directory:
    a resume from another one did not know the claims its killed session made."""
    from storbench.run_state import run_label

    url = "postgresql://team@db.example/results"
    labels = set()
    for place in (tmp_path, tmp_path / "elsewhere"):
        place.mkdir(exist_ok=True)
        monkeypatch.chdir(place)
        labels.add((run_label(3, "bastion", url), run_label(3, "bastion", "r.db")))
    assert len({url_label for url_label, _ in labels}) == 1  # the URL's: one label
    assert len({file_label for _, file_label in labels}) == 2  # a relative file is another file elsewhere


def test_a_log_that_holds_the_last_line_but_less_json_than_fio_wrote_is_read_again_and_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The pod gives the size of fio's JSON on its marker line. A log read that holds the script's last line but
    less of the JSON than that (a Kubernetes e2e run once failed 'fio output unreadable: Unterminated string' on a
    block pod) is not whole: it is read again, and if it stays cut the error says the log came short, not fio."""
    import threading

    from storbench.execute import k8s_pods
    from storbench.execute.k8s_manifests import EXIT_MARKER, split_pod_log
    from storbench.execute.k8s_pods import RepetitionPods
    from storbench.execute.pod_results import PodResult, judge_pods

    fio_json = (FIXTURES / "randrw-numjobs2.jsonplus.json").read_text()
    warning = "fio: cache invalidation of /dev/storbench failed: Permission denied\n"
    written = warning + fio_json  # fio's file: its warnings, then the document
    whole = f"STORBENCH-START 1\nSTORBENCH-FIO-JSON {len(written.encode())}\n{written}\n{EXIT_MARKER} 0\n"
    middle = whole.index('"jobs"')
    cut = whole[:middle] + f"\n{EXIT_MARKER} 0\n"  # bytes lost mid-stream, the last line there
    said = split_pod_log(whole)
    assert said.whole and not said.json_cut and said.json_bytes == len(written.encode())
    said = split_pod_log(cut)
    assert said.exit_status == 0 and said.json_cut and not said.whole
    old = split_pod_log(whole.replace(f"STORBENCH-FIO-JSON {len(written.encode())}", "STORBENCH-FIO-JSON"))
    assert old.whole and old.json_bytes is None  # a log of the script before the size: whole by its last line
    # a name with a line separator in it: counted by its bytes, not judged cut
    odd = written.replace('"jobname" : "', '"jobname" : "\u2028\x85', 1)
    assert odd != written
    said = split_pod_log(f"STORBENCH-FIO-JSON {len(odd.encode())}\n{odd}\n{EXIT_MARKER} 0\n")
    assert said.whole, (said.json_bytes, said.json_bytes_read)
    # whole lines lost: the document may still parse, short of some of its bins; cut all the same
    lines = whole.split("\n")
    bins = next(i for i, line in enumerate(lines) if line.strip().startswith('"bins"'))
    dropped = "\n".join(lines[:bins + 1] + lines[bins + 3:])
    assert split_pod_log(dropped).json_cut

    class Follower:
        def __init__(self) -> None:
            self.text, self.ended, self.said_end = cut, threading.Event(), threading.Event()
            self.ended.set()
            self.said_end.set()

    answers: list[str] = [cut, whole]

    class Core:
        def read_namespaced_pod_log(self, name: str, namespace: str, **_: object) -> str:
            return answers.pop(0) if answers else cut

    monkeypatch.setattr(k8s_pods.time, "sleep", lambda seconds: None)
    pods = RepetitionPods.__new__(RepetitionPods)
    pods.executor = SimpleNamespace(core=Core(), namespace="bench")  # type: ignore[assignment]
    pods.followers = {"p": Follower()}  # type: ignore[dict-item]
    assert pods.log_of("p", ended=True) == whole and answers == []
    # cut every time: the repetition's error says where the text was lost
    assert pods.log_of("p", ended=True) == cut
    outcome = judge_pods(pvc_case(clients=1), [PodResult(pod="p", node="n1", phase="Succeeded", log=dropped)], 1,
                         job_text="", started_at_s=0.0, finished_at_s=1.0, timeout_s=10.0)
    assert outcome.status == Status.FAILED and "its log came short" in outcome.error, outcome.error
    outcome = judge_pods(pvc_case(clients=1), [PodResult(pod="p", node="n1", phase="Succeeded", log=cut)], 1,
                         job_text="", started_at_s=0.0, finished_at_s=1.0, timeout_s=10.0)
    assert outcome.status == Status.FAILED
    assert "fio output unreadable" in outcome.error and "its log came short" in outcome.error, outcome.error
    assert f"of the {len(written.encode()):,} bytes fio wrote" in outcome.error
