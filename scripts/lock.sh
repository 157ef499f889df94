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
# the labs' Python packages an installed storbench installs itself (`storbench setup --labs`), from labs.lock
.venv/bin/python - <<'PY'
from storbench.machine_setup import LOCKED_MODULES, locked_blocks
from pathlib import Path
blocks = locked_blocks(Path("requirements/labs.lock").read_text())
head = [line for line in Path("src/storbench/labs-modules.lock").read_text().splitlines() if line.startswith("#")]
Path("src/storbench/labs-modules.lock").write_text("\n".join([*head, *(blocks[name] for name in LOCKED_MODULES)]) + "\n")
print("lock: src/storbench/labs-modules.lock")
PY
