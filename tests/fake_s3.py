"""Peers on loopback for the S3 security tests: a small S3 service (path-style buckets; PUT, GET, HEAD, DELETE,
ListObjectsV2 and DeleteObjects with its Content-MD5 checked, no signature check) that can misbehave on purpose,
and a TCP listener that keeps every byte sent to it. Each records what it received."""

from __future__ import annotations

import base64
import hashlib
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree
from xml.sax.saxutils import escape

NS = "http://s3.amazonaws.com/doc/2006-03-01/"


@dataclass
class FakeS3State:
    buckets: set[str] = field(default_factory=lambda: {"bench"})
    objects: dict[tuple[str, str], bytes] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)  # method, path, headers
    redirect_to: str | None = None  # every request answered 307 to this URL
    listing: str = "honest"  # or "same-token", "endless" (a new token every page), "no-token"
    ignore_max_keys: bool = False  # an honest listing pages by max-keys (1,000 unless asked) unless this is set
    refuse_deletes: bool = False  # every DELETE answered 403 (a bucket policy without s3:DeleteObject)
    refuse_puts: bool = False  # every PUT of an object answered 403 (a read-only key)
    # DeleteObjects (POST ?delete): "yes"; "no" answers 501 (a service without it), "forbidden" 403 (a proxy that
    # refuses the request), "busy" 503, "garbage" 200 with no DeleteResult
    multi_delete: str = "yes"
    lock: threading.Lock = field(default_factory=threading.Lock)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: FakeS3State

    def log_message(self, format: str, *args: object) -> None:
        return

    def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _handle(self) -> None:
        state = self.state
        with state.lock:
            state.requests.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if state.redirect_to is not None:
            self._answer(307, headers={"Location": state.redirect_to + self.path})
            return
        parts = urlsplit(self.path)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        if bucket not in state.buckets:
            self._answer(404, b"<Error><Code>NoSuchBucket</Code></Error>")
            return
        with state.lock:
            if self.command == "PUT" and key and state.refuse_puts:
                self._answer(403, b"<Error><Code>AccessDenied</Code></Error>")
            elif self.command == "PUT" and key:
                state.objects[(bucket, key)] = body
                self._answer(200)
            elif self.command in ("GET", "HEAD") and key:
                found = state.objects.get((bucket, key))
                self._answer(200, found) if found is not None else self._answer(404)
            elif self.command == "DELETE" and key and state.refuse_deletes:
                self._answer(403, b"<Error><Code>AccessDenied</Code></Error>")
            elif self.command == "DELETE" and key:
                state.objects.pop((bucket, key), None)
                self._answer(204)
            elif self.command == "POST" and "delete" in parse_qs(parts.query, keep_blank_values=True):
                self._answer(*self._delete_objects(bucket, body))
            elif self.command == "HEAD":
                self._answer(200)
            elif self.command == "GET":
                self._answer(200, self._listing(bucket, parse_qs(parts.query)), {"Content-Type": "application/xml"})
            else:
                self._answer(405)

    def _delete_objects(self, bucket: str, body: bytes) -> tuple[int, bytes]:
        """S3's DeleteObjects: its Content-MD5 must be the body's, at most 1,000 keys; quiet: only the errors."""
        state = self.state
        refused = {"no": (501, b"<Error><Code>NotImplemented</Code></Error>"),
                   "forbidden": (403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>"),
                   "busy": (503, b"<Error><Code>SlowDown</Code></Error>"), "garbage": (200, b"<html>hello</html>")}
        if state.multi_delete in refused:
            return refused[state.multi_delete]
        if self.headers.get("Content-MD5") != base64.b64encode(hashlib.md5(body).digest()).decode():
            return 400, b"<Error><Code>InvalidDigest</Code></Error>"
        keys = [key.text or "" for key in ElementTree.fromstring(body).iter(f"{{{NS}}}Key")]
        if len(keys) > 1000:
            return 400, b"<Error><Code>MalformedXML</Code></Error>"
        errors = ""
        for key in keys:
            if state.refuse_deletes:
                errors += f"<Error><Key>{escape(key)}</Key><Code>AccessDenied</Code></Error>"
            elif state.objects.pop((bucket, key), None) is None:  # as some services say it (AWS does not)
                errors += f"<Error><Key>{escape(key)}</Key><Code>NoSuchKey</Code></Error>"
        return 200, f'\n<?xml version="1.0"?><DeleteResult xmlns="{NS}">{errors}</DeleteResult>'.encode()

    def _listing(self, bucket: str, query: dict[str, list[str]]) -> bytes:
        prefix = query.get("prefix", [""])[0]
        keys = sorted(k for (b, k) in self.state.objects if b == bucket and k.startswith(prefix))
        token = query.get("continuation-token", ["0"])[0]
        truncated, next_token = {"honest": ("false", ""), "same-token": ("true", "t1"), "endless": ("true", ""),
                                 "no-token": ("true", "")}[self.state.listing]
        if self.state.listing == "endless":
            next_token = f"t{int(token.lstrip('t') or 0) + 1}"
        if self.state.listing == "honest" and not self.state.ignore_max_keys:  # S3's token: after the last key
            size = int(query.get("max-keys", ["1000"])[0])
            keys = [k for k in keys if k > token[2:]] if token.startswith("k:") else keys
            if len(keys) > size:
                keys = keys[:size]
                truncated, next_token = "true", f"k:{keys[-1]}"
        items = "".join(f"<Contents><Key>{escape(k)}</Key></Contents>" for k in keys)
        more = f"<NextContinuationToken>{next_token}</NextContinuationToken>" if next_token else ""
        return (f'<?xml version="1.0"?><ListBucketResult xmlns="{NS}"><Name>{bucket}</Name>{items}'
                f"<IsTruncated>{truncated}</IsTruncated>{more}</ListBucketResult>").encode()

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = _handle


@contextmanager
def fake_s3(state: FakeS3State | None = None) -> Iterator[tuple[str, FakeS3State]]:
    """A fake S3 service on 127.0.0.1: (its endpoint URL, its state)."""
    state = state or FakeS3State()
    handler = type("Handler", (_Handler,), {"state": state})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", state
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def _tcp_server(handle: Callable[[socket.socket, threading.Event], None]) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that hands each connection it accepts to ``handle`` (with the event set when the
    server stops), one at a time, until the context ends; its port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(2.0)
                handle(conn, stop)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


@contextmanager
def capture_server() -> Iterator[tuple[int, bytearray]]:
    """A TCP listener on 127.0.0.1 that keeps every byte any connection sends and answers nothing; (its port,
    what it received so far)."""
    received = bytearray()

    def keep(conn: socket.socket, stop: threading.Event) -> None:
        while True:
            try:
                chunk = conn.recv(65536)
            except (TimeoutError, OSError):
                break
            if not chunk:
                break
            received.extend(chunk)

    with _tcp_server(keep) as port:
        yield port, received


@contextmanager
def drip_server(answer: bytes, interval_s: float = 0.1) -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that reads a request, then sends ``answer`` one byte every ``interval_s``
    (then nothing): each read is quick, the whole answer endless in practice. Its port."""
    def drip(conn: socket.socket, stop: threading.Event) -> None:
        try:
            conn.recv(65536)
            for byte in answer:
                if stop.wait(interval_s):
                    break
                conn.sendall(bytes([byte]))
        except OSError:
            pass

    with _tcp_server(drip) as port:
        yield port
