"""The fio image for clusters: an OCI archive whose digests check out, tagged with fio's version, and pushed with
skopeo to a real private registry (docker-registry on loopback, TLS from its own CA, basic auth) with the
credentials left in an auth file storbench never reads."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
from pathlib import Path

import pytest

from helpers import run_cli
from storbench.errors import UserError
from storbench.lab.image_registry import start_registry
from storbench.lab.labdir import kill_daemons, record_daemon, recorded_daemons
from storbench.lab.process import alive
from storbench.oci import REF_NAME, fio_tag, oci_archive, parse_image_ref


def _members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}  # type: ignore[union-attr]


def _layer(text: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("hello")
        info.size = len(text)
        tar.addfile(info, io.BytesIO(text))
    return buffer.getvalue()


def test_an_oci_archive_names_its_tag_and_every_blob_by_its_digest() -> None:
    layer = _layer(b"fio")
    image = oci_archive(layer, "fio-3.33", ["/usr/bin/fio"])
    files = _members(image.archive)
    assert json.loads(files["oci-layout"]) == {"imageLayoutVersion": "1.0.0"}
    index = json.loads(files["index.json"])
    [entry] = index["manifests"]
    assert entry["annotations"][REF_NAME] == "fio-3.33" and entry["digest"] == image.manifest_digest
    for name, data in files.items():
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    manifest = json.loads(files[f"blobs/sha256/{image.manifest_digest.removeprefix('sha256:')}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'].removeprefix('sha256:')}"])
    [layer_entry] = manifest["layers"]
    compressed = files[f"blobs/sha256/{layer_entry['digest'].removeprefix('sha256:')}"]
    assert gzip.decompress(compressed) == layer  # the diff id is the uncompressed layer's
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert config["config"]["Entrypoint"] == ["/usr/bin/fio"]
    # the same layer is the same image; another layer another
    assert oci_archive(layer, "fio-3.33", ["/usr/bin/fio"]).archive == image.archive
    assert oci_archive(_layer(b"fio2"), "fio-3.33", ["/usr/bin/fio"]).manifest_digest != image.manifest_digest


def test_image_references_are_read_as_docker_reads_them() -> None:
    assert parse_image_ref("10.215.0.1:15000/storbench/fio:fio-3.33") == ("10.215.0.1:15000", "storbench/fio",
                                                                          "fio-3.33")
    assert parse_image_ref("storbench/fio") == (None, "storbench/fio", None)  # no dot, no port: a path
    assert parse_image_ref("localhost/fio:1") == ("localhost", "fio", "1")
    assert parse_image_ref("registry.example.com/a/b") == ("registry.example.com", "a/b", None)
    for bad in ("a b", "x:", "UPPER/x", "r.io/x@sha256:00", "r.io/x:a;b", "r.io/x:-a", "-x", "r.io//x"):
        with pytest.raises(ValueError):
            parse_image_ref(bad)
    assert fio_tag("fio-3.33") == "fio-3.33" and fio_tag("3.36") == "fio-3.36"


def test_push_refuses_a_destination_without_a_registry(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "image", "push", "storbench/fio")
    assert code == 2 and "names no registry" in err and "hint:" in err and len(err.strip().splitlines()) == 1, err
    code, _, err = run_cli(capsys, "image", "push", "r.example.com/a b")
    assert code == 2 and "is not an image reference" in err, err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


needs_registry = pytest.mark.skipif(
    not all(shutil.which(t) for t in ("skopeo", "docker-registry", "htpasswd", "busybox")),
    reason="needs skopeo, docker-registry, apache2-utils and busybox (scripts/setup.sh --labs)")


@needs_registry
def test_the_fio_image_is_pushed_to_a_private_registry_with_tls_and_basic_auth(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = tmp_path / "lab"
    lab.mkdir(mode=0o700)
    registry = start_registry(lab / "registry", "127.0.0.1", _free_port(),
                              lambda started: record_daemon(lab, "registry", started))
    (pid,) = [daemon.pid for daemon in recorded_daemons(lab)]  # recorded as it started
    try:
        assert oct(os.stat(registry.authfile).st_mode & 0o777) == "0o600"
        archive = tmp_path / "fio.oci.tar"
        code, out, err = run_cli(capsys, "image", "build", "-o", str(archive))
        assert code == 0, err
        built = _members(archive.read_bytes())
        tag = json.loads(built["index.json"])["manifests"][0]["annotations"][REF_NAME]
        version = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
        assert tag == version and f"image {tag}" in out, (tag, version, out)
        digest = json.loads(built["index.json"])["manifests"][0]["digest"]
        code, out, err = run_cli(capsys, "image", "build", "-o", str(archive))
        assert code == 2 and "does not write over a file" in err
        dest = f"{registry.address}/storbench/fio"
        # without credentials, and without trusting the registry's CA: refused, in one line with a hint
        code, out, err = run_cli(capsys, "image", "push", dest, "--archive", str(archive), "--cert-dir",
                                 registry.ca_dir, "--authfile", str(tmp_path / "none.json"))
        assert code == 2 and "--authfile" in err and "is not a file" in err, err
        code, out, err = run_cli(capsys, "image", "push", dest, "--cert-dir", str(archive))  # said before building
        assert code == 2 and "is not a directory" in err, err
        empty = tmp_path / "empty.json"
        empty.write_text('{"auths": {}}')
        code, out, err = run_cli(capsys, "image", "push", dest, "--archive", str(archive), "--cert-dir",
                                 registry.ca_dir, "--authfile", str(empty))
        assert code == 2 and "pushing to" in err and "skopeo login" in err and len(err.strip().splitlines()) == 1
        code, out, err = run_cli(capsys, "image", "push", dest, "--archive", str(archive), "--authfile",
                                 registry.authfile)
        assert code == 2 and "pushing to" in err, err  # the CA not given: TLS is verified, never skipped
        code, out, err = run_cli(capsys, "image", "push", dest, "--archive", str(archive), "--cert-dir",
                                 registry.ca_dir, "--authfile", registry.authfile)
        assert code == 0, err
        assert f"pushed {dest}:{tag} ({digest})" in " ".join(out.split()), out
        assert f"--image {dest}@{digest}" in " ".join(out.split()), out  # the digest, which a push again cannot move
        # what the registry holds is the archive's manifest, byte for byte
        inspected = subprocess.run(["skopeo", "inspect", "--raw", "--cert-dir", registry.ca_dir, "--authfile",
                                    registry.authfile, f"docker://{dest}:{tag}"], capture_output=True, check=True)
        assert f"sha256:{hashlib.sha256(inspected.stdout).hexdigest()}" == digest
        password = json.loads(Path(registry.authfile).read_text())["auths"][registry.address]["auth"]
        assert password not in out + err
    finally:
        kill_daemons(recorded_daemons(lab))
    assert not alive(pid)


def test_the_image_names_the_architecture_of_the_machine_its_fio_came_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """An arm64 machine's fio in an image that says amd64 is refused by arm64 nodes (and run by amd64 ones)."""
    from storbench.fio_image import build_fio_image
    from storbench.oci import oci_architecture

    assert [oci_architecture(m) for m in ("x86_64", "aarch64", "ppc64le")] == ["amd64", "arm64", "ppc64le"]
    monkeypatch.setattr("storbench.fio_image.fio_layer", lambda binary: _layer(b"fio"))
    monkeypatch.setattr("storbench.fio_image.fio_version", lambda binary: "fio-3.33")
    for machine, architecture in (("aarch64", "arm64"), ("x86_64", "amd64")):
        monkeypatch.setattr("platform.machine", lambda machine=machine: machine)
        files = _members(build_fio_image("/usr/bin/fio").archive)
        manifest = json.loads(files[f"blobs/sha256/{json.loads(files['index.json'])['manifests'][0]['digest'][7:]}"])
        config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'].removeprefix('sha256:')}"])
        assert config["architecture"] == architecture
    monkeypatch.setattr("platform.machine", lambda: "vax")
    with pytest.raises(UserError, match="no OCI architecture for a 'vax' machine"):
        build_fio_image("/usr/bin/fio")
