#!/usr/bin/env bash
# The long Ceph scenarios, as root: each has a short case in the default suite (scripts/test.sh, CI) that covers
# the same code on a smaller run; here the whole scenario runs (STORBENCH_LONG=1 lifts their skip):
#   - an OSD killed mid-run and started again: the stall, acknowledged writes read back, the cluster healed
#     before the next repetition (short cases: an OSD killed mid-run recorded with the cluster's health, and a
#     frozen host's stall and thaw);
#   - a fresh cluster per value and round, A B B A (short case: osds_per_device, a fresh cluster per repetition);
#   - 4k reads through ceph-fuse over iodepth, limited in the client stack, after the metadata operations on the
#     lab's CephFS (the short case: those operations alone);
# then checks that no lab daemon is left. About 3 minutes. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --dev --labs
STORBENCH_LONG=1 .venv/bin/pytest -q tests/test_ceph_lab.py::test_a_fresh_cluster_per_round_alternates_osd_counts \
  tests/test_ceph_lab.py::test_an_osd_killed_mid_run_stalls_io_briefly_and_the_cluster_heals_before_the_next_repetition \
  tests/test_metadata.py::test_metadata_operations_on_the_labs_cephfs "$@"
left=$(pgrep -af 'ceph-(mon|mgr|osd|mds)|ceph-fuse|radosgw' | grep 'pytest-of-' || true)
if [ -n "$left" ]; then
  echo "ceph-e2e: left behind:" >&2
  echo "$left" >&2
  exit 1
fi
echo "ceph-e2e: passed, nothing left behind"
