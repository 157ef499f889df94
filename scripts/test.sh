#!/usr/bin/env bash
# Installs everything (with the test tools and the Ceph lab), then runs the linter, the type checker and
# the tests, the real Ceph end-to-end case included. Extra arguments go to pytest (e.g. -m "not ceph").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev --labs
.venv/bin/ruff check src tests bench
.venv/bin/mypy
exec .venv/bin/pytest -q "$@"
