"""Many client hosts on this machine (shell): network namespaces on a bridge, each running `fio --server`.

`up` is a no-op when that many hosts already answer; `down` kills the servers and removes the namespaces,
the bridge, the firewall tables and the lab directory.

The servers answer only storbench's own uid (nftables rules, see hosts_conf.firewall_rules): a fio server is
root for whoever connects. `down` kills the servers it recorded (lab.labdir) and whatever else runs in the
lab's named network namespaces (the children a fio server forks per job); only root can put a process in a
namespace under /run/netns, so membership, unlike a command line, cannot be faked by another user.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from storbench.errors import UserError
from storbench.execute.fio_binary import binary_digest
from storbench.lab.base import status_line
from storbench.lab.hosts_conf import (
    BRIDGE,
    FIO_SERVER_PORT,
    FIREWALL_FAMILIES,
    FIREWALL_TABLE,
    NAMESPACE_PREFIX,
    SUBNET,
    LabHost,
    firewall_delete,
    firewall_rules,
    hosts_down,
    inner_batch,
    lab_host,
    lab_veths,
    link_commands,
    network_batch,
    server_command,
    serves_lab_host,
    subnet_clashes,
)
from storbench.lab.lab_claim import claims_lab, frees_lab, frees_names, owns_names
from storbench.lab.labdir import LabRoot, default_lab_dir, every_step, port_open, require_tools
from storbench.lab.process import kill_all, pids_in_namespaces, pids_serving, program_and_parent
from storbench.shell import run

DEFAULT_LAB_DIR = default_lab_dir()


@dataclass(frozen=True)
class HostsLabInfo:
    root: str
    count: int
    servers: tuple[str, ...]  # "address,port" as fio --client takes them


def _namespaces() -> list[str]:
    names = []
    for line in run(["ip", "netns", "list"], timeout_s=30).splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(NAMESPACE_PREFIX):
            names.append(name)
    return names


def _firewall_tables() -> list[str]:
    """The families in which this lab's nftables table exists (none without nft)."""
    if shutil.which("nft") is None:
        return []
    listed = run(["nft", "list", "tables"], timeout_s=30).splitlines()
    return [family for family in FIREWALL_FAMILIES if f"table {family} {FIREWALL_TABLE}" in listed]


def _firewalled() -> bool:
    return len(_firewall_tables()) == len(FIREWALL_FAMILIES)


def _delete_lab_veths() -> None:
    """Veth pairs a deleted namespace left behind (see hosts_conf.lab_veths), deleted by name. One may vanish
    between the listing and the delete (the namespace went after all): only one still listed is an error."""
    for _ in range(3):
        left = lab_veths(run(["ip", "-o", "link", "show"], timeout_s=30))
        if not left:
            return
        try:
            run(["ip", "-force", "-batch", "-"], timeout_s=60, input_text="".join(f"link delete {n}\n" for n in left))
        except UserError:
            time.sleep(0.2)
    left = lab_veths(run(["ip", "-o", "link", "show"], timeout_s=30))
    if left:
        raise UserError(f"hosts lab: could not delete {len(left)} veth(s) (first: {left[0]})",
                        hint=f"delete them by hand: ip link delete {left[0]}")


