"""S3 targets (shell): an S3 service driven by fio's http engine in S3 mode (the fio storbench builds with
libcurl). storbench itself only checks the bucket, makes the lab's bucket, and removes its own objects after the
run; the keys go to fio through its environment and never into a job text, a result or a log."""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import secrets
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, urlsplit

from storbench.config.operation_checks import MAX_RUN_OBJECTS
from storbench.config.targets import REGION_RE
from storbench.errors import UserError
from storbench.fio.jobfile import S3_KEY_ENV, S3_KEY_ID_ENV, JobBinding
from storbench.fio.options import parse_engines
from storbench.model import Case, S3Target
from storbench.s3sign import EMPTY_SHA256, S3Credentials, canonical_query, signed_headers
from storbench.shell import run
from storbench.targets.base import PreparedTarget
from storbench.targets.nfs import nfs_fio_binary

LAB_BUCKET = "storbench"  # the bucket storbench makes on its Ceph lab's radosgw
# Every object storbench writes is named <this><run token>.<job>.<file>...: after the run, objects with this run's
# token are removed, and nothing else.
OBJECT_PREFIX = "storbench."
ENV_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
ENDPOINTS_ENV = "STORBENCH_S3_ENDPOINTS"  # endpoints the operator allows the keys to go to, space-separated
MAX_CREDENTIALS_BYTES = 1024 * 1024
MAX_LIST_PAGES = 1000  # 1,000 keys a page: a run's own objects are far fewer
MAX_KEYS_PER_PAGE = 1000  # asked for (max-keys), and S3's own largest page
MAX_LIST_KEYS = 100_000  # keys a listing returns at most (held in memory)
MAX_REMOVED_KEYS = MAX_RUN_OBJECTS  # keys a run's removal goes through at most, a page at a time
S3_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"  # S3's XML namespace, of its answers and a delete's request
_NS = f"{{{S3_XMLNS}}}"


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _scheme_host_port(endpoint: str) -> tuple[str, str, int]:
    """An endpoint's scheme, lower-case host and port (the scheme's default when not given); a UserError for
    anything but http(s)://host[:port]."""
    try:
        parts = urlsplit(endpoint.strip())
        scheme, host, port = parts.scheme.lower(), (parts.hostname or "").lower(), parts.port
    except ValueError:  # a port that is no number from 0 to 65535
        scheme, host, port = "", "", None
    if scheme not in _DEFAULT_PORTS or not host or port == 0:
        raise UserError(f"S3 endpoint {endpoint!r} is not http(s)://host[:port] (a port from 1 to 65535)",
                        hint="e.g. --s3-endpoint http://10.0.0.5:7480")
    return scheme, host, port or _DEFAULT_PORTS[scheme]


def endpoint_key(endpoint: str) -> str:
    """An endpoint as compared: scheme, lower-case host and port (the scheme's default when not given)."""
    scheme, host, port = _scheme_host_port(endpoint)
    return f"{scheme}://{host}:{port}"


def canonical_endpoint(endpoint: str) -> str:
    """An endpoint as requests go to it and as fio's http engine signs it: lower-case host, the port as a number
    and left out when it is the scheme's default, as curl writes the Host header (``https://h:443`` and
    ``https://H`` both sign ``h``; ``http://h:09000`` signs ``h:9000``)."""
    scheme, host, port = _scheme_host_port(endpoint)
    return f"{scheme}://{host}" + ("" if port == _DEFAULT_PORTS[scheme] else f":{port}")


@dataclass(frozen=True)
class S3Access:
    """What the operator (the command line and the environment, never a plan) lets S3 targets use: the endpoints
    the operator's keys may be sent to, and where those keys are (a credentials file and profile, else
    AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)."""

    endpoints: frozenset[str] = frozenset()  # endpoint_key()s
    credentials_file: str | None = None
    profile: str | None = None

    @staticmethod
    def of(endpoints: Sequence[str], credentials_file: str | None, profile: str | None,
           environ: Mapping[str, str]) -> S3Access:
        named = [*endpoints, *environ.get(ENDPOINTS_ENV, "").split()]
        return S3Access(frozenset(endpoint_key(e) for e in named if e), credentials_file, profile)

    def allows(self, endpoint: str) -> bool:
        return endpoint_key(endpoint) in self.endpoints


