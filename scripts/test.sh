#!/usr/bin/env bash
# Installs everything (with the test tools), then runs the linter, the type checker and the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev
.venv/bin/ruff check src tests bench
.venv/bin/mypy
exec .venv/bin/pytest -q "$@"
