#!/usr/bin/env bash
# Installs everything storbench needs on Debian 12, as root: system packages, a virtual
# environment in .venv, and storbench itself. Safe to run again. `--dev` adds the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(fio python3 python3-venv ca-certificates)
# the tests also open the HTML report in headless Chromium
[ "${1:-}" = "--dev" ] && packages+=(chromium fonts-dejavu-core)
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
extra=""
[ "${1:-}" = "--dev" ] && extra="[dev]"
.venv/bin/pip install -q --disable-pip-version-check -e ".${extra}"
echo "setup: $(.venv/bin/storbench --version), $(fio --version) ready in $(pwd)/.venv"
