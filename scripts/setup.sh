#!/usr/bin/env bash
# Installs everything storbench needs on Debian 12, as root: Python's venv, a virtual environment in .venv with
# storbench in it, then `storbench setup` for the system packages (from this machine's own package sources). Safe
# to run again.
#   --dev    adds the test tools: Chromium (the report test opens the report in it), Prometheus with
#            node_exporter (the telemetry test starts its own pair on loopback ports; on a systemd host Debian
#            also enables their services), PostgreSQL (the store tests start their own server on a socket in a
#            temporary directory), perf (the cycles tests), and pytest, ruff, mypy, Hypothesis, build, psycopg
#   --k8s    adds what the Kubernetes lab runs on: etcd, containerd, runc, CNI plugins, busybox (the fio image),
#            gcc (the pause image), docker-registry, apache2-utils and skopeo (its registry); the Kubernetes
#            binaries come from scripts/build-kubernetes.sh, the CSI driver and sidecars from scripts/build-csi.sh
#   --labs   adds Ceph, nfs-ganesha, nftables, libfuse3 and pyfuse3 (the volume lab's pacer), skopeo, busybox,
#            docker-registry and apache2-utils (`storbench image`, a private registry; Debian's own registry
#            service is stopped and disabled), and builds a fio with the nfs and http engines from Debian's source
#            package (cached after the first time)
# `storbench setup --help` says the same; an installed storbench (pipx) runs it without this clone.
set -euo pipefail
cd "$(dirname "$0")/.."

flags=()
extras=()
for arg in "$@"; do
  case "$arg" in
    --dev) flags+=(--dev); extras=(dev ${extras[@]+"${extras[@]}"}) ;;  # dev first: requirements/dev-labs.lock
    --labs) flags+=(--labs); extras+=(labs) ;;  # pyfuse3, built against libfuse3
    --k8s) flags+=(--k8s) ;;
    *) echo "setup: unknown option $arg (use --dev, --labs and/or --k8s)" >&2; exit 2 ;;
  esac
done

packages=(python3 python3-venv ca-certificates)  # what storbench itself runs on; `storbench setup` does the rest
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3)
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# Python's dependencies from the lock for these extras (pinned, every file's hash checked: scripts/lock.sh makes
# them), storbench itself without touching them
lock=base
((${#extras[@]})) && lock=$(IFS=-; echo "${extras[*]}")
# pip writes no bytecode (it compiles file by file on one core): compileall does, on every core, once all is in
.venv/bin/pip install -q --no-compile --disable-pip-version-check --require-hashes -r "requirements/base.lock"
.venv/bin/pip install -q --no-compile --disable-pip-version-check --no-deps -e .
.venv/bin/storbench setup --system-only ${flags[@]+"${flags[@]}"}  # system packages: pyfuse3 needs libfuse3
.venv/bin/pip install -q --no-compile --disable-pip-version-check --require-hashes -r "requirements/$lock.lock"
# the bytecode of the dependencies and of the checkout, written now (also where PYTHONDONTWRITEBYTECODE is set,
# which would otherwise have every command compile all it imports, 0.4 s for storbench alone)
.venv/bin/python -m compileall -q -j 0 src "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
  > /dev/null || true  # a file of a dependency that does not compile (a template, a test) is its own business
echo "setup: $(.venv/bin/storbench --version); ready in $(pwd)/.venv"
