"""An NFS server on this machine (shell): nfs-ganesha (VFS backend) and rpcbind in a network namespace of
their own, so ports 111 and 2049 stay private, reachable from the host over a veth pair.

`up` is a no-op when the lab already runs; `down` kills both daemons, removes the namespace and the veth pair,
and deletes the lab directory (the export with it). The export is for the host end of the veth only, from a
privileged port, with root squashed (see nfs_conf.render_ganesha_conf).

Which processes `down` kills: the one it started and recorded (ganesha, see lab.labdir), and whatever else runs
in the lab's named network namespace (rpcbind, which forks away to daemonise). Only root can put a process in a
namespace under /run/netns, so membership, unlike a command line, cannot be faked by another user.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from storbench.errors import UserError
from storbench.events import LabHealed, LabUp, RunEvent
from storbench.faults import FaultOffer, FaultStep, find_offer
from storbench.lab.base import (
    LabCommand,
    LabGroup,
    LabKindBase,
    LabLost,
    Say,
    SessionLabs,
    SoftwareProbe,
    status_line,
)
from storbench.lab.hosts_conf import BRIDGE, is_down, link_flags
from storbench.lab.lab_claim import claims_lab, frees_lab, frees_names, owns_names
from storbench.lab.labdir import (
    LabRoot,
    default_lab_dir,
    every_step,
    port_open,
    require_tools,
)
from storbench.lab.nfs_conf import (
    ANONYMOUS_GID,
    ANONYMOUS_UID,
    BRIDGE_HOST_VETH,
    BRIDGE_SERVER_VETH,
    HOST_ADDRESS,
    HOST_VETH,
    NAMESPACE,
    PREFIX_LENGTH,
    SERVER_ADDRESS,
    SERVER_VETH,
    NfsLabSpec,
    bridged_address,
    nfs_url,
    render_ganesha_conf,
)
from storbench.lab.process import alive, kill_all
from storbench.model import Case, LabPoint
from storbench.shell import run

DEFAULT_LAB_DIR = default_lab_dir()


@dataclass(frozen=True)
class NfsLabInfo:
    root: str
    export: str
    url: str
    server_address: str
    servers_url: str | None = None  # the URL from the hosts lab's fio servers (the lab joined their bridge)


def _namespace_exists() -> bool:
    return NAMESPACE in run(["ip", "netns", "list"], timeout_s=10).split()


def _namespace_pids() -> list[int]:
    if not _namespace_exists():
        return []
    return [int(p) for p in run(["ip", "netns", "pids", NAMESPACE], timeout_s=10).split()]


def _command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _described(info: NfsLabInfo) -> str:
    """A running NFS lab in its status line: its export and the URLs it is served at."""
    beside = f", and as {info.servers_url} from the hosts lab's servers" if info.servers_url else ""
    return f"export {info.export} as {info.url}{beside} (NFSv3 and v4, nfs-ganesha VFS)"


class NfsLab(LabRoot):
    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root, DEFAULT_LAB_DIR / "nfs")
        self.export = self.root / "export"

    def info(self) -> NfsLabInfo | None:
        raw = self.dir.read_state()
        if raw is None:
            return None
        return NfsLabInfo(**raw)

    def running(self) -> bool:
        return bool(_namespace_pids()) and port_open(SERVER_ADDRESS, 2049)

    def status(self) -> str:
        return status_line("nfs", self.root, self.info(), self.running, _described)

    @claims_lab
    @owns_names("nfs")
    def up(self, spec: NfsLabSpec | None = None) -> NfsLabInfo:
        spec = spec or NfsLabSpec()
        current = self.info()
        if current is not None and self.running() and (current.servers_url is not None) == (spec.bridge is not None):
            if spec.bridge is not None:  # the hosts lab may have made its bridge anew since: join it again
                run(["ip", "link", "set", BRIDGE_HOST_VETH, "master", spec.bridge])
                run(["ip", "link", "set", BRIDGE_HOST_VETH, "up"])
            return current
        self.down()
        require_tools("nfs", ("ganesha.nfsd", "rpcbind", "ip", "unshare"), hint="run sudo storbench setup --labs")
        self.dir.ensure()
        self.export.mkdir(mode=0o700)
        os.chown(self.export, ANONYMOUS_UID, ANONYMOUS_GID)  # squashed root writes as this uid
        (self.root / "log").mkdir()
        conf = self.root / "ganesha.conf"
        conf.write_text(render_ganesha_conf(str(self.export), str(self.root), spec))
        try:
            self._network(spec.bridge)
            self._start_server()
        except BaseException:
            self.down()
            raise
        info = NfsLabInfo(root=str(self.root), export=str(self.export), url=nfs_url(),
                          server_address=SERVER_ADDRESS, servers_url=nfs_url(bridged=True) if spec.bridge else None)
        self.state.write_text(json.dumps(info.__dict__))
        return info

    def _start_server(self) -> float:
        """Start rpcbind and nfs-ganesha in the lab's namespace and wait until it listens; the seconds it took.
        They share a private mount namespace with their own /run: a host rpcbind (or a second lab) never sees
        their sockets."""
        started = time.time()
        conf = self.root / "ganesha.conf"
        script = ('mount -t tmpfs storbench-nfs-run /run && mkdir -p /run/ganesha && rpcbind -w && '
                  'exec ganesha.nfsd -F -f "$1" -L "$2" -p /run/ganesha/ganesha.pid')  # paths as arguments
        self.dir.start("ganesha", ["ip", "netns", "exec", NAMESPACE, "unshare", "--mount", "--propagation", "private",
                                   "sh", "-c", script, "sh", str(conf), str(self.root / "log" / "ganesha.log")],
                       self.root / "log" / "ganesha.out")
        deadline = time.time() + 60
        while time.time() < deadline and not port_open(SERVER_ADDRESS, 2049):
            time.sleep(0.1)
        if not port_open(SERVER_ADDRESS, 2049):
            log = (self.root / "log" / "ganesha.out").read_text(errors="replace")[-300:]
            raise UserError("nfs lab: nfs-ganesha did not start listening on 2049 within 60 s",
                            hint=f"see {self.root / 'log'}: {' '.join(log.split())}")
        return time.time() - started

    def crash_server(self) -> None:
        """SIGKILL nfs-ganesha and its rpcbind, as a server that crashes: no goodbye to its clients."""
        if self.info() is None:
            raise UserError("nfs lab: not up", hint="storbench lab nfs up")
        kill_all(_namespace_pids())

    def stop_server(self, *, timeout_s: float = 30) -> float:
        """Stop nfs-ganesha cleanly (SIGTERM: it closes its clients' connections and shuts down as an administrator's
        restart does), then its rpcbind; the seconds ganesha took to exit (SIGKILL after ``timeout_s``)."""
        if self.info() is None:
            raise UserError("nfs lab: not up", hint="storbench lab nfs up")
        started = time.time()
        ganesha = [pid for pid in _namespace_pids() if _command_name(pid) == "ganesha.nfsd"]
        for pid in ganesha:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        while time.time() < started + timeout_s and any(alive(pid) for pid in ganesha):
            time.sleep(0.05)
        took = time.time() - started
        kill_all(_namespace_pids())  # rpcbind, and a ganesha that did not exit in time
        return took

    def restart_server(self) -> float:
        """Start the server again after ``crash_server`` or ``stop_server`` (its export and file handles as
        before); the seconds it took to listen."""
        if self.info() is None:
            raise UserError("nfs lab: not up", hint="storbench lab nfs up")
        kill_all(_namespace_pids())  # nothing left of the crashed one
        return self._start_server()

    def link_state(self) -> dict[str, set[str]]:
        """This machine's links and their flags, read once (`hosts_conf.link_flags`)."""
        return link_flags(run(["ip", "-o", "link", "show"], timeout_s=30))

    def set_links(self, *, up: bool, present: dict[str, set[str]] | None = None) -> None:
        """Take the host ends of the server's links down (a partition: its clients' packets go nowhere) or up;
        ``present``: `link_state` already read."""
        if self.info() is None:
            raise UserError("nfs lab: not up", hint="storbench lab nfs up")
        present = self.link_state() if present is None else present
        for link in (HOST_VETH, BRIDGE_HOST_VETH):
            if link in present:
                run(["ip", "link", "set", link, "up" if up else "down"])

    def links_down(self, present: dict[str, set[str]] | None = None) -> list[str]:
        """The host ends of the server's links that are set down (a `cut` not undone); an absent one is not."""
        present = self.link_state() if present is None else present
        return [link for link in (HOST_VETH, BRIDGE_HOST_VETH) if is_down(present.get(link, set()))]

    def _network(self, bridge: str | None) -> None:
        """The veth pair to this host; with ``bridge``, a second one whose host end joins that bridge (the hosts
        lab's), so its namespaces reach the server without routing."""
        run(["ip", "netns", "add", NAMESPACE])
        run(["ip", "link", "add", HOST_VETH, "type", "veth", "peer", "name", SERVER_VETH])
        run(["ip", "link", "set", SERVER_VETH, "netns", NAMESPACE])
        run(["ip", "addr", "add", f"{HOST_ADDRESS}/{PREFIX_LENGTH}", "dev", HOST_VETH])
        run(["ip", "link", "set", HOST_VETH, "up"])
        for command in (["ip", "addr", "add", f"{SERVER_ADDRESS}/{PREFIX_LENGTH}", "dev", SERVER_VETH],
                        ["ip", "link", "set", SERVER_VETH, "up"], ["ip", "link", "set", "lo", "up"]):
            run(["ip", "netns", "exec", NAMESPACE, *command])
        if bridge is None:
            return
        run(["ip", "link", "add", BRIDGE_HOST_VETH, "type", "veth", "peer", "name", BRIDGE_SERVER_VETH])
        run(["ip", "link", "set", BRIDGE_SERVER_VETH, "netns", NAMESPACE])
        run(["ip", "link", "set", BRIDGE_HOST_VETH, "master", bridge])
        run(["ip", "link", "set", BRIDGE_HOST_VETH, "up"])
        for command in (["ip", "addr", "add", bridged_address(), "dev", BRIDGE_SERVER_VETH],
                        ["ip", "link", "set", BRIDGE_SERVER_VETH, "up"]):
            run(["ip", "netns", "exec", NAMESPACE, *command])

    @frees_lab
    @frees_names("nfs")
    def down(self) -> None:
        """Kill the daemons, remove the namespace and the veth pair, delete the lab directory."""
        if self.dir.exists():
            self.dir.kill()

        def namespace() -> None:
            kill_all(_namespace_pids())
            if _namespace_exists():
                run(["ip", "netns", "delete", NAMESPACE], timeout_s=20)

        every_step(namespace, partial(_delete_link, HOST_VETH), partial(_delete_link, BRIDGE_HOST_VETH),
                   self.dir.remove)


