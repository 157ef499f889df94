#!/usr/bin/env bash
# One command for the Kubernetes end-to-end test: installs the packages, builds (once; cached) the Kubernetes
# binaries, then brings up a single-node cluster and runs 3 fio pods on ReadWriteOnce, ReadWriteMany and
# Block-mode claims through storbench, then deletes a fio pod mid-run (issue 32's Kubernetes fault: the pod made
# again on its claim, its client's gap measured), checking that nothing is left behind. Needs root. About 12 min
# the first time (the Kubernetes build), about 4 min afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev --k8s
echo "k8s-e2e: Kubernetes binaries in $(./scripts/build-kubernetes.sh)"
STORBENCH_K8S=1 exec .venv/bin/pytest -q -m k8s tests/test_k8s.py "$@"
