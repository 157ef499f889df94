#!/usr/bin/env bash
# Installs everything, then runs the quickstart plan on ./storbench-data with results in results.db
# and prints the results table.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/storbench run examples/quickstart.yaml --db results.db
