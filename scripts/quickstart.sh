#!/usr/bin/env bash
# Installs everything, runs the quickstart plan on ./storbench-data with results in results.db,
# prints the results table, and writes the HTML report to report.html.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
status=0
.venv/bin/storbench run examples/quickstart.yaml --db results.db || status=$?
.venv/bin/storbench report --db results.db -o report.html
exit "$status"
