#!/usr/bin/env bash
# Installs everything storbench needs on Debian 12, as root: system packages, a virtual
# environment in .venv, and storbench itself. Safe to run again.
#   --dev    adds the test tools: Chromium (the report test opens the report in it), and Prometheus with
#            node_exporter (the telemetry test starts its own pair on loopback ports; on a systemd host
#            Debian also enables their services)
#   --k8s    adds what the Kubernetes lab runs on: etcd, containerd, runc, CNI plugins, busybox (for the fio
#            image), gcc (for the pause image), and its registry (docker-registry, apache2-utils, skopeo);
#            the Kubernetes binaries themselves come from
#            scripts/build-kubernetes.sh, the CSI driver and sidecars from scripts/build-csi.sh (both need Go)
#   --labs   adds Ceph (mon, mgr, osd, mds, fuse, rbd), nfs-ganesha and nftables (the hosts lab's firewall) for
#            `storbench lab ceph|nfs|hosts`, libfuse3 and pyfuse3 (built here) for the pacer of `lab volume`, and
#            builds a fio with the nfs engine (scripts/build-fio-nfs.sh, cached after the first time); skopeo,
#            busybox, docker-registry and apache2-utils for `storbench image build|push` and a private registry (Debian
#            starts docker-registry's own service on a systemd host: setup stops and disables it)
set -euo pipefail
cd "$(dirname "$0")/.."

dev=0
labs=0
k8s=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    --labs) labs=1 ;;
    --k8s) k8s=1 ;;
    *) echo "setup: unknown option $arg (use --dev, --labs and/or --k8s)" >&2; exit 2 ;;
  esac
done

packages=(fio python3 python3-venv ca-certificates)
((dev)) && packages+=(chromium fonts-dejavu-core prometheus prometheus-node-exporter)
((k8s)) && packages+=(etcd-server containerd runc containernetworking-plugins busybox-static gcc libc6-dev \
  iptables openssl util-linux iproute2 skopeo docker-registry apache2-utils)
((labs)) && packages+=(ceph-mon ceph-mgr ceph-osd ceph-mds ceph-fuse ceph-common radosgw nfs-ganesha nfs-ganesha-vfs \
  rpcbind iproute2 nftables fuse3 libfuse3-dev pkg-config gcc python3-dev skopeo docker-registry apache2-utils \
  busybox-static)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ " ${missing[*]} " == *" docker-registry "* ]] && command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    systemctl disable --now docker-registry >/dev/null 2>&1 || true  # storbench runs its own, on private addresses
  fi
fi

if ((labs)); then
  echo "setup: fio with the nfs and http engines at $(./scripts/build-fio-nfs.sh)"
fi

python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
extras=()
((dev)) && extras+=(dev)
((labs)) && extras+=(labs)  # pyfuse3 for the volume lab's pacer, built against libfuse3
extra=""
((${#extras[@]})) && extra="[$(IFS=,; echo "${extras[*]}")]"
.venv/bin/pip install -q --disable-pip-version-check -e ".${extra}"
echo "setup: $(.venv/bin/storbench --version); ready in $(pwd)/.venv"
