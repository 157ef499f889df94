#!/usr/bin/env bash
# storbench installed as users install tools: the wheel built from this clone, installed with pipx into a
# directory outside the clone (its own PIPX_HOME and bin; its dependencies from this machine's configured package
# index), then the quickstart run there from the example plan that comes with the wheel: plan, run, show, report.
#   ./scripts/pipx-quickstart.sh            (as root on Debian 12; about 6 min, most of it the quickstart's runs)
set -euo pipefail
cd "$(dirname "$0")/.."
clone=$(pwd)
./scripts/setup.sh --dev > /dev/null  # pipx and the build tools
work=$(mktemp -d /tmp/storbench-pipx.XXXXXX)
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m build --wheel --no-isolation --outdir "$work/dist" . > /dev/null
export PIPX_HOME="$work/pipx" PIPX_BIN_DIR="$work/bin"
pipx install "$(ls "$work"/dist/storbench-*.whl)"
mkdir "$work/elsewhere" && cd "$work/elsewhere"
storbench=$work/bin/storbench
"$storbench" --version
case "$(python3 -c 'import storbench' 2>&1 || true)" in "") echo "pipx-quickstart: the system Python sees storbench" >&2; exit 1;; esac
"$storbench" example quickstart -o quickstart.yaml
"$storbench" plan quickstart.yaml | tail -3
"$storbench" run quickstart.yaml --db results.db | tail -5
"$storbench" show --db results.db --format json | python3 -c 'import json, sys; print(len(json.load(sys.stdin)), "points")'
"$storbench" report --db results.db -o report.html
test -s report.html
echo "pipx-quickstart: passed in $work/elsewhere (pipx home $PIPX_HOME), outside $clone"
