"""The one HTTP client storbench's own requests go through (shell): S3 (bucket check, listing, deletes) and
Prometheus. It cannot be led elsewhere: a redirect is an error (never followed, so a signature never reaches
another host), an answer is read only up to a cap and a deadline, and a destination that resolves to a link-local or
a cloud metadata address is refused unless the operator allowed it. The host name is resolved once and the
connection goes to the address checked (the name stays in the Host header and TLS's SNI and certificate check),
so a DNS answer that changes in between cannot lead it elsewhere. No proxy is used."""

from __future__ import annotations

import http.client
import io
import ipaddress
import os
import socket
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

ALLOW_LINK_LOCAL_ENV = "STORBENCH_ALLOW_LINK_LOCAL"  # the operator's "1" lets a plan's URLs be link-local too
MAX_BODY_BYTES = 16 * 1024 * 1024  # an S3 listing page of 1,000 keys is about 300 KiB; a Prometheus range ~1 MiB
DEADLINE_S = 120.0  # a whole request, however slowly the peer answers (a 16 MiB page at 140 KiB/s)
CHUNK_BYTES = 64 * 1024
# Cloud metadata services that are not link-local: AWS over IPv6, Alibaba, Oracle.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("fd00:ec2::254", "100.100.100.200", "192.0.0.192"))


class RequestRefused(OSError):
    """A request storbench will not make or an answer it will not take (a redirect, an oversized body, a
    metadata address). An OSError, so callers treat it as the destination being unusable."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes


def refused_address(address: str) -> bool:
    """A link-local address (169.254.0.0/16, fe80::/10: cloud metadata and instance credentials live there) or a
    known metadata address."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_link_local or ip in METADATA_ADDRESSES


def resolve_destination(url: str, allowed: bool = False) -> list[str]:
    """The addresses ``url``'s host resolves to (resolved once: the request connects to one of these, so an answer
    that changes between the check and the connection cannot lead it elsewhere). RequestRefused if any is
    link-local or a metadata address (unless ``allowed``, or the operator set STORBENCH_ALLOW_LINK_LOCAL=1);
    OSError if the name does not resolve."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, _port(url), proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as exc:
        raise OSError(f"cannot resolve {host!r}: {exc}") from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not (allowed or os.environ.get(ALLOW_LINK_LOCAL_ENV) == "1"):
        for address in addresses:
            if refused_address(address):
                raise RequestRefused(f"{parts.scheme}://{parts.netloc} resolves to {address}, a link-local or "
                                     "cloud metadata address storbench sends nothing to (unless "
                                     "STORBENCH_ALLOW_LINK_LOCAL=1)")
    return addresses


def check_destination(url: str, allowed: bool = False) -> None:
    """Refuse a URL whose host resolves to a link-local or metadata address (unless ``allowed``, or the operator
    set STORBENCH_ALLOW_LINK_LOCAL=1); names that do not resolve are left to the request to report."""
    try:
        resolve_destination(url, allowed)
    except RequestRefused:
        raise
    except OSError:
        return


def _port(url: str) -> int:
    parts = urlsplit(url)
    return parts.port or (443 if parts.scheme == "https" else 80)


class _PinnedConnection(http.client.HTTPConnection):
    """HTTP to ``address`` (the checked one), with the URL's host name in the Host header."""

    def __init__(self, host: str, port: int, address: str, timeout_s: float) -> None:
        super().__init__(host, port, timeout=timeout_s)
        self.address = address

    def connect(self) -> None:
        self.sock = socket.create_connection((self.address, self.port), self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _PinnedTlsConnection(_PinnedConnection):
    """HTTPS to ``address``: the certificate is checked against the URL's host name, which is also the SNI."""

    default_port = 443

    def connect(self) -> None:
        super().connect()
        self.sock = ssl.create_default_context().wrap_socket(self.sock, server_hostname=self.host)


class _DeadlinePassed(Exception):
    pass


class _Deadline:
    """The end of a request's time. Every read waits at most until then: a peer that drips one byte a second
    keeps each single read within its timeout, and would otherwise keep the request alive without end."""

    def __init__(self, deadline_s: float) -> None:
        self.seconds = deadline_s
        self.end = time.monotonic() + deadline_s

    def left_s(self) -> float:
        return self.end - time.monotonic()


class _DeadlineReader(io.RawIOBase):
    """A socket's reads, each waiting at most ``timeout_s`` and never past the deadline."""

    def __init__(self, sock: socket.socket, deadline: _Deadline, timeout_s: float) -> None:
        super().__init__()
        self.sock, self.deadline, self.timeout_s = sock, deadline, timeout_s

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline.left_s()
        if left <= 0:
            raise _DeadlinePassed
        self.sock.settimeout(min(self.timeout_s, left))
        try:
            return self.sock.recv_into(buffer)
        except TimeoutError:
            if self.deadline.left_s() <= 0:
                raise _DeadlinePassed from None
            raise


class _DeadlineSocket:
    """What http.client's response reads from: the socket, through _DeadlineReader."""

    def __init__(self, sock: socket.socket, deadline: _Deadline, timeout_s: float) -> None:
        self.reader = _DeadlineReader(sock, deadline, timeout_s)

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self.reader)


