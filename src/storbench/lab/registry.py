"""Lab kinds (shell): every one-machine test bed storbench can bring up, each behind one interface
(`lab.base.LabKind`). The CLI's `storbench lab` commands and the run's lab sessions ask this registry and never
branch on a kind themselves.

``KINDS`` is in bring-up order: the client hosts and Kubernetes come up for the whole run (in the order the run
loop asks for them); for each lab configuration the volume, then the NFS server (its URL is offered to the
targets on a Ceph cluster too), then the Ceph clusters, torn down in reverse. Live settings are applied before a
case's turn in this order too (the hosts' links, then the OSD options)."""

from __future__ import annotations

from storbench.lab import ceph_kind, hosts, k8s, nfs, volume
from storbench.lab.base import LabKind

KINDS: dict[str, LabKind] = {kind.name: kind for kind in (hosts.KIND, k8s.KIND, volume.KIND, nfs.KIND, ceph_kind.KIND)}

# the order `storbench lab` lists the kinds in (the order they were added)
COMMAND_ORDER: tuple[str, ...] = ("ceph", "nfs", "volume", "hosts", "k8s")
