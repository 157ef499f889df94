"""Network-namespace "hosts" on this machine, each running `fio --server`: names, addresses, commands. Pure.

A bridge on the host joins one veth pair per namespace; every namespace gets a private address and its own
hostname (UTS namespace), so fio's clients tell the servers apart as if they were machines.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

BRIDGE = "sbhosts0"
BRIDGE_ADDRESS = "10.214.0.1"
PREFIX_LENGTH = 16
NAMESPACE_PREFIX = "storbench-host-"
FIO_SERVER_PORT = 8765
MAX_HOSTS = 250 * 200
SUBNET = "10.214.0.0/16"
FIREWALL_TABLE = "storbench_hosts"  # in the inet and bridge families (nftables)


@dataclass(frozen=True)
class LabHost:
    index: int  # 1-based
    namespace: str
    hostname: str
    address: str
    host_veth: str
    inner_veth: str

    @property
    def server(self) -> str:
        return f"{self.address},{FIO_SERVER_PORT}"


def is_lab_server(server: str) -> bool:
    """Whether ``server`` ("address,port") is a host of the hosts lab (so it sees this machine's files)."""
    try:
        return ipaddress.ip_address(server.split(",", 1)[0]) in ipaddress.ip_network(SUBNET)
    except ValueError:
        return False


def serves_lab_host(server: str) -> bool:
    """Whether ``server`` ("address,port") is exactly one of the hosts lab's fio servers (`lab_host`, its port)."""
    address, _, port = server.partition(",")
    match = re.fullmatch(r"10\.214\.([0-9]{1,3})\.([0-9]{1,3})", address)
    if match is None or port != str(FIO_SERVER_PORT):
        return False
    third, fourth = int(match.group(1)), int(match.group(2))
    return 10 <= fourth <= 209 and 1 <= third * 200 + fourth - 9 <= MAX_HOSTS and address == f"10.214.{third}.{fourth}"


def lab_host(index: int) -> LabHost:
    """Host ``index`` (1-based): 10.214.X.Y with Y in 10..209, so no address is the bridge's."""
    if not 1 <= index <= MAX_HOSTS:
        raise ValueError(f"host index {index} out of range")
    third, fourth = divmod(index - 1, 200)
    return LabHost(index=index, namespace=f"{NAMESPACE_PREFIX}{index}", hostname=f"sbhost-{index}",
                   address=f"10.214.{third}.{fourth + 10}", host_veth=f"sbh{index}a", inner_veth=f"sbh{index}b")


def link_flags(link_listing: str) -> dict[str, set[str]]:
    """Each link's flags in ``ip -o link show`` output (``2: sbh1a@if3: <BROADCAST,MULTICAST,UP,...> ...``), by its
    name without the peer (``sbh1a``); a link set down has no ``UP``. The one reading of it for the labs' links."""
    found = {}
    for line in link_listing.splitlines():
        fields = line.split(":", 2)
        if len(fields) < 3:
            continue
        flags = re.match(r"\s*<([^>]*)>", fields[2])
        found[fields[1].strip().split("@", 1)[0]] = set(flags.group(1).split(",")) if flags else set()
    return found


def is_down(flags: set[str]) -> bool:
    """A link set down: flags read and no ``UP`` among them (flags not read say nothing)."""
    return bool(flags) and "UP" not in flags


def _host_links(link_listing: str) -> list[tuple[int, str, set[str]]]:
    """The host ends of lab hosts' veth pairs (``sbh<N>a``) in ``ip -o link show`` output: (N, name, flags)."""
    return [(int(index.group(1)), name, flags) for name, flags in link_flags(link_listing).items()
            if (index := re.fullmatch(r"sbh([0-9]+)a", name))]


def lab_veths(link_listing: str) -> list[str]:
    """The host ends of lab hosts' veth pairs in ``ip -o link show`` output (``sbh<N>a``). Deleting a namespace
    removes its pair only once nothing holds the namespace: a connection it still has open (an NFS client's, when
    the server went first) keeps the pair, and a name in use, until the kernel gives the connection up."""
    return [name for _, name, _ in _host_links(link_listing)]


def hosts_down(link_listing: str) -> list[int]:
    """The lab hosts whose host end of the link is down (``ip -o link show`` output; ``<...,UP,...>`` missing from
    its flags): the hosts a `cut` fault took off the bridge and nothing put back."""
    return [index for index, _, flags in _host_links(link_listing) if is_down(flags)]


ROUTE_TYPES = ("unicast", "local", "broadcast", "multicast", "throw", "unreachable", "prohibit", "blackhole", "nat",
               "anycast")
NON_FORWARDING = ("blackhole", "unreachable", "prohibit", "throw")
MIN_CLASH_PREFIX = 8  # a route wider than this (a VPN's 0.0.0.0/1) loses to the lab's /16 and is left alone


def subnet_clashes(route_listing: str) -> list[str]:
    """The routes of this machine (``ip -o -4 route show table all``) that meet the lab's network, other than the
    lab's own bridge's and the default route: a LAN or VPN on 10.214.x.x (or a wider 10/8) whose hosts the lab's
    bridge would take over while it is up, and to which the fio servers' job files (an S3 key in them) could go.
    Not clashes: a route wider than /8 (a VPN's ``0.0.0.0/1`` halves of the default route: the lab's /16 is more
    specific and wins) and a route that forwards nothing (blackhole, unreachable, prohibit, throw: a Kubernetes
    network's or an RFC 1918 guard's) unless it is /16 or narrower, where it would shadow the lab's own."""
    lab = ipaddress.ip_network(SUBNET)
    clashes = []
    for line in route_listing.splitlines():
        fields = line.split()
        kind = "unicast"
        if fields and fields[0] in ROUTE_TYPES:
            kind, fields = fields[0], fields[1:]
        device = fields[fields.index("dev") + 1:][:1] if "dev" in fields else []
        if not fields or fields[0] == "default" or device == [BRIDGE]:
            continue
        try:
            network = ipaddress.ip_network(fields[0], strict=False)
        except ValueError:
            continue
        if network.version != 4 or not network.overlaps(lab) or network.prefixlen < MIN_CLASH_PREFIX:
            continue
        if kind in NON_FORWARDING and network.prefixlen < lab.prefixlen:
            continue
        clashes.append(" ".join(line.split()[:5]))
    return clashes


def network_batch(hosts: list[LabHost]) -> str:
    """`ip -batch` commands that build the bridge and every namespace's link (one ip process for all)."""
    lines = [f"link add {BRIDGE} type bridge", f"addr add {BRIDGE_ADDRESS}/{PREFIX_LENGTH} dev {BRIDGE}",
             f"link set {BRIDGE} up"]
    for host in hosts:
        lines += [
            f"netns add {host.namespace}",
            f"link add {host.host_veth} type veth peer name {host.inner_veth}",
            f"link set {host.inner_veth} netns {host.namespace}",
            f"link set {host.host_veth} master {BRIDGE}",
            f"link set {host.host_veth} up",
        ]
    return "\n".join(lines) + "\n"


def inner_batch(host: LabHost) -> str:
    """`ip -n NAMESPACE -batch` commands configuring the namespace's side."""
    return (f"addr add {host.address}/{PREFIX_LENGTH} dev {host.inner_veth}\n"
            f"link set {host.inner_veth} up\nlink set lo up\n")


def server_command(host: LabHost, fio_binary: str, ceph_conf: str) -> list[str]:
    """fio --server inside the namespace, with the namespace's own hostname. ``ceph_conf``: where librados (fio's
    rbd engine) looks for the cluster's configuration; a Ceph lab run with these hosts writes it there. Only the
    network namespace is entered (nsenter, not `ip netns exec`, which gives the process a mount namespace of its
    own): the servers see what is mounted later, such as the Ceph lab's CephFS, brought up after them."""
    return ["nsenter", f"--net=/run/netns/{host.namespace}", "env", f"CEPH_CONF={ceph_conf}", "unshare", "--uts",
            "sh", "-c",
            'hostname "$1" && exec "$2" --server="$3"', "sh", host.hostname, fio_binary,
            f"{host.address},{FIO_SERVER_PORT}"]


def firewall_rules(client_uid: int) -> str:
    """nftables rules (`nft -f`) that leave the fio servers to this lab's own client: processes of
    ``client_uid`` (root: storbench itself) in this machine's root network namespace.

    A fio server runs whatever a client sends, `exec_prerun` included, as root, without authentication, so
    whoever can connect is root. Binding alone cannot help: the servers listen on the bridge, and every local
    process reaches the bridge from the root namespace with the same source address (the bridge's), so a rule on
    addresses cannot tell storbench from another user. The socket's owner can: the output hook matches locally
    made connections by uid. Connections routed in from elsewhere (containers, pods, other namespaces: the
    forward hook) and from one namespace host to another across the bridge (the bridge family's forward hook)
    are dropped. One table per family, deleted whole by `down`.
    """
    rule = f"ip daddr {SUBNET} tcp dport {FIO_SERVER_PORT}"
    return f"""table inet {FIREWALL_TABLE} {{
    chain output {{
        type filter hook output priority 0; policy accept;
        {rule} meta skuid != {client_uid} reject with tcp reset
    }}
    chain forward {{
        type filter hook forward priority 0; policy accept;
        {rule} drop
    }}
}}
table bridge {FIREWALL_TABLE} {{
    chain forward {{
        type filter hook forward priority 0; policy accept;
        {rule} drop
    }}
}}
"""


FIREWALL_FAMILIES = ("inet", "bridge")


def firewall_delete(families: list[str]) -> str:
    """`nft -f` text removing this lab's tables in ``families`` (those `nft list tables` showed)."""
    return "".join(f"delete table {family} {FIREWALL_TABLE}\n" for family in families)


def link_commands(host: LabHost, rate_bits_per_s: int | None, delay_s: float | None
                  ) -> list[tuple[str | None, list[str]]]:
    """(namespace or None for the host's, tc arguments) that shape both ends of ``host``'s veth pair, the host
    end (traffic to the client: reads) and the namespace end (traffic from it: writes): a token bucket (tbf) at
    ``rate``, or, with a ``delay``, netem with both; None for both removes the shaping. Pure."""
    ends = ((None, host.host_veth), (host.namespace, host.inner_veth))
    if rate_bits_per_s is None and delay_s is None:
        return [(namespace, ["qdisc", "del", "dev", device, "root"]) for namespace, device in ends]
    if delay_s is None:
        assert rate_bits_per_s is not None
        # 10 ms of traffic, and at least 96 KiB: more than the largest packet the bridge hands it (64 KiB with
        # segmentation offload), which a smaller bucket drops at low rates
        burst_bytes = max(rate_bits_per_s // 8 // 100, 96 * 1024)
        shape = ["tbf", "rate", f"{rate_bits_per_s}bit", "burst", str(burst_bytes), "latency", "50ms"]
    else:
        shape = ["netem", "limit", "100000", "delay", f"{round(delay_s * 1e6)}us"]
        if rate_bits_per_s is not None:
            shape += ["rate", f"{rate_bits_per_s}bit"]
    return [(namespace, ["qdisc", "replace", "dev", device, "root", *shape]) for namespace, device in ends]
