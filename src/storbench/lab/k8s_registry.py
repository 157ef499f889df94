"""The Kubernetes lab's image registry (shell): the fio image pushed to it as a user would, every node set to pull
from it as a site's nodes are, and pulled once on every node at up."""

from __future__ import annotations

import urllib.error
from collections.abc import Callable
from functools import partial
from pathlib import Path

from storbench.errors import UserError
from storbench.fio_image import build_fio_image, push
from storbench.lab.image_registry import hosts_toml, start_registry
from storbench.lab.k8s_api import AdminApi
from storbench.lab.k8s_conf import FIO_REPOSITORY, NODE_ADDRESS, REGISTRY_PORT, LabNode, pull_pod_manifest
from storbench.lab.labdir import LabDir
from storbench.private_files import write_private

Wait = Callable[[Callable[[], bool], str, float], None]


def serve_fio_image(root: Path, lab_dir: LabDir, fio_binary: str, nodes: tuple[LabNode, ...]) -> str:
    """The lab's registry on the bridge (TLS, basic auth), the fio image pushed to it with skopeo as a user would
    (`storbench image push`), and every node set to pull from it: its CA in containerd's hosts.toml, its
    credentials in the kubelet's config.json (read from its root directory). Returns the fio image's reference."""
    registry = start_registry(root / "registry", NODE_ADDRESS, REGISTRY_PORT,
                              lambda pid: lab_dir.record("registry", pid))
    image = build_fio_image(fio_binary)
    archive = root / "images" / "fio.oci.tar"
    archive.write_bytes(image.archive)
    pushed = push(archive, f"{registry.address}/{FIO_REPOSITORY}:{image.ref_name}", authfile=registry.authfile,
                  cert_dir=registry.ca_dir)
    archive.unlink()
    for node in nodes:
        node_dir = Path(node.dir(str(root)))
        hosts = node_dir / "certs.d" / registry.address
        hosts.mkdir(parents=True, exist_ok=True)
        (hosts / "hosts.toml").write_text(hosts_toml(registry.address, f"{registry.ca_dir}/ca.crt"))
        write_private(node_dir / "kubelet" / "config.json", Path(registry.authfile).read_text())
    return pushed.destination


def pull_everywhere(api: AdminApi, wait: Wait, image: str, nodes: tuple[LabNode, ...], root: Path) -> None:
    """Every node pulls ``image`` from the lab's registry once, through its kubelet (`pull_pod_manifest`), so a
    plan's first pods start within their start budget, as on a cluster that already holds the image."""
    pods = "/api/v1/namespaces/default/pods"

    def created(node: LabNode) -> bool:
        try:  # the default service account comes a moment after the API server
            api.apply(pull_pod_manifest(node, image), pods)
        except urllib.error.HTTPError as error:
            if error.code in (403, 404, 500):
                return False
            raise
        return True

    def pulled(name: str) -> bool:
        pod = api.request(f"{pods}/{name}")
        status = pod.get("status", {}) if isinstance(pod, dict) else {}
        for container in status.get("containerStatuses", []):
            reason = container.get("state", {}).get("waiting", {}).get("reason", "")
            if reason in ("ErrImagePull", "ImagePullBackOff", "InvalidImageName"):
                message = container["state"]["waiting"].get("message", "")
                raise UserError(f"k8s lab: a node cannot pull {image}: {reason} {message}"[:400],
                                hint=f"see {root / 'registry' / 'registry.log'} and the kubelet's log")
        if status.get("phase") == "Failed":
            raise UserError(f"k8s lab: the image {image} does not run fio on {name}")
        return status.get("phase") == "Succeeded"

    for node in nodes:
        wait(partial(created, node), f"the pull pod on {node.name}", 60)
    for node in nodes:
        name = f"storbench-pull-{node.index}"
        wait(partial(pulled, name), f"{image} pulled on {node.name}", 120)
        api.request(f"{pods}/{name}", "DELETE")
