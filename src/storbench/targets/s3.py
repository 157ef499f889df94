"""S3 targets (shell): an S3 service driven by fio's http engine in S3 mode (the fio storbench builds with
libcurl). storbench itself only checks the bucket, makes the lab's bucket, and removes its own objects after the
run; the keys go to fio through its environment and never into a job text, a result or a log."""

from __future__ import annotations

import configparser
import os
import re
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote, urlsplit
from xml.etree import ElementTree

from storbench.errors import UserError
from storbench.fio.jobfile import S3_KEY_ENV, S3_KEY_ID_ENV, JobBinding
from storbench.fio.options import parse_engines
from storbench.model import Case, S3Target
from storbench.s3sign import EMPTY_SHA256, S3Credentials, canonical_query, signed_headers
from storbench.shell import run
from storbench.targets.base import PreparedTarget

LAB_BUCKET = "storbench"  # the bucket storbench makes on its Ceph lab's radosgw
# The prefix of every object storbench writes: objects are removed by it after the run, and nothing else is.
OBJECT_PREFIX = "storbench."
ENV_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


@dataclass(frozen=True)
class S3Service:
    """Where S3 requests go: endpoint URL (http or https), region, keys."""

    endpoint: str
    region: str
    credentials: S3Credentials

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).netloc

    def request(self, method: str, bucket: str, key: str = "", query: dict[str, str] | None = None,
                timeout_s: float = 30) -> tuple[int, bytes]:
        """One signed request (no body); (HTTP status, response body). Network failures are UserErrors."""
        query = query or {}
        path = "/" + quote(bucket, safe="") + ("/" + quote(key, safe="/-_.~") if key else "")
        headers = signed_headers(method, self.host, path, query, EMPTY_SHA256, self.credentials, self.region,
                                 datetime.now(UTC))
        url = self.endpoint.rstrip("/") + path + (f"?{canonical_query(query)}" if query else "")
        request = urllib.request.Request(url, method=method, headers={k: v for k, v in headers.items() if k != "host"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return int(response.status), response.read()
        except urllib.error.HTTPError as exc:
            return int(exc.code), exc.read()
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise UserError(f"S3 endpoint {self.endpoint} does not answer: {reason}",
                            hint="check the endpoint URL and that the service is up") from None


def load_credentials(spec: S3Target, environ: dict[str, str] | None = None) -> S3Credentials:
    """The target's keys: from ``credentials_file`` (AWS's shared-credentials format, ``[default]`` or the
    target's ``profile``), else from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."""
    environ = dict(os.environ) if environ is None else environ
    if spec.credentials_file is not None:
        parser = configparser.ConfigParser()
        try:
            parser.read_string(Path(spec.credentials_file).read_text())
        except (OSError, configparser.Error) as exc:
            raise UserError(f"target '{spec.name}': cannot read credentials_file {spec.credentials_file}: "
                            f"{type(exc).__name__}", hint="a file like ~/.aws/credentials") from None
        section = spec.profile or "default"
        if not parser.has_section(section) or not {"aws_access_key_id", "aws_secret_access_key"} <= set(
                parser[section]):
            raise UserError(f"target '{spec.name}': {spec.credentials_file} has no [{section}] with "
                            "aws_access_key_id and aws_secret_access_key",
                            hint="write them as in ~/.aws/credentials")
        return S3Credentials(parser[section]["aws_access_key_id"].strip(),
                             parser[section]["aws_secret_access_key"].strip())
    missing = [name for name in ENV_KEYS if not environ.get(name)]
    if missing:
        raise UserError(f"target '{spec.name}': no S3 credentials ({' and '.join(missing)} not set)",
                        hint="export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give credentials_file:")
    return S3Credentials(environ[ENV_KEYS[0]], environ[ENV_KEYS[1]])


def check_bucket(service: S3Service, bucket: str, name: str) -> None:
    """The bucket exists and these keys may use it; otherwise one line saying which."""
    status, _ = service.request("HEAD", bucket)
    if status == 404:
        raise UserError(f"target '{name}': bucket '{bucket}' does not exist at {service.endpoint}",
                        hint="create it first, or name an existing bucket")
    if status in (401, 403):
        raise UserError(f"target '{name}': the credentials may not use bucket '{bucket}' at {service.endpoint} "
                        f"(HTTP {status})", hint="check the keys and the bucket's policy")
    if status >= 300:
        raise UserError(f"target '{name}': bucket '{bucket}' at {service.endpoint} answered HTTP {status}")


def create_bucket(service: S3Service, bucket: str) -> None:
    status, body = service.request("PUT", bucket)
    if status >= 300 and b"BucketAlreadyOwnedByYou" not in body:
        raise UserError(f"cannot create bucket '{bucket}' at {service.endpoint}: HTTP {status}")


def list_objects(service: S3Service, bucket: str, prefix: str) -> list[str]:
    keys: list[str] = []
    token: str | None = None
    while True:
        query = {"list-type": "2", "prefix": prefix, **({"continuation-token": token} if token else {})}
        status, body = service.request("GET", bucket, query=query)
        if status != 200:
            raise UserError(f"listing bucket '{bucket}' at {service.endpoint} failed: HTTP {status}")
        root = ElementTree.fromstring(body)
        keys += [el.text or "" for el in root.iter(f"{_NS}Key")]
        if (root.findtext(f"{_NS}IsTruncated") or "false") != "true":
            return keys
        token = root.findtext(f"{_NS}NextContinuationToken")


def remove_objects(service: S3Service, bucket: str, prefix: str = OBJECT_PREFIX) -> int:
    """Delete every object whose name starts with ``prefix`` (storbench's own); how many were deleted."""
    removed = 0
    for key in list_objects(service, bucket, prefix):
        status, _ = service.request("DELETE", bucket, key)
        if status < 300 or status == 404:
            removed += 1
    return removed


_REGION_RE = re.compile(r"[a-z0-9-]{1,40}")


def s3_binding(service: S3Service, bucket: str, fio_binary: str) -> JobBinding:
    """How an S3 bucket appears in a job file: fio's http engine in S3 mode, its objects under
    /<bucket>/storbench.<job>.<file>_<offset>_<size>, its keys as environment variables fio expands."""
    url = urlsplit(service.endpoint)
    if not _REGION_RE.fullmatch(service.region):
        raise UserError(f"region {service.region!r} is not a region name", hint="e.g. us-east-1")
    options = (("http_mode", "s3"), ("https", "on" if url.scheme == "https" else "off"), ("http_host", url.netloc),
               ("http_s3_region", service.region), ("http_s3_keyid", f"${{{S3_KEY_ID_ENV}}}"),
               ("http_s3_key", f"${{{S3_KEY_ENV}}}"),
               ("filename_format", f"/{bucket}/storbench.$jobnum.$filenum"))
    return JobBinding(options=options, env=((S3_KEY_ID_ENV, service.credentials.access_key),
                                            (S3_KEY_ENV, service.credentials.secret_key)), fio_binary=fio_binary)


def http_fio_binary() -> str:
    """A fio with the http engine: the one scripts/build-fio-nfs.sh builds (with libcurl) and caches."""
    from storbench.targets.nfs import nfs_fio_binary

    binary = nfs_fio_binary()
    if "http" not in parse_engines(run([binary, "--enghelp"], timeout_s=30)):
        raise UserError(f"{binary} has no http engine (built before storbench needed it)",
                        hint="rebuild it: rm it, then run scripts/build-fio-nfs.sh")
    return binary


def prepare_s3_target(spec: S3Target, service: S3Service, bucket: str, cases: Sequence[Case],
                      where: str = "") -> PreparedTarget:
    """The bucket checked (it exists, the keys may use it) and the fio with the http engine found."""
    try:
        binary = http_fio_binary()
        check_bucket(service, bucket, spec.name)
    except UserError as exc:
        raise UserError(exc.message if exc.message.startswith("target") else f"target '{spec.name}': {exc.message}",
                        where=where, hint=exc.hint) from None
    return PreparedTarget(spec=spec, binding=s3_binding(service, bucket, binary),
                          details=(("kind", "s3"), ("endpoint", service.endpoint), ("bucket", bucket),
                                   ("region", service.region), ("fio", binary)))


def service_of(prepared: PreparedTarget) -> tuple[S3Service, str] | None:
    """The S3 service and bucket of a prepared s3 target (for removing its objects), or None for other kinds."""
    details, env = dict(prepared.details), dict(prepared.binding.env)
    if details.get("kind") != "s3":
        return None
    return (S3Service(details["endpoint"], details["region"], S3Credentials(env[S3_KEY_ID_ENV], env[S3_KEY_ENV])),
            details["bucket"])
