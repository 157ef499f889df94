"""nfs-ganesha configuration for a one-machine NFS lab. Pure."""

from __future__ import annotations

from dataclasses import dataclass

# The lab's private network: a veth pair between this host and the server's own network namespace.
# Only this machine's own namespaces use these addresses.
HOST_ADDRESS = "10.213.7.1"
SERVER_ADDRESS = "10.213.7.2"
PREFIX_LENGTH = 30
NAMESPACE = "storbench-nfs"
HOST_VETH = "sbnfs0"
SERVER_VETH = "sbnfs1"
PSEUDO_PATH = "/export"


@dataclass(frozen=True)
class NfsLabSpec:
    nfs_versions: tuple[int, ...] = (3, 4)

    def parameters(self) -> tuple[tuple[str, str], ...]:
        return (("lab", "nfs"), ("nfs_server", "ganesha-vfs"))


def render_ganesha_conf(export_path: str, root: str, spec: NfsLabSpec) -> str:
    """One VFS export of ``export_path``; NFSv3 (which libnfs needs for writes) and v4 without a grace period."""
    protocols = ", ".join(str(v) for v in spec.nfs_versions)
    return f"""NFS_CORE_PARAM {{
    Protocols = {protocols};
    Bind_addr = {SERVER_ADDRESS};
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
    Access_Type = RW;
    Squash = No_Root_Squash;
    Protocols = {protocols};
    Transports = TCP;
    SecType = sys;
    FSAL {{
        Name = VFS;
    }}
}}
LOG {{
    Default_Log_Level = EVENT;
}}
"""


def nfs_url(path: str = PSEUDO_PATH) -> str:
    return f"nfs://{SERVER_ADDRESS}{path}"