NO_S3_ACCESS = S3Access()  # no endpoint allowed: the default wherever the operator said nothing


@dataclass(frozen=True)
class S3Service:
    """Where S3 requests go: endpoint URL (http or https), region, keys. ``allowed``: the operator named this
    endpoint (so it may even be a link-local address)."""

    endpoint: str
    region: str
    credentials: S3Credentials
    allowed: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoint", canonical_endpoint(self.endpoint))

    @property
    def host(self) -> str:
        return urlsplit(self.endpoint).netloc

    def request(self, method: str, bucket: str, key: str = "", query: dict[str, str] | None = None,
                timeout_s: float = 30, body: bytes = b"") -> tuple[int, bytes]:
        """One signed request; (HTTP status, response body). A ``body`` is signed by its hash and sent with its
        Content-MD5 (which S3 asks of a multi-object delete). Redirects are refused, answers capped; network
        failures are UserErrors."""
        query = query or {}
        path = "/" + quote(bucket, safe="") + ("/" + quote(key, safe="/-_.~") if key else "")
        payload = hashlib.sha256(body).hexdigest() if body else EMPTY_SHA256
        headers = signed_headers(method, self.host, path, query, payload, self.credentials, self.region,
                                 datetime.now(UTC))
        sent = {k: v for k, v in headers.items() if k != "host"}
        if body:
            sent["content-md5"] = base64.b64encode(hashlib.md5(body, usedforsecurity=False).digest()).decode()
        url = self.endpoint.rstrip("/") + path + (f"?{canonical_query(query)}" if query else "")
        from storbench.netclient import request  # lazy: only a request needs the HTTP client
        try:
            answer = request(url, method, sent, timeout_s=timeout_s, allowed=self.allowed, body=body)
        except OSError as exc:
            raise UserError(f"S3 endpoint {self.endpoint}: {exc}",
                            hint="check the endpoint URL and that the service is up") from None
        return answer.status, answer.body


