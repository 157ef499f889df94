#!/usr/bin/env bash
# Regenerates requirements/*.lock: every Python dependency of storbench, pinned with the hashes of its files, for
# each set of extras scripts/setup.sh installs (none, dev, labs, dev and labs). Run it after changing
# pyproject.toml's dependencies, and commit the locks; setup.sh installs from them with --require-hashes.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
python3 -m venv "$tools"
"$tools/bin/pip" install -q pip-tools
mkdir -p requirements
for set in base dev labs dev-labs; do
  extras=()
  case "$set" in
    dev) extras=(--extra dev) ;;
    labs) extras=(--extra labs) ;;
    dev-labs) extras=(--extra dev --extra labs) ;;
  esac
  PIP_FIND_LINKS= "$tools/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-emit-find-links \
    ${extras[@]+"${extras[@]}"} -o "requirements/$set.lock" pyproject.toml
  echo "lock: requirements/$set.lock"
done
