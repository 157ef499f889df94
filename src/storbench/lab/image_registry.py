"""A private image registry on this machine (shell): Debian's `docker-registry` (the CNCF distribution registry)
serving TLS with a certificate its own CA signs, behind basic auth with a password made for it — what a site's
internal registry looks like to `storbench image push` and to a cluster's nodes. The k8s lab runs one on its bridge
and its nodes pull the fio image from it; a test runs one on loopback.

Everything lives in one directory: the CA (`ca/ca.crt`, the directory skopeo's `--cert-dir` and containerd's
hosts.toml take), the server's key and certificate, the bcrypt password file, the images, and the auth file
(`auth.json`, 0600, docker's format) with the one user's credentials, as `skopeo login` would write it. The caller
records the daemon with its lab, so the lab's `down` stops it.
"""

from __future__ import annotations

import base64
import json
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.lab.labdir import port_open
from storbench.lab.process import start_daemon
from storbench.private_files import write_private
from storbench.shell import interrupts_held, run

USER = "storbench"
PORT = 15000


@dataclass(frozen=True)
class RegistryInfo:
    address: str  # HOST:PORT, what image references name
    ca_dir: str  # a directory holding only ca.crt
    authfile: str  # docker's config format, 0600: {"auths": {address: {"auth": base64(user:password)}}}


def registry_config(listen: str, data: str, cert: str, key: str, htpasswd: str) -> str:
    """docker-registry's configuration: files under ``data``, TLS, basic auth from ``htpasswd`` (bcrypt)."""
    return json.dumps({
        "version": "0.1", "log": {"level": "warn", "accesslog": {"disabled": True}},
        "storage": {"filesystem": {"rootdirectory": data}, "delete": {"enabled": True}},
        "http": {"addr": listen, "tls": {"certificate": cert, "key": key}, "headers": {}},
        "auth": {"htpasswd": {"realm": "storbench", "path": htpasswd}},
    }, indent=1)  # JSON is YAML


def auth_file_text(address: str, user: str, password: str) -> str:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return json.dumps({"auths": {address: {"auth": token}}}, indent=1)


def hosts_toml(address: str, ca_file: str) -> str:
    """containerd's hosts.toml (certs.d/ADDRESS/) that trusts ``ca_file`` for the registry at ``address``."""
    return (f'server = "https://{address}"\n\n[host."https://{address}"]\n'
            f'  capabilities = ["pull", "resolve"]\n  ca = "{ca_file}"\n')


def openssl_commands(directory: str, host: str) -> list[list[str]]:
    """A CA and a server certificate for ``host`` (an IP address) it signs, 2 days each."""
    ca, d = f"{directory}/ca", directory
    return [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/ca.key", "-out", f"{ca}/ca.crt",
         "-days", "2", "-subj", "/CN=storbench registry CA"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{d}/server.key", "-out", f"{d}/server.csr",
         "-subj", f"/CN={host}"],
        ["openssl", "x509", "-req", "-in", f"{d}/server.csr", "-CA", f"{ca}/ca.crt", "-CAkey", f"{d}/ca.key",
         "-CAcreateserial", "-out", f"{d}/server.crt", "-days", "2", "-extfile", f"{d}/san.ext"],
    ]


def start_registry(directory: Path, host: str, port: int, record: Callable[[int], object]) -> RegistryInfo:
    """Start a registry on ``host``:``port`` with everything in ``directory`` (made here), its pid given to
    ``record`` as it starts (a Ctrl-C held meanwhile: one during the wait for its port, before it was recorded, had
    left it running unknown to `down`); returns how to reach it. Needs docker-registry, htpasswd (apache2-utils) and
    openssl."""
    for tool, package in (("docker-registry", "docker-registry"), ("htpasswd", "apache2-utils"),
                          ("openssl", "openssl")):
        if shutil.which(tool) is None:
            raise UserError(f"image registry: {tool} is not installed", hint=f"apt-get install {package} "
                            "(sudo storbench setup --k8s installs it)")
    if port_open(host, port):
        raise UserError(f"image registry: {host}:{port} is taken", hint="another registry or lab is running there")
    (directory / "ca").mkdir(parents=True, exist_ok=True)
    (directory / "data").mkdir(exist_ok=True)
    (directory / "san.ext").write_text(f"subjectAltName=IP:{host}\nextendedKeyUsage=serverAuth\n")
    for command in openssl_commands(str(directory), host):
        run(command, timeout_s=60)
    password = secrets.token_urlsafe(24)
    hashed = run(["htpasswd", "-niB", USER], input_text=password + "\n", timeout_s=60).strip()
    write_private(directory / "htpasswd", hashed + "\n")
    address = f"{host}:{port}"
    write_private(directory / "auth.json", auth_file_text(address, USER, password))
    (directory / "config.yml").write_text(registry_config(
        address, str(directory / "data"), str(directory / "server.crt"), str(directory / "server.key"),
        str(directory / "htpasswd")))
    with interrupts_held():
        record(start_daemon(["docker-registry", "serve", str(directory / "config.yml")], directory / "registry.log"))
    deadline = time.monotonic() + 30
    while not port_open(host, port):
        if time.monotonic() > deadline:
            tail = (directory / "registry.log").read_text(errors="replace").strip().splitlines()[-2:]
            raise UserError(f"image registry: not listening on {address} within 30s",
                            hint=f"see {directory / 'registry.log'}: {' | '.join(tail)[:300]}")
        time.sleep(0.2)
    return RegistryInfo(address, str(directory / "ca"), str(directory / "auth.json"))
