"""The one HTTP client storbench's own requests go through (shell): S3 (bucket check, listing, deletes) and
Prometheus. It cannot be led elsewhere: a redirect is an error (never followed, so a signature never reaches
another host), an answer is read only up to a cap, and a destination that resolves to a link-local or a cloud
metadata address is refused unless the operator allowed it."""

from __future__ import annotations

import ipaddress
import os
import socket
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from typing import IO
from urllib.parse import urlsplit

ALLOW_LINK_LOCAL_ENV = "STORBENCH_ALLOW_LINK_LOCAL"  # the operator's "1" lets a plan's URLs be link-local too
MAX_BODY_BYTES = 16 * 1024 * 1024  # an S3 listing page of 1,000 keys is about 300 KiB; a Prometheus range ~1 MiB
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


def check_destination(url: str, allowed: bool = False) -> None:
    """Refuse a URL whose host resolves to a link-local or metadata address (unless ``allowed``, or the operator
    set STORBENCH_ALLOW_LINK_LOCAL=1); names that do not resolve are left to the request to report."""
    if allowed or os.environ.get(ALLOW_LINK_LOCAL_ENV) == "1":
        return
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return
    for info in infos:
        address = str(info[4][0])
        if refused_address(address):
            raise RequestRefused(f"{parts.scheme}://{parts.netloc} resolves to {address}, a link-local or cloud "
                                 "metadata address storbench sends nothing to (unless STORBENCH_ALLOW_LINK_LOCAL=1)")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: Message, newurl: str) -> None:
        return None  # urllib then raises HTTPError with the 3xx status


_OPENER = urllib.request.build_opener(_NoRedirect)


def _read_capped(stream: IO[bytes], max_bytes: int, url: str) -> bytes:
    body = stream.read(max_bytes + 1)
    if len(body) > max_bytes:
        raise RequestRefused(f"{url} answered more than {max_bytes:,} bytes")
    return body


def request(url: str, method: str = "GET", headers: Mapping[str, str] | None = None, *, timeout_s: float = 30.0,
            max_body_bytes: int = MAX_BODY_BYTES, allowed: bool = False) -> Answer:
    """One request; its status and body. A 3xx answer raises RequestRefused (redirects are not followed), so do an
    answer longer than ``max_body_bytes`` and a refused destination; an unreachable one raises OSError. Other
    HTTP statuses are returned as they are."""
    check_destination(url, allowed)
    req = urllib.request.Request(url, method=method, headers=dict(headers or {}))
    try:
        with _OPENER.open(req, timeout=timeout_s) as response:
            return Answer(int(response.status), _read_capped(response, max_body_bytes, url))
    except urllib.error.HTTPError as exc:
        with exc:
            if 300 <= exc.code < 400:
                raise RequestRefused(f"{url} answered HTTP {exc.code}, a redirect"
                                     f"{' to ' + exc.headers.get('Location', '') if exc.headers else ''}: "
                                     "storbench does not follow redirects") from None
            return Answer(int(exc.code), _read_capped(exc, max_body_bytes, url))
    except urllib.error.URLError as exc:
        raise OSError(str(exc.reason)) from None
