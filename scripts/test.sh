#!/usr/bin/env bash
# Installs everything (with the test tools and the Ceph and NFS labs), then runs the linter, the type checker
# and the tests, the real Ceph and NFS end-to-end cases included. Extra arguments go to pytest
# (e.g. -m "not ceph and not nfs").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev --labs
.venv/bin/ruff check src tests bench
.venv/bin/mypy
exec .venv/bin/pytest -q --durations=15 "$@"
