"""Real one-machine test beds: a Ceph cluster and an NFS server, from Debian's packages."""