def _read_credentials_file(path: str) -> str:
    """The operator's credentials file: a regular file (never a FIFO or a device), read without blocking, at
    most MAX_CREDENTIALS_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UserError(f"cannot open the S3 credentials file {path}: {exc.strerror}",
                        hint="a file like ~/.aws/credentials") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"the S3 credentials file {path} is not a regular file", hint="a file like "
                            "~/.aws/credentials")
        if info.st_size > MAX_CREDENTIALS_BYTES:
            raise UserError(f"the S3 credentials file {path} is larger than {MAX_CREDENTIALS_BYTES:,} bytes",
                            hint="a file like ~/.aws/credentials")
        data = os.read(fd, MAX_CREDENTIALS_BYTES + 1)[:MAX_CREDENTIALS_BYTES]
    finally:
        os.close(fd)
    return data.decode(errors="replace")


def load_credentials(access: S3Access, environ: Mapping[str, str] | None = None) -> S3Credentials:
    """The operator's keys: from the credentials file the command line names (AWS's shared-credentials format,
    ``[default]`` or the given profile), else from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY."""
    environ = os.environ if environ is None else environ
    if access.credentials_file is not None:
        import configparser  # lazy: only a credentials file needs it, not every run
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(_read_credentials_file(access.credentials_file))
        except configparser.Error as exc:
            raise UserError(f"cannot read the S3 credentials file {access.credentials_file}: {type(exc).__name__}",
                            hint="a file like ~/.aws/credentials") from None
        section = access.profile or "default"
        if not parser.has_section(section) or not {"aws_access_key_id", "aws_secret_access_key"} <= set(
                parser[section]):
            raise UserError(f"{access.credentials_file} has no [{section}] with aws_access_key_id and "
                            "aws_secret_access_key", hint="write them as in ~/.aws/credentials")
        return S3Credentials(parser[section]["aws_access_key_id"].strip(),
                             parser[section]["aws_secret_access_key"].strip())
    missing = [name for name in ENV_KEYS if not environ.get(name)]
    if missing:
        raise UserError(f"no S3 credentials ({' and '.join(missing)} not set)",
                        hint="export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give --s3-credentials-file")
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


def check_rights(service: S3Service, bucket: str, prefix: str, name: str) -> None:
    """These keys may write and delete objects in the bucket (every object operation writes, and the run's clean-up
    deletes; a bucket HEAD says neither): an empty object under the run's own prefix is put and removed again, or
    one line says which right is missing, before any repetition runs."""
    key, where = f"{prefix}probe", f"bucket '{bucket}' at {service.endpoint}"
    status, _ = service.request("PUT", bucket, key)
    if status in (401, 403):
        raise UserError(f"target '{name}': the credentials may not write objects to {where} (HTTP {status})",
                        hint="grant s3:PutObject and s3:DeleteObject on the bucket")
    if status >= 300:
        raise UserError(f"target '{name}': writing a test object to {where} answered HTTP {status}")
    status, _ = service.request("DELETE", bucket, key)
    if status in (401, 403):
        raise UserError(f"target '{name}': the credentials may write objects to {where} but not delete them (HTTP "
                        f"{status}), so the run's objects would stay; its test object {key} stays",
                        hint="grant s3:DeleteObject on the bucket")
    if status >= 300 and status != 404:
        raise UserError(f"target '{name}': deleting a test object from {where} answered HTTP {status}; {key} "
                        "may stay")


def create_bucket(service: S3Service, bucket: str) -> None:
    status, body = service.request("PUT", bucket)
    if status >= 300 and b"BucketAlreadyOwnedByYou" not in body:
        raise UserError(f"cannot create bucket '{bucket}' at {service.endpoint}: HTTP {status}")


def object_pages(service: S3Service, bucket: str, prefix: str, max_keys: int = MAX_LIST_KEYS) -> Iterator[list[str]]:
    """The keys under ``prefix``, a listing page at a time. A listing that does not end is stopped with a
    UserError: more than MAX_LIST_PAGES pages, more than ``max_keys`` keys in all or MAX_KEYS_PER_PAGE on a page, or
    a continuation token that is missing or comes back again; so is a body that is not S3's XML."""
    from xml.etree import ElementTree  # lazy: only S3's answers are XML, not every run's
    total = 0
    token: str | None = None
    seen: set[str] = set()
    where = f"listing bucket '{bucket}' at {service.endpoint}"
    for _page in range(MAX_LIST_PAGES):
        query = {"list-type": "2", "max-keys": str(MAX_KEYS_PER_PAGE), "prefix": prefix,
                 **({"continuation-token": token} if token else {})}
        status, body = service.request("GET", bucket, query=query)
        if status != 200:
            raise UserError(f"{where} failed: HTTP {status}")
        try:
            root = ElementTree.fromstring(body)
        except ElementTree.ParseError:
            raise UserError(f"{where}: the answer is not S3's XML") from None
        listed = [el.text or "" for el in root.iter(f"{_NS}Key")]
        if len(listed) > MAX_KEYS_PER_PAGE:
            raise UserError(f"{where}: a page of {len(listed):,} keys, more than the {MAX_KEYS_PER_PAGE:,} asked "
                            "for; stopped")
        total += len(listed)
        if total > max_keys:
            raise UserError(f"{where}: more than {max_keys:,} keys under {prefix!r}; stopped",
                            hint="a run writes far fewer objects: is the endpoint an S3 service?")
        yield [key for key in listed if key.startswith(prefix)]
        if (root.findtext(f"{_NS}IsTruncated") or "false") != "true":
            return
        token = root.findtext(f"{_NS}NextContinuationToken")
        if not token or token in seen:
            raise UserError(f"{where}: a truncated page with {'the same' if token else 'no'} continuation token; "
                            "stopped")
        seen.add(token)
    raise UserError(f"{where}: more than {MAX_LIST_PAGES} pages; stopped")


