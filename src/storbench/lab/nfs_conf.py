"""nfs-ganesha configuration for a one-machine NFS lab. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from storbench.lab.hosts_conf import PREFIX_LENGTH as HOSTS_PREFIX_LENGTH
from storbench.lab.hosts_conf import SUBNET as HOSTS_SUBNET

# The lab's private network: a veth pair between this host and the server's own network namespace.
# Only this machine's own namespaces use these addresses.
HOST_ADDRESS = "10.213.7.1"
SERVER_ADDRESS = "10.213.7.2"
PREFIX_LENGTH = 30
NAMESPACE = "storbench-nfs"
HOST_VETH = "sbnfs0"
SERVER_VETH = "sbnfs1"
PSEUDO_PATH = "/export"
# With a hosts lab: a second veth pair puts the server on the hosts lab's bridge too, at an address no lab host
# has (theirs start at .10), so the fio servers in their namespaces reach it directly (no routing, no forwarding).
BRIDGED_ADDRESS = "10.214.0.2"
BRIDGE_HOST_VETH = "sbnfs2"
BRIDGE_SERVER_VETH = "sbnfs3"
# Root over NFS is squashed to this uid/gid (Debian's nobody/nogroup); the export directory belongs to them,
# so fio's libnfs engine (AUTH_SYS as uid 0, squashed) can still create and write its files.
ANONYMOUS_UID = 65534
ANONYMOUS_GID = 65534


@dataclass(frozen=True)
class NfsLabSpec:
    nfs_versions: tuple[int, ...] = (3, 4)
    bridge: str | None = None  # the hosts lab's bridge to join (its fio servers are the clients), or None


def bridged_address() -> str:
    return f"{BRIDGED_ADDRESS}/{HOSTS_PREFIX_LENGTH}"


def render_ganesha_conf(export_path: str, root: str, spec: NfsLabSpec) -> str:
    """One VFS export of ``export_path``; NFSv3 (which libnfs needs for writes) and v4 without a grace period.

    Only the host side of the lab's veth pair may use it (the CLIENT list; the export itself grants nothing), and
    with ``spec.bridge`` the hosts lab's subnet too (its fio servers, and this host's end of the bridge),
    only from a privileged source port (binding one needs root, so another local user cannot speak AUTH_SYS to
    it from this machine), and root is squashed to ANONYMOUS_UID. nfs-ganesha has no server-side nosuid: the
    lab never mounts the export in the kernel (fio's libnfs engine works in user space), root cannot create
    root-owned files through it, and its directory lies inside the lab's 0700 directory, out of other users'
    reach.
    """
    protocols = ", ".join(str(v) for v in spec.nfs_versions)
    bind = "0.0.0.0" if spec.bridge else SERVER_ADDRESS  # in its own namespace: the two veths and lo only
    clients = f"{HOST_ADDRESS}, {HOSTS_SUBNET}" if spec.bridge else HOST_ADDRESS
    return f"""NFS_CORE_PARAM {{
    Protocols = {protocols};
    Bind_addr = {bind};
    Enable_RQUOTA = false;
    Enable_NLM = false;
    mount_path_pseudo = true;
}}
NFSV4 {{
    Graceless = true;
    RecoveryBackend = fs;
}}
NFS_KRB5 {{
    Active_krb5 = false;
}}
EXPORT {{
    Export_Id = 1;
    Path = {export_path};
    Pseudo = {PSEUDO_PATH};
    Access_Type = None;
    Squash = Root_Squash;
    Anonymous_Uid = {ANONYMOUS_UID};
    Anonymous_Gid = {ANONYMOUS_GID};
    PrivilegedPort = true;
    Protocols = {protocols};
    Transports = TCP;
    SecType = sys;
    CLIENT {{
        Clients = {clients};
        Access_Type = RW;
    }}
    FSAL {{
        Name = VFS;
    }}
}}
LOG {{
    Default_Log_Level = EVENT;
}}
"""


def nfs_url(path: str = PSEUDO_PATH, *, bridged: bool = False) -> str:
    """The export's URL from this host, or (``bridged``) from the hosts lab's fio servers."""
    return f"nfs://{BRIDGED_ADDRESS if bridged else SERVER_ADDRESS}{path}"
