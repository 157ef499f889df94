#!/usr/bin/env bash
# Installs everything (with the test tools and the Ceph and NFS labs), then runs the linter, the type checker
# and the tests, the real Ceph and NFS end-to-end cases included. Extra arguments go to pytest, which then runs
# what they choose one test at a time (e.g. -m "not ceph and not nfs", or a test file).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev --labs
.venv/bin/ruff check src tests bench
.venv/bin/mypy
if (($#)); then  # what the arguments choose, one test at a time
  exec .venv/bin/pytest -q --durations=15 "$@"
fi
# The tests that need the machine to themselves -- real fio, the labs, whole-machine measurements -- one at a time;
# the rest (pure code, parsers, the store, the CLI on stored data) first, on every core (pytest-xdist)
alone="fio or ceph or nfs or k8s or serial"
export STORBENCH_SET_UP=1  # a test skipped for want of what the set-up above installs fails instead (tests/conftest.py)
status=0
.venv/bin/pytest -q -n auto -m "not ($alone)" || status=$?
.venv/bin/pytest -q -rs --durations=15 -m "$alone" || status=$?  # run also after a failure above: all is reported
exit "$status"