def list_objects(service: S3Service, bucket: str, prefix: str, max_keys: int = MAX_LIST_KEYS) -> list[str]:
    """The keys under ``prefix``, at most ``max_keys`` (see object_pages for what stops a listing)."""
    return [key for page in object_pages(service, bucket, prefix, max_keys) for key in page]


@dataclass(frozen=True)
class Removal:
    """What removing a run's objects did: ``removed`` of them; ``refused`` the service would not delete, the
    first refusal's status in ``why``."""

    removed: int
    refused: int = 0
    why: str = ""


def remove_objects(service: S3Service, bucket: str, prefix: str, max_keys: int = MAX_REMOVED_KEYS) -> Removal:
    """Delete every object whose name starts with ``prefix`` (one run's own), a listing page at a time (the keys
    are not all held at once): each page in one multi-object delete (S3's DeleteObjects, 1,000 keys a request;
    one request per key took an hour for a million objects 4 ms away). A page that request does not delete (a
    refusal, a busy service, a lost answer) is deleted key by key; a service without the request (501, 405, an
    answer that is not its result) is cleaned key by key from then on. A listing of more than ``max_keys`` keys is
    stopped (a UserError)."""
    if not prefix.startswith(OBJECT_PREFIX) or prefix == OBJECT_PREFIX:
        raise ValueError(f"{prefix!r} is not one run's object prefix")
    removed, refused, why = 0, 0, ""
    batches = True
    for keys in object_pages(service, bucket, prefix, max_keys):  # at most 1,000: what one DeleteObjects takes
        done = _delete_batch(service, bucket, keys) if batches else None
        if done is None or isinstance(done, Unsupported):
            batches = batches and done is None
            done = _delete_each(service, bucket, keys)
        removed, refused, why = removed + done.removed, refused + done.refused, why or done.why
    return Removal(removed, refused, why)


class Unsupported:
    """The service has no multi-object delete."""


BATCH_TIMEOUT_S = 120  # a thousand deletes in one request: a slow cluster takes its time before answering
_CODE_RE = re.compile(r"[A-Za-z]{1,64}")  # an S3 error code (AccessDenied): what of the answer is shown


def _delete_batch(service: S3Service, bucket: str, keys: Sequence[str]) -> Removal | Unsupported | None:
    """``keys`` in one DeleteObjects request (quiet: only the keys it could not delete come back); Unsupported when
    the service has no such request, None when this one did not delete them (refused whole, busy, no answer)."""
    body = (f'<?xml version="1.0" encoding="UTF-8"?><Delete xmlns="{S3_XMLNS}"><Quiet>true</Quiet>'
            + "".join(f"<Object><Key>{html.escape(key, quote=False)}</Key></Object>" for key in keys)
            + "</Delete>").encode()
    try:
        status, answer = service.request("POST", bucket, query={"delete": ""}, body=body, timeout_s=BATCH_TIMEOUT_S)
    except UserError:
        return None  # key by key says whether the service is there at all
    if status in (405, 501):
        return Unsupported()
    if status != 200:
        return None
    from xml.etree import ElementTree  # lazy: only S3's answers are XML, not every run's
    try:
        root = ElementTree.fromstring(answer.lstrip())
    except ElementTree.ParseError:
        return Unsupported()
    if root.tag not in ("DeleteResult", f"{_NS}DeleteResult"):
        return Unsupported()
    codes = [error.findtext(f"{_NS}Code") or error.findtext("Code") or ""
             for error in [*root.iter(f"{_NS}Error"), *root.iter("Error")]]
    refusals = [code if _CODE_RE.fullmatch(code) else "an error" for code in codes if code != "NoSuchKey"]
    return Removal(len(keys) - len(refusals), len(refusals),  # NoSuchKey: gone already, as a DELETE's 404 is
                   f"DeleteObjects answered {refusals[0]}" if refusals else "")


def _delete_each(service: S3Service, bucket: str, keys: Sequence[str]) -> Removal:
    removed, refused, why = 0, 0, ""
    for key in keys:
        status, _ = service.request("DELETE", bucket, key)
        if status < 300 or status == 404:
            removed += 1
        else:
            refused += 1
            why = why or f"DELETE answered HTTP {status}"
    return Removal(removed, refused, why)


