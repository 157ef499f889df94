"""Real one-machine test beds: a Ceph cluster and an NFS server, from Debian's packages."""

# the lab kinds in the order `storbench lab` lists them (the order they were added): named here, where importing
# them is not needed (the top-level help, a command other than `lab`); `lab.registry` has the kinds themselves
COMMAND_ORDER: tuple[str, ...] = ("ceph", "nfs", "volume", "hosts", "k8s")
