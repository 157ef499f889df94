"""`storbench image build` (the fio image as an OCI archive, tagged with fio's version) and `storbench image push`
(that archive copied to a registry with skopeo, the registry's credentials left in the standard auth file)."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from storbench.cli.common import _console
from storbench.errors import UserError


def cmd_image_build(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.fio_image import build_fio_image, default_archive_name

    if args.output and Path(args.output).exists():
        raise UserError(f"{args.output} exists; storbench image build does not write over a file",
                        hint="remove it, or pick another name with -o")
    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise UserError(f"cannot write {args.output}: {Path(args.output).resolve().parent} is no directory",
                        hint="create the directory first, or pick another path with -o")
    image = build_fio_image(find_fio(args.fio))
    path = Path(args.output or default_archive_name(image))
    if path.exists():
        raise UserError(f"{path} exists; storbench image build does not write over a file",
                        hint="remove it, or pick another name with -o")
    try:
        path.write_bytes(image.archive)
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}",
                        hint="pick a path in a directory you can write with -o") from None
    _console().print(f"wrote {path}: image {image.ref_name} ({len(image.archive) / 2**20:.1f} MiB, manifest "
                     f"{image.manifest_digest}); storbench image push REGISTRY/storbench/fio --archive {path}",
                     markup=False, soft_wrap=True)
    return 0


def cmd_image_push(args: argparse.Namespace) -> int:
    from storbench.execute.fio_binary import find_fio
    from storbench.fio_image import build_fio_image, check_push_files, destination, push
    from storbench.oci import REF_NAME

    destination(args.destination, "latest")  # a bad destination is refused before anything is built
    check_push_files(args.authfile, args.cert_dir)
    with tempfile.TemporaryDirectory(prefix="storbench-image-") as work:
        if args.archive:
            archive = Path(args.archive)
            tag = _archive_tag(archive, REF_NAME)
        else:
            image = build_fio_image(find_fio(args.fio))
            archive = Path(work) / "fio.oci.tar"
            archive.write_bytes(image.archive)
            tag = image.ref_name
        dest = destination(args.destination, tag)
        pushed = push(archive, dest, authfile=args.authfile, cert_dir=args.cert_dir)
    pinned = f"{pushed.destination.rpartition(':')[0]}@{pushed.digest}"  # a tag moves when pushed again; this not
    _console().print(f"pushed {pushed.destination} ({pushed.digest}); pods pull it with target image: {pinned}, "
                     f"run with --image {pinned}", markup=False, soft_wrap=True)
    return 0


def _archive_tag(archive: Path, annotation: str) -> str:
    """The tag an oci-archive's index names (what `image build` wrote)."""
    import json
    import tarfile

    if not archive.is_file():
        raise UserError(f"--archive {archive} is not a file", hint="storbench image build writes one")
    try:
        with tarfile.open(archive) as tar:
            member = tar.extractfile("index.json")
            index = json.loads(member.read()) if member else {}
        return str(index["manifests"][0]["annotations"][annotation])
    except (tarfile.TarError, KeyError, IndexError, TypeError, ValueError, OSError):
        raise UserError(f"{archive} is not an OCI archive storbench wrote",
                        hint="storbench image build writes one") from None


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("image", help="the fio image for clusters: build it as an OCI archive, push it to a registry")
    image_sub = p.add_subparsers(dest="image_command", required=True, metavar="{build,push}")
    build = image_sub.add_parser("build", help="write the fio image (busybox, this machine's fio and its "
                                 "libraries) as an OCI archive tagged with fio's version")
    build.add_argument("-o", "--output", default=None, help="file to write (default: storbench-fio-VERSION.oci.tar "
                       "here); never one that exists")
    build.add_argument("--fio", default=None, help="fio binary (default: $STORBENCH_FIO or fio on PATH)")
    build.set_defaults(func=cmd_image_build)
    push = image_sub.add_parser("push", help="copy the fio image to a registry with skopeo (credentials from the "
                                "standard auth file: skopeo login REGISTRY)")
    push.add_argument("destination", metavar="REGISTRY/REPOSITORY[:TAG]", help="where to push (TAG: default "
                      "fio-VERSION)")
    push.add_argument("--archive", default=None, help="an archive `storbench image build` wrote (default: build "
                      "one now)")
    push.add_argument("--authfile", default=None, help="auth file with the registry's credentials (default: "
                      "skopeo's, $REGISTRY_AUTH_FILE or ${XDG_RUNTIME_DIR}/containers/auth.json)")
    push.add_argument("--cert-dir", default=None, help="directory of *.crt files that sign the registry's "
                      "certificate (a private CA); TLS is always verified")
    push.add_argument("--fio", default=None, help="fio binary (default: $STORBENCH_FIO or fio on PATH)")
    push.set_defaults(func=cmd_image_push)