is_run_object_prefix = re.compile(r"storbench\.[0-9a-f]{8,32}\.").fullmatch  # one `run_object_prefix` makes


def run_object_prefix() -> str:
    """A fresh prefix for the objects of one run: storbench.<random token>."""
    return f"{OBJECT_PREFIX}{secrets.token_hex(6)}."


def s3_binding(service: S3Service, bucket: str, fio_binary: str, prefix: str) -> JobBinding:
    """How an S3 bucket appears in a job file: fio's http engine in S3 mode, its objects under
    /<bucket>/<prefix><job>.<file>_<offset>_<size>, its keys as environment variables fio expands."""
    url = urlsplit(service.endpoint)
    if not REGION_RE.fullmatch(service.region):
        raise UserError(f"region {service.region!r} is not a region name", hint="e.g. us-east-1")
    if not is_run_object_prefix(prefix):
        raise ValueError(f"{prefix!r} is not an object prefix of storbench's")
    options = (("http_mode", "s3"), ("https", "on" if url.scheme == "https" else "off"), ("http_host", service.host),
               ("http_s3_region", service.region), ("http_s3_keyid", f"${{{S3_KEY_ID_ENV}}}"),
               ("http_s3_key", f"${{{S3_KEY_ENV}}}"),
               ("filename_format", f"/{bucket}/{prefix}$jobnum.$filenum"))
    # no_proxy: fio's libcurl would send the signed requests through the operator's http(s)_proxy; storbench's
    # own requests never take a proxy either
    return JobBinding(options=options, env=((S3_KEY_ID_ENV, service.credentials.access_key),
                                            (S3_KEY_ENV, service.credentials.secret_key), ("no_proxy", "*"),
                                            ("NO_PROXY", "*")), fio_binary=fio_binary)


def http_fio_binary() -> str:
    """A fio with the http engine: the one storbench setup --labs builds (with libcurl) and caches."""

    binary = nfs_fio_binary()
    if "http" not in parse_engines(run([binary, "--enghelp"], timeout_s=30)):
        raise UserError(f"{binary} has no http engine (built before storbench needed it)",
                        hint="rebuild it: rm it, then run storbench setup --labs")
    return binary


def prepare_s3_target(spec: S3Target, service: S3Service, bucket: str, cases: Sequence[Case],
                      where: str = "") -> PreparedTarget:
    """The bucket checked (it exists, the keys may write and delete objects in it), the fio with the http engine
    found, and a prefix of this run's own for the objects."""
    prefix = run_object_prefix()
    try:
        binary = http_fio_binary()
        binding = s3_binding(service, bucket, binary, prefix)
        check_bucket(service, bucket, spec.name)
        check_rights(service, bucket, prefix, spec.name)
    except UserError as exc:
        raise UserError(exc.message if exc.message.startswith("target") else f"target '{spec.name}': {exc.message}",
                        where=where, hint=exc.hint) from None
    return PreparedTarget(spec=spec, binding=binding,
                          details=(("kind", "s3"), ("endpoint", service.endpoint), ("bucket", bucket),
                                   ("region", service.region), ("object_prefix", prefix), ("fio", binary)))


@dataclass(frozen=True)
class RunObjects:
    """Where one run's objects are: the service, the bucket and the run's prefix."""

    service: S3Service
    bucket: str
    prefix: str


def service_of(prepared: PreparedTarget) -> RunObjects | None:
    """The objects of a prepared s3 target (for removing them), or None for other kinds. Its endpoint is one the
    operator allowed, or the lab's radosgw."""
    details, env = dict(prepared.details), dict(prepared.binding.env)
    if details.get("kind") != "s3":
        return None
    service = S3Service(details["endpoint"], details["region"], S3Credentials(env[S3_KEY_ID_ENV], env[S3_KEY_ENV]),
                        allowed=True)
    return RunObjects(service, details["bucket"], details["object_prefix"])
