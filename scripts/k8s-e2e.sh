#!/usr/bin/env bash
# One command for the Kubernetes end-to-end test, as root: installs the packages, builds (once; cached) the
# Kubernetes binaries and the CSI driver with Kubernetes' CSI sidecars, then
#   - the k8s cases of tests/test_k8s.py: fio pods on ReadWriteOnce, ReadWriteMany and Block claims; a fio pod
#     deleted mid-run and made again; the six volume operations through the CSI sidecars on a two-node lab; a
#     node powered off: its pod back on the other node once the out-of-service taint detaches its volume, not
#     back on the default path, and unable to move at all on node-bound (local) storage, which storbench says; a
#     plan run with exactly the identity `storbench k8s rbac` prints, called as kubectl calls its plugin;
#   - the examples k8s-volume-ops and k8s-node-failure (the default path of a node failure lasts
#     to the end of a repetition: about 40 minutes in all) into out/, unless --tests-only;
#   - and checks that no lab namespace (a node's, or a pod's made since), bridge, loop device, mount or daemon is
#     left.
# About 30 min the first time without the examples (the builds), about 10 min afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
examples=1
if [ "${1:-}" = "--tests-only" ]; then
  examples=0
  shift
fi
./scripts/setup.sh --dev --k8s --labs
cni_before=$(ls /run/netns 2>/dev/null | grep '^cni-' | sort || true)  # another runtime's pods: not the lab's
kube_before=$(iptables-save 2>/dev/null | grep '^:KUBE-' | cut -d' ' -f1 | sort || true)  # the same
echo "k8s-e2e: Kubernetes binaries in $(./scripts/build-kubernetes.sh)"
echo "k8s-e2e: CSI driver and sidecars in $(./scripts/build-csi.sh)"
STORBENCH_K8S=1 .venv/bin/pytest -q -m k8s tests/test_k8s.py "$@"
if ((examples)); then
  for example in k8s-volume-ops k8s-node-failure; do
    echo "k8s-e2e: example $example"
    ./scripts/example.sh "$example" > "/tmp/k8s-e2e-$example.log" 2>&1 || {
      tail -30 "/tmp/k8s-e2e-$example.log"; echo "k8s-e2e: example $example failed" >&2; exit 1; }
    tail -15 "out/$example/run.log"
  done
fi
left=$( { ls /run/netns 2>/dev/null | grep '^sbk8s' || true; ip -o link show | grep -o 'sbk8s[^:@ ]*' || true;
          losetup --list --noheadings 2>/dev/null | grep /lab/k8s || true;
          grep ' /var/lib/storbench/lab/k8s' /proc/self/mounts || true;
          pgrep -af 'storbench/lab/k8s|kubernetes-v|storbench/csi' || true;
          comm -13 <(echo "$cni_before") <(ls /run/netns 2>/dev/null | grep '^cni-' | sort || true)
          comm -13 <(echo "$kube_before") <(iptables-save 2>/dev/null | grep '^:KUBE-' | cut -d' ' -f1 | sort || true)
        } )
if [ -n "$left" ]; then
  echo "k8s-e2e: left behind:" >&2
  echo "$left" >&2
  exit 1
fi
echo "k8s-e2e: passed; nothing left behind"