def _read_capped(response: http.client.HTTPResponse, max_bytes: int, url: str, deadline: _Deadline) -> bytes:
    """The body, read in chunks: at most ``max_bytes``, and only until the deadline."""
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = response.read1(CHUNK_BYTES)
        if deadline.left_s() < 0:
            raise _DeadlinePassed
        if not chunk:
            if response.length:  # bytes the Content-Length promised that never came
                raise OSError(f"{url}: the answer ended {response.length:,} bytes early")
            return b"".join(chunks)
        size += len(chunk)
        if size > max_bytes:
            raise RequestRefused(f"{url} answered more than {max_bytes:,} bytes")
        chunks.append(chunk)


def request(url: str, method: str = "GET", headers: Mapping[str, str] | None = None, *, timeout_s: float = 30.0,
            deadline_s: float = DEADLINE_S, max_body_bytes: int = MAX_BODY_BYTES, allowed: bool = False,
            body: bytes = b"") -> Answer:
    """One request (with ``body``, if any); its status and body. The host is resolved once and checked
    (resolve_destination), and the connection goes to the address checked. ``timeout_s`` bounds each connect and
    read; ``deadline_s`` the whole request. A 3xx answer raises RequestRefused (redirects are not followed), so do an
    answer longer than ``max_body_bytes``, a refused destination and a request past its deadline; an unreachable one
    raises OSError. Other HTTP statuses are returned as they are."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RequestRefused(f"{url}: only http:// and https:// URLs with a host are requested")
    deadline = _Deadline(deadline_s)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = _PinnedTlsConnection if parts.scheme == "https" else _PinnedConnection
    sent = dict(headers or {})
    if not any(name.lower() == "host" for name in sent):  # the URL's host[:port] as written (what S3 signs)
        sent["Host"] = parts.netloc.rpartition("@")[2]
    last: OSError | None = None
    for address in resolve_destination(url, allowed):
        if deadline.left_s() <= 0:
            break
        connection = kind(parts.hostname, _port(url), address, min(timeout_s, deadline.left_s()))
        try:
            connection.connect()
        except OSError as exc:
            connection.close()
            last = exc
            continue
        try:
            return _exchange(connection, method, target, sent, body, url, max_body_bytes, deadline)
        finally:
            connection.close()
    if deadline.left_s() <= 0:
        raise RequestRefused(f"{url} did not answer within {deadline_s:g} s (the deadline of a request)")
    raise OSError(str(last) if last else f"cannot connect to {parts.netloc}")


def _exchange(connection: _PinnedConnection, method: str, target: str, headers: dict[str, str], body: bytes,
              url: str, max_body_bytes: int, deadline: _Deadline) -> Answer:
    sock = connection.sock
    assert sock is not None
    timeout_s = float(connection.timeout or DEADLINE_S)
    connection.response_class = lambda _sock, **kwargs: http.client.HTTPResponse(  # type: ignore[assignment]
        _DeadlineSocket(sock, deadline, timeout_s), **kwargs)  # type: ignore[arg-type]
    try:
        connection.request(method, target, body=body or None, headers=headers)
        response = connection.getresponse()
        status = int(response.status)
        if 300 <= status < 400:
            location = response.getheader("Location", "")
            raise RequestRefused(f"{url} answered HTTP {status}, a redirect{' to ' + location if location else ''}: "
                                 "storbench does not follow redirects")
        body = b"" if method == "HEAD" else _read_capped(response, max_body_bytes, url, deadline)
        return Answer(status, body)
    except RequestRefused:
        raise
    except (_DeadlinePassed, OSError, http.client.HTTPException) as exc:
        if deadline.left_s() <= 0 or isinstance(exc, _DeadlinePassed):
            raise RequestRefused(f"{url} did not answer within {deadline.seconds:g} s (the deadline of a request)"
                                 ) from None
        raise OSError(str(exc) or type(exc).__name__) from None
