"""An OCI image layout as one tar (an `oci-archive`, what skopeo and containerd read): pure, from a layer's bytes.

The layer is stored gzip-compressed with mtime 0, so the same layer gives the same archive and the same digests:
a tag pushed twice is the same image.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
from dataclasses import dataclass

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
REF_NAME = "org.opencontainers.image.ref.name"
COMPRESS_LEVEL = 6  # zlib's default: 9 takes twice as long for 2 % less
HOST_RE = re.compile(r"^(?:localhost|[a-zA-Z0-9-]+(?:\.[a-zA-Z0-9-]+)+|\[[0-9a-fA-F:]+\])(?::[0-9]{1,5})?$"
                     r"|^[a-zA-Z0-9-]+:[0-9]{1,5}$")  # a host with a dot, or a port, or localhost
PATH_RE = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


@dataclass(frozen=True)
class OciImage:
    archive: bytes  # the oci-archive tar
    manifest_digest: str  # sha256:...
    ref_name: str  # the tag inside the archive (its index's ref.name annotation)


def _digest(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _descriptor(media_type: str, data: bytes, **extra: object) -> dict[str, object]:
    return {"mediaType": media_type, "digest": _digest(data), "size": len(data), **extra}


# platform.machine() -> the architecture an image's config names (what a node's runtime matches against its own)
_ARCHITECTURES = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "ppc64le": "ppc64le",
                  "s390x": "s390x", "riscv64": "riscv64"}


def oci_architecture(machine: str) -> str:
    """The OCI architecture of a machine (``platform.machine()``); ValueError for one it has no name for."""
    try:
        return _ARCHITECTURES[machine.lower()]
    except KeyError:
        raise ValueError(f"no OCI architecture for a {machine!r} machine") from None


def oci_archive(layer_tar: bytes, ref_name: str, entrypoint: list[str], *, architecture: str = "amd64") -> OciImage:
    """One image of one layer (``layer_tar``, an uncompressed tar) as an oci-archive whose index names it
    ``ref_name`` (a tag such as `fio-3.33`)."""
    compressed = gzip.compress(layer_tar, compresslevel=COMPRESS_LEVEL, mtime=0)
    config = json.dumps({
        "architecture": architecture, "os": "linux",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/bin:/usr/bin:/sbin"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": [_digest(layer_tar)]},
    }, sort_keys=True).encode()
    manifest = json.dumps({
        "schemaVersion": 2, "mediaType": MANIFEST_TYPE,
        "config": _descriptor(CONFIG_TYPE, config), "layers": [_descriptor(LAYER_TYPE, compressed)],
    }, sort_keys=True).encode()
    index = json.dumps({
        "schemaVersion": 2,
        "manifests": [_descriptor(MANIFEST_TYPE, manifest, annotations={REF_NAME: ref_name})],
    }, sort_keys=True).encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        blobs = [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'), ("index.json", index)]
        blobs += [(f"blobs/sha256/{_digest(data).removeprefix('sha256:')}", data)
                  for data in (config, manifest, compressed)]
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for name, data in blobs:
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return OciImage(buffer.getvalue(), _digest(manifest), ref_name)


def fio_tag(fio_version: str) -> str:
    """The image's tag for a fio version ("fio-3.33" -> "fio-3.33"; a bare "3.33" gains the prefix)."""
    version = fio_version.strip()
    tag = version if version.startswith("fio-") else f"fio-{version}"
    return re.sub(r"[^A-Za-z0-9_.-]", "-", tag)[:128]


def parse_image_ref(text: str) -> tuple[str | None, str, str | None]:
    """(registry or None, repository path, tag or None) of an image reference, as Docker reads one: the first
    component is a registry when it has a dot or a port or is localhost. ValueError when it is not a reference
    (a digest is not taken: storbench pushes by tag)."""
    if len(text) > 255 or "@" in text:
        raise ValueError(f"{text!r} is not an image reference (REGISTRY[:PORT]/REPOSITORY[:TAG])")
    first, _, rest = text.partition("/")
    registry = first if rest and HOST_RE.fullmatch(first) else None
    remainder = rest if registry else text
    path, _, tag = remainder.rpartition(":") if ":" in remainder.rsplit("/", 1)[-1] else (remainder, "", "")
    if not PATH_RE.fullmatch(path) or (tag and not TAG_RE.fullmatch(tag)) or (":" in remainder and not tag):
        raise ValueError(f"{text!r} is not an image reference (REGISTRY[:PORT]/REPOSITORY[:TAG])")
    return registry, path, tag or None