def _delete_link(name: str) -> None:
    """Delete a network link if it is there. Deleting the namespace removes the veth pair's host end too, but
    asynchronously: a link seen a moment ago may be gone by the time it is deleted, which is what we wanted."""
    if name not in run(["ip", "-o", "link", "show"], timeout_s=10):
        return
    try:
        run(["ip", "link", "delete", name], timeout_s=20)
    except UserError:
        if name in run(["ip", "-o", "link", "show"], timeout_s=10):
            raise


# ---- NFS as a lab kind (lab.registry) ---------------------------------------------------------------------------

def _command_up(lab: NfsLab, args: argparse.Namespace, say: Say) -> None:
    info = lab.up()
    say(f"nfs lab: up; {info.url} exports {info.export} (nfs-ganesha, VFS; NFSv3 and v4)")
    say(f"plan target: {{kind: nfs, url: {info.url}, size: 256MiB}}")


def _command_down(lab: NfsLab, say: Say) -> None:
    lab.down()
    say(f"nfs lab: down; namespace, veth pair and {lab.root} removed")


class NfsKind(LabKindBase):
    """The NFS lab: up for each lab configuration with `lab.nfs`, on the hosts lab's bridge too when the plan has
    one; it offers its URL to nfs targets (those on a Ceph lab's cluster too)."""

    name = "nfs"
    command: LabCommand[NfsLab] = LabCommand(
        help="an NFS server (nfs-ganesha, VFS backend) in a network namespace",
        open=NfsLab, up=_command_up, down=_command_down)

    # "NFS-Ganesha Release = V4.3"
    software: tuple[SoftwareProbe, ...] = (SoftwareProbe("nfs-ganesha", ("ganesha.nfsd", "-v"), r"Release = V?(\S+)"),)
    faults: tuple[FaultOffer, ...] = (
        FaultOffer("nfs", "cut", "server", "reconnect", "take the server's links down: every request goes "
                   "unanswered until they are up again (a network partition; TCP retries, nothing is refused)"),
        FaultOffer("nfs", "crash", "server", "restart", "SIGKILL nfs-ganesha (and its rpcbind), as a server that "
                   "crashes: its clients' connections are reset; at the restore it starts again and they reconnect"),
        FaultOffer("nfs", "stop", "server", "start", "stop nfs-ganesha cleanly (SIGTERM, as an administrator's "
                   "restart): it closes its clients' connections; at the restore it starts again and they reconnect"),
    )

    def wanted(self, group: LabGroup) -> bool:
        return group.lab.nfs

    def fault(self, step: FaultStep, case: Case, running: Mapping[LabPoint, object], *, restore: bool) -> str:
        if find_offer(step, self.faults) is None:
            return super().fault(step, case, running, restore=restore)
        lab = NfsLab()
        if step.action == "crash":
            if restore:
                return f"nfs lab: server started again (listening after {lab.restart_server():.1f}s)"
            lab.crash_server()
            return "nfs lab: server killed"
        if step.action == "stop":
            if restore:
                return f"nfs lab: server started again (listening after {lab.restart_server():.1f}s)"
            return f"nfs lab: server stopped (ganesha exited after {lab.stop_server():.1f}s)"
        lab.set_links(up=restore)
        return "nfs lab: server links up again" if restore else "nfs lab: server links down"

    def lost(self, case: Case, running: Mapping[LabPoint, object], faulted: frozenset[str] = frozenset()
             ) -> LabLost | None:
        """nfs-ganesha gone after a repetition with no fault on the server (one with a fault is settled after): it
        crashed or was stopped with no fault asking. Its recorded process, as the Ceph lab's daemons (`LabDir.lost`):
        no command run between repetitions."""
        lab = NfsLab()
        if not case.lab.nfs or "server" in faulted or not lab.dir.lost():
            return None
        return LabLost(f"nfs lab: nfs-ganesha stopped during the run; its log in {lab.root / 'log'}",
                       "see ganesha.log there; once the cause is fixed, run the plan again with --resume: the "
                       "repetitions stored so far are kept")

    def settle(self, case: Case, running: Mapping[LabPoint, object]) -> RunEvent | None:
        """After a repetition with faults: the server's links up and nfs-ganesha listening again, should a restore
        have failed (the next repetition would meet a dead server); None when it already was."""
        lab = NfsLab()
        if not case.lab.nfs or lab.info() is None:
            return None
        present = lab.link_state()  # one listing for the check and the repair
        if not lab.links_down(present) and lab.running():
            return None
        started = time.time()
        lab.set_links(up=True, present=present)
        if not lab.running():
            lab.restart_server()
        return LabHealed("nfs", time.time() - started)

    def bring_up(self, group: LabGroup, labs: SessionLabs) -> None:

        lab_hosts = group.loaded.config.lab.hosts if group.loaded.config.lab else None
        nfs_lab = NfsLab()
        labs.downs.append(nfs_lab.down)
        # with namespace hosts, the server joins their bridge: the clients mount it from there
        nfs_info = nfs_lab.up(NfsLabSpec(bridge=BRIDGE if lab_hosts is not None else None))
        nfs_url = nfs_info.servers_url or nfs_info.url
        labs.environment = replace(labs.environment, nfs_url=nfs_url)
        group.observer.event(LabUp("nfs", nfs_url, detail=f"exporting {nfs_info.export}"))


KIND = NfsKind()
