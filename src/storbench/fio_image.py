"""The fio image for clusters (shell): built as an OCI archive from this machine's fio (`lab.k8s_images.fio_layer`,
`oci.oci_archive`) and copied to a registry with skopeo (Debian's package). The registry's credentials stay in the
standard auth file skopeo reads (`skopeo login` writes it; `--authfile` names another): storbench never reads,
prints or stores them."""

from __future__ import annotations

import os
import platform
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.execute.fio_binary import fio_version
from storbench.lab.k8s_images import FIO_ENTRYPOINT, fio_layer
from storbench.oci import OciImage, fio_tag, oci_architecture, oci_archive, parse_image_ref
from storbench.shell import run

REPOSITORY = "storbench/fio"
PUSH_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class Pushed:
    destination: str  # REGISTRY/REPOSITORY:TAG
    digest: str  # the manifest's, as the registry stores it


def build_fio_image(fio_binary: str) -> OciImage:
    """The fio image of ``fio_binary`` as an oci-archive tagged with its fio version, for this machine's
    architecture (its fio and libraries are this machine's)."""
    try:
        architecture = oci_architecture(platform.machine())
    except ValueError as error:
        raise UserError(str(error), hint="build the image on a machine of the cluster's architecture") from None
    return oci_archive(fio_layer(fio_binary), fio_tag(fio_version(fio_binary)), FIO_ENTRYPOINT,
                       architecture=architecture)


def default_archive_name(image: OciImage) -> str:
    return f"storbench-{image.ref_name}.oci.tar"


def destination(text: str, tag: str) -> str:
    """REGISTRY/REPOSITORY[:TAG] checked, with ``tag`` (the fio version's) when it has none."""
    try:
        registry, path, given = parse_image_ref(text)
    except ValueError as error:
        raise UserError(str(error), hint="e.g. registry.example.com:5000/storbench/fio") from None
    if registry is None:
        raise UserError(f"{text!r} names no registry", hint=f"e.g. registry.example.com:5000/{path}: the first "
                        "part, with a dot or a port, is the registry (storbench pushes nowhere by default)")
    return f"{registry}/{path}:{given or tag}"


def check_push_files(authfile: str | None, cert_dir: str | None) -> None:
    """--authfile a file and --cert-dir a directory, said before anything is built."""
    if authfile is not None and not os.path.isfile(authfile):
        raise UserError(f"--authfile {authfile} is not a file", hint="skopeo login REGISTRY writes one")
    if cert_dir is not None and not os.path.isdir(cert_dir):
        raise UserError(f"--cert-dir {cert_dir} is not a directory", hint="a directory of the CA's *.crt files")


def push(archive: Path, dest: str, *, authfile: str | None = None, cert_dir: str | None = None) -> Pushed:
    """Copy the oci-archive ``archive`` to ``dest`` with `skopeo copy`; TLS verified always (``cert_dir``: a
    directory of *.crt that signs the registry's certificate, as for a private registry)."""
    if shutil.which("skopeo") is None:
        raise UserError("skopeo is not installed", hint="apt-get install skopeo (storbench doctor lists it)")
    check_push_files(authfile, cert_dir)
    with tempfile.TemporaryDirectory(prefix="storbench-push-") as work:
        digest_file = Path(work) / "digest"
        argv = ["skopeo", "copy", "--quiet", "--dest-tls-verify=true", "--digestfile", str(digest_file)]
        if authfile is not None:
            argv += ["--dest-authfile", authfile]
        if cert_dir is not None:
            argv += ["--dest-cert-dir", cert_dir]
        argv += [f"oci-archive:{archive}", f"docker://{dest}"]
        try:
            run(argv, timeout_s=PUSH_TIMEOUT_S)
        except UserError as error:
            raise UserError(f"pushing to {dest} failed: {error.message}",
                            hint="log in first (skopeo login REGISTRY writes the standard auth file), and give "
                            "--cert-dir for a registry whose certificate a private CA signed") from None
        return Pushed(dest, digest_file.read_text().strip())
