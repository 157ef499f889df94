#!/usr/bin/env bash
# Runs one of examples/NAME.yaml end to end: installs everything (with the labs), runs the plan (bringing
# up and tearing down its lab), prints the comparison the example is about, and writes its report.
#   ./scripts/example.sh ceph-replica      -> out/ceph-replica/{results.db,compare.md,report.html,images/}
#   ./scripts/example.sh ceph-replica --render   the show, comparison and report written again from the stored
#                                                results (after a change to what storbench says of them), no run
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:?usage: scripts/example.sh NAME [--render] (one of: $(cd examples && ls *.yaml | sed 's/.yaml//' | tr '\n' ' '))}
render_only=${2:-}
plan=examples/$name.yaml
[ -f "$plan" ] || { echo "example: no $plan" >&2; exit 2; }
out=out/$name
if [ "$render_only" = "--render" ]; then
  [ -f "$out/results.db" ] || { echo "example: no $out/results.db to render: run ./scripts/example.sh $name" >&2; exit 2; }
elif [ -n "$render_only" ]; then
  echo "example: unknown option $render_only (--render writes the outputs again from $out/results.db)" >&2; exit 2
elif grep -q '^  k8s:' "$plan"; then  # a Kubernetes lab: its packages, and the binaries built once (cached)
  ./scripts/setup.sh --labs --k8s
  echo "example: Kubernetes binaries in $(./scripts/build-kubernetes.sh)"
  if grep -q 'csi: true' "$plan"; then
    echo "example: CSI driver and sidecars in $(./scripts/build-csi.sh)"
  fi
else
  ./scripts/setup.sh --labs
fi
if [ "$render_only" != "--render" ]; then
  mkdir -p "$out"
  .venv/bin/storbench run "$plan" --db "$out/results.db" | tee "$out/run.log"
fi
COLUMNS=${COLUMNS:-200} .venv/bin/storbench show --db "$out/results.db" > "$out/show.txt"
# what each I/O cost in CPU, by component (a plan with telemetry; none without)
COLUMNS=${COLUMNS:-200} .venv/bin/storbench show --db "$out/results.db" --cost > "$out/cost.txt" 2>/dev/null \
  || rm -f "$out/cost.txt"
# the example's comparison is written in its header: "# compare: --baseline ... --candidate ..."
compare=$(sed -n 's/^# compare: //p' "$plan" | head -n 1)
report_args=()
if [ -n "$compare" ]; then
  read -r -a compare_args <<< "$compare"
  .venv/bin/storbench compare --db "$out/results.db" "${compare_args[@]}"
  .venv/bin/storbench compare --db "$out/results.db" "${compare_args[@]}" --format markdown -o "$out/compare.md"
  report_args=("${compare_args[@]}")
fi
.venv/bin/storbench report --db "$out/results.db" --run all -o "$out/report.html" --images "$out/images" \
  --title "storbench example: $name" "${report_args[@]}"
