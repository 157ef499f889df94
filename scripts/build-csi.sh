#!/usr/bin/env bash
# Builds the CSI pieces storbench's Kubernetes lab needs and caches them under
# ${XDG_CACHE_HOME:-~/.cache}/storbench/csi-<key>/; prints that directory. About 10-20 min on 2 cores from
# empty caches, instant afterwards.
#
#   storbench-csi        our own CSI driver (scripts/csi-driver): the upstream host-path driver and
#                        node-driver-registrar are not on the Go module proxy, so it registers itself too
#   csi-provisioner, csi-attacher, csi-snapshotter, snapshot-controller, csi-resizer
#                        Kubernetes' own CSI sidecars, from the Go module proxy
#   crd/                 the VolumeSnapshot CRDs (snapshot.storage.k8s.io) the snapshot-controller serves
#   VERSIONS             what went in
#
# <key> changes with any version below or any source file of the driver, so a change rebuilds. Every sidecar
# module has replace directives, which `go install mod/cmd@version` refuses, so each is built inside a writable
# copy of its own module (its go.mod and go.sum as released). The snapshotter's replaces its client module
# with ./client, a separate module that its zip leaves out: that module is copied in there.
set -euo pipefail
DRIVER_VERSION=0.1.0
PROVISIONER_VERSION=v5.3.0  # github.com/kubernetes-csi/external-provisioner/v5
ATTACHER_VERSION=v4.13.0    # github.com/kubernetes-csi/external-attacher/v4 (needs Go 1.26)
SNAPSHOTTER_VERSION=v8.7.0  # github.com/kubernetes-csi/external-snapshotter/v8 and client/v8 (needs Go 1.26)
RESIZER_VERSION=v1.14.0     # github.com/kubernetes-csi/external-resizer
BUILD_REV=1                 # bump when the build steps below change what they make

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
driver_src="$here/csi-driver"
binaries=(storbench-csi csi-provisioner csi-attacher csi-snapshotter snapshot-controller csi-resizer)

key=$(
  {
    echo "$DRIVER_VERSION $PROVISIONER_VERSION $ATTACHER_VERSION $SNAPSHOTTER_VERSION $RESIZER_VERSION $BUILD_REV"
    cd "$driver_src"
    find . -type f \( -name '*.go' ! -name '*_test.go' -o -name go.mod -o -name go.sum \) -print0 |
      LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -c1-12
)
cache="${XDG_CACHE_HOME:-$HOME/.cache}/storbench/csi-${key}"

missing=0
for binary in "${binaries[@]}"; do
  [ -x "$cache/$binary" ] || missing=1
done
[ -f "$cache/VERSIONS" ] || missing=1
# the lab finds the newest build at csi/ (a link to csi-<key>)
link_current() { ln -sfn "$(basename "$cache")" "$(dirname "$cache")/csi"; }
if ((missing == 0)); then
  link_current
  echo "$cache"
  exit 0
fi
command -v go >/dev/null || { echo "build-csi: needs Go (https://go.dev/dl/)" >&2; exit 2; }
# Never fetch another toolchain: a module that wants a newer Go than this one should fail here, plainly.
export GOTOOLCHAIN=local CGO_ENABLED=0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$cache.partial"
mkdir -p "$cache.partial/crd"

# module_dir MODULE VERSION: downloads the module and prints its (read-only) directory in the module cache.
module_dir() {
  local dir
  dir=$(go mod download -json "$1@$2" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  [ -n "$dir" ] || { echo "build-csi: cannot download $1@$2" >&2; return 1; }
  echo "$dir"
}

# build_sidecar DIR VERSION BINARY...: builds each ./cmd/BINARY inside the module copy at DIR.
build_sidecar() {
  local dir=$1 version=$2 binary
  shift 2
  for binary in "$@"; do
    echo "build-csi: building $binary $version" >&2
    (cd "$dir" && go build -mod=mod -buildvcs=false -trimpath -ldflags="-s -w -X main.version=$version" \
      -o "$cache.partial/$binary" "./cmd/$binary")
  done
}

# copy_module MODULE VERSION NAME: a writable copy of the module at $work/NAME, for go build to update.
copy_module() {
  local dir
  dir=$(module_dir "$1" "$2")
  cp -r "$dir" "$work/$3"
  chmod -R u+w "$work/$3"
}

echo "build-csi: building storbench-csi $DRIVER_VERSION" >&2
(cd "$driver_src" && go build -buildvcs=false -trimpath -ldflags="-s -w -X main.version=$DRIVER_VERSION" \
  -o "$cache.partial/storbench-csi" .)

copy_module github.com/kubernetes-csi/external-provisioner/v5 "$PROVISIONER_VERSION" provisioner
build_sidecar "$work/provisioner" "$PROVISIONER_VERSION" csi-provisioner

copy_module github.com/kubernetes-csi/external-attacher/v4 "$ATTACHER_VERSION" attacher
build_sidecar "$work/attacher" "$ATTACHER_VERSION" csi-attacher

copy_module github.com/kubernetes-csi/external-snapshotter/v8 "$SNAPSHOTTER_VERSION" snapshotter
client=$(module_dir github.com/kubernetes-csi/external-snapshotter/client/v8 "$SNAPSHOTTER_VERSION")
rm -rf "$work/snapshotter/client"
cp -r "$client" "$work/snapshotter/client"
chmod -R u+w "$work/snapshotter/client"
build_sidecar "$work/snapshotter" "$SNAPSHOTTER_VERSION" csi-snapshotter snapshot-controller
cp "$client"/config/crd/snapshot.storage.k8s.io_*.yaml "$cache.partial/crd/"
chmod 644 "$cache.partial"/crd/*.yaml

copy_module github.com/kubernetes-csi/external-resizer "$RESIZER_VERSION" resizer
build_sidecar "$work/resizer" "$RESIZER_VERSION" csi-resizer

{
  echo "storbench-csi $DRIVER_VERSION (source key $key)"
  echo "github.com/kubernetes-csi/external-provisioner/v5 $PROVISIONER_VERSION"
  echo "github.com/kubernetes-csi/external-attacher/v4 $ATTACHER_VERSION"
  echo "github.com/kubernetes-csi/external-snapshotter/v8 $SNAPSHOTTER_VERSION"
  echo "github.com/kubernetes-csi/external-snapshotter/client/v8 $SNAPSHOTTER_VERSION (crd/)"
  echo "github.com/kubernetes-csi/external-resizer $RESIZER_VERSION"
  echo "$(go env GOVERSION)"
} > "$cache.partial/VERSIONS"

rm -rf "$cache"
mv "$cache.partial" "$cache"
link_current
echo "$cache"