class HostsLab(LabRoot):
    def __init__(self, root: Path | None = None) -> None:
        super().__init__(root, DEFAULT_LAB_DIR / "hosts")
        self.ceph_conf = self.root / "ceph.conf"  # the servers' CEPH_CONF (see hosts_conf.server_command)

    def info(self) -> HostsLabInfo | None:
        raw = self.dir.read_state()
        if raw is None:
            return None
        return HostsLabInfo(root=raw["root"], count=raw["count"], servers=tuple(raw["servers"]))

    def running(self, count: int | None = None) -> bool:
        info = self.info()
        if info is None or (count is not None and info.count != count):
            return False
        return _firewalled() and all(port_open(lab_host(i).address, FIO_SERVER_PORT) for i in range(1, info.count + 1))

    def status(self) -> str:
        return status_line("hosts", self.root, self.info(), self.running, lambda info: (
            f"{info.count} fio servers in network namespaces {NAMESPACE_PREFIX}1..{info.count}, "
            f"{info.servers[0]} .. {info.servers[-1]}"))

    @claims_lab
    @owns_names("hosts")
    def up(self, count: int, fio_binary: str) -> HostsLabInfo:
        raw = self.dir.read_state()
        fio = {"path": fio_binary, "sha256": binary_digest(fio_binary)}  # a rebuilt fio at one path is another
        if self.running(count) and raw is not None and raw.get("fio") == fio:  # not another fio's servers
            return HostsLabInfo(root=raw["root"], count=raw["count"], servers=tuple(raw["servers"]))
        require_tools("hosts", ("ip", "unshare", "nft"), hint="run sudo storbench setup --labs")
        if clashes := subnet_clashes(run(["ip", "-o", "-4", "route", "show", "table", "all"], timeout_s=30)):
            raise UserError(f"hosts lab: its network {SUBNET} meets this machine's route {clashes[0]}: the lab would "
                            "take those addresses over", hint="run the hosts lab on a machine without routes into "
                            f"{SUBNET}, or give real fio servers (hosts.servers)")
        self.down()  # after the check: a kept lab is not taken down to be refused
        hosts = [lab_host(i) for i in range(1, count + 1)]
        self.dir.ensure()
        try:
            rules = self.root / "firewall.nft"
            rules.write_text(firewall_rules(os.geteuid()))
            run(["nft", "-f", str(rules)], timeout_s=30)  # before any server listens
            batch = self.root / "network.batch"
            batch.write_text(network_batch(hosts))
            run(["ip", "-batch", str(batch)], timeout_s=300)
            for host in hosts:
                inner = self.root / f"{host.namespace}.batch"
                inner.write_text(inner_batch(host))
                run(["ip", "-n", host.namespace, "-batch", str(inner)], timeout_s=60)
            for host in hosts:
                self.dir.start(host.hostname, server_command(host, fio_binary, str(self.ceph_conf)),
                               self.root / "log" / f"{host.hostname}.log")
            self._wait(hosts)
        except BaseException:
            self.down()
            raise
        info = HostsLabInfo(root=str(self.root), count=count, servers=tuple(h.server for h in hosts))
        self.state.write_text(json.dumps({"root": info.root, "count": count, "servers": list(info.servers),
                                          "fio": fio}))
        return info

    def set_link(self, rate_bits_per_s: int | None, delay_s: float | None) -> bool:
        """Shape every host's link to ``rate`` (and ``delay``) with the kernel's traffic control, at once, no
        restart; None lifts it. Returns whether anything changed."""
        info = self.info()
        if info is None:
            raise UserError("hosts lab: not up, cannot shape its links", hint="bring it up first")
        raw = json.loads(self.state.read_text())
        wanted = [rate_bits_per_s, delay_s]
        if raw.get("link") == wanted and not raw.get("shaped_apart"):
            return False
        # every host marked apart until all are shaped: a change cut short (a tc that failed at host 4 of 8) had
        # left hosts 1-3 at the new rate under the old one's record, taken for whole by the next run's same value
        raw["shaped_apart"] = list(range(1, info.count + 1))
        self.state.write_text(json.dumps(raw))
        for index in range(1, info.count + 1):
            _shape(index, rate_bits_per_s, delay_s)
        raw["link"] = wanted
        raw.pop("shaped_apart", None)
        raw.pop("host_bits_per_s", None)  # every host at the lab's rate
        self.state.write_text(json.dumps(raw))
        return True

    def link_shaped(self) -> bool:
        """Whether the hosts' links are shaped now (a rate or a delay set and not lifted since)."""
        if self.info() is None:
            return False
        link = json.loads(self.state.read_text()).get("link")
        return isinstance(link, list) and any(value is not None for value in link)

    def shape_host(self, index: int, rate_bits_per_s: int | None, delay_s: float | None) -> None:
        """Shape one host's link (both ends) to ``rate`` and ``delay``, the others left as they are; None for both
        lifts its shaping."""
        info = self.info()
        if info is None:
            raise UserError("hosts lab: not up", hint="storbench lab hosts up")
        if not 1 <= index <= info.count:
            raise UserError(f"hosts lab: no client.{index} (its hosts are client.1 to client.{info.count})")
        raw = json.loads(self.state.read_text())  # which hosts are not at the lab's own shaping (for settle)
        raw["shaped_apart"] = sorted({*raw.get("shaped_apart", []), index})  # until done: half a change is settled
        self.state.write_text(json.dumps(raw))
        _shape(index, rate_bits_per_s, delay_s)
        apart = set(raw["shaped_apart"]) - {index}
        rates = {key: rate for key, rate in raw.get("host_bits_per_s", {}).items() if key != str(index)}
        if [rate_bits_per_s, delay_s] != raw.get("link", [None, None]):
            apart.add(index)
            rates[str(index)] = rate_bits_per_s  # its own rate (None: none), for telemetry (`link_rates`)
        raw["shaped_apart"] = sorted(apart)
        raw["host_bits_per_s"] = rates
        self.state.write_text(json.dumps(raw))

    def unsettled(self) -> tuple[list[int], list[int]]:
        """The hosts whose link is down, and those shaped apart from the others (a fault's restore that failed):
        what `settle` puts back."""
        if self.info() is None:
            return [], []
        shaped = json.loads(self.state.read_text()).get("shaped_apart", [])
        return hosts_down(run(["ip", "-o", "link", "show"], timeout_s=30)), shaped

    def settle(self) -> bool:
        """Every host's link up and shaped as the lab's links are; False when they already were."""
        down, shaped = self.unsettled()
        for index in down:
            self.set_host_link(index, up=True)
        if shaped:  # every host shaped as the lab's links again (which forgets who was apart)
            self.set_link(*json.loads(self.state.read_text()).get("link", [None, None]))
        return bool(down or shaped)

    def set_host_link(self, index: int, *, up: bool) -> None:
        """Take one host's link down (its end on the bridge: every packet to and from it goes nowhere) or up."""
        info = self.info()
        if info is None:
            raise UserError("hosts lab: not up", hint="storbench lab hosts up")
        if not 1 <= index <= info.count:
            raise UserError(f"hosts lab: no client.{index} (its hosts are client.1 to client.{info.count})")
        run(["ip", "link", "set", lab_host(index).host_veth, "up" if up else "down"], timeout_s=30)

    def link_rates(self) -> dict[str, int]:
        """The host-side interface of each host and the rate it is shaped to now, its own where a fault shaped it
        apart (for link utilisation: a veth has no speed of its own); hosts not shaped are left out."""
        raw = self.dir.read_state()  # once: it says the hosts and their rates
        if raw is None:
            return {}
        rates = {str(i): raw.get("link", [None])[0] for i in range(1, raw["count"] + 1)}
        rates.update(raw.get("host_bits_per_s", {}))  # a host shaped apart (a `slow` fault): its own rate
        return {lab_host(int(i)).host_veth: int(rate) for i, rate in rates.items() if rate is not None}

    def end_jobs(self) -> list[int]:
        """Kill the jobs of a client that was killed, left on the lab's servers (a fio server hands a job's
        processes to init when its client goes, and they run on to their end, beside the next repetition's): in
        each namespace, the processes of its server's program but the server itself, not storbench's own children
        (a `tc` a fault runs there). A namespace whose server is not recorded is left alone (nothing there is known
        to be a job). Only between repetitions: a job running now is one of them. The pids killed."""
        if self.info() is None:
            return []
        servers = {daemon.pid for daemon in self.dir.live()}
        left = []
        for pids in pids_in_namespaces(_namespaces()).values():
            seen = {pid: found for pid in pids if (found := program_and_parent(pid)) is not None}
            programs = {program for pid, (program, _) in seen.items() if pid in servers}
            left += [pid for pid, (program, parent) in seen.items()
                     if pid not in servers and program in programs and parent != os.getpid()]
        kill_all(left)
        return left

    def shaping(self, index: int) -> str:
        """What `tc` says is on host ``index``'s host-side link (to read the shaping back)."""
        return run(["tc", "qdisc", "show", "dev", lab_host(index).host_veth], timeout_s=30)

    def _wait(self, hosts: list[LabHost]) -> None:
        deadline = time.time() + 30 + 0.2 * len(hosts)
        waiting = list(hosts)
        while waiting and time.time() < deadline:
            waiting = [h for h in waiting if not port_open(h.address, FIO_SERVER_PORT)]
            if waiting:
                time.sleep(0.2)
        if waiting:
            log = (self.root / "log" / f"{waiting[0].hostname}.log").read_text(errors="replace")[-300:]
            raise UserError(f"hosts lab: {len(waiting)} fio servers did not answer (first: {waiting[0].server})",
                            hint=" ".join(log.split()) or f"see {self.root / 'log'}")

    @frees_lab
    @frees_names("hosts")
    def down(self) -> None:
        """Kill every server, delete the namespaces (their veths go with them), the bridge, the firewall tables and
        the directory."""
        namespaces: list[str] = []

        def servers() -> None:
            kill_all([int(p) for ns in namespaces for p in run(["ip", "netns", "pids", ns], timeout_s=30).split()])

        def delete_namespaces() -> None:
            if namespaces:  # -force: on past one that will not go, to the others
                run(["ip", "-force", "-batch", "-"], timeout_s=300,
                    input_text="".join(f"netns delete {ns}\n" for ns in namespaces))

        def bridge() -> None:
            if BRIDGE in run(["ip", "-o", "link", "show"], timeout_s=30):
                run(["ip", "link", "delete", BRIDGE], timeout_s=30)

        def firewall() -> None:
            if tables := _firewall_tables():
                run(["nft", "-f", "-"], timeout_s=30, input_text=firewall_delete(tables))

        # the lab's servers by their addresses first: one whose namespace went (a teardown that raced) is in none
        every_step(lambda: self.dir.kill() if self.dir.exists() else None, lambda: namespaces.extend(_namespaces()),
                   lambda: kill_all(pids_serving(serves_lab_host)), servers, delete_namespaces, bridge,
                   _delete_lab_veths, firewall, self.dir.remove)


# ---- the client hosts as a lab kind (lab.registry) --------------------------------------------------------------

def _shape(index: int, rate_bits_per_s: int | None, delay_s: float | None) -> None:
    """Both ends of host ``index``'s link shaped with traffic control (None for both: its shaping lifted)."""
    for namespace, args in link_commands(lab_host(index), rate_bits_per_s, delay_s):
        command = ["tc", *(["-n", namespace] if namespace else []), *args]
        try:
            run(command, timeout_s=30)
        except UserError as exc:
            if args[1] == "del":  # nothing to delete is fine; a shaping that fails is not
                continue
            if "netem" in args and "unknown" in exc.message:
                raise UserError("hosts lab: link_delay needs the kernel's netem qdisc (sch_netem), which "
                                "this kernel lacks", hint="drop link_delay: link rates alone use tbf") from None
            raise
