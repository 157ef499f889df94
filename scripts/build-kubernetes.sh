#!/usr/bin/env bash
# Builds the Kubernetes server binaries storbench's test cluster needs (kube-apiserver, kube-controller-manager,
# kube-scheduler, kubelet), and kubectl (cached on its own: the test that runs `kubectl storbench` uses it), from
# the Go module proxy — no Kubernetes server package exists in Debian, PyPI or
# npm — and caches them under ${XDG_CACHE_HOME:-~/.cache}/storbench/. Prints the directory. About 10-12 min on
# 2 cores from empty caches, instant afterwards.
#
# k8s.io/kubernetes replaces its k8s.io/* staging modules with local directories, which Go ignores in a
# dependency: this wrapper module requires k8s.io/kubernetes and replaces each staging module with its published
# v0.x release of the same minor. (v1.33.13 has a complete set on the proxy; v1.32.13 misses some.)
set -euo pipefail
VERSION=1.33.13
STAGING_VERSION=0.33.13
cache="${XDG_CACHE_HOME:-$HOME/.cache}/storbench/kubernetes-v${VERSION}"
kubectl_cache="${XDG_CACHE_HOME:-$HOME/.cache}/storbench/kubectl-v${VERSION}"
binaries=(kube-apiserver kube-controller-manager kube-scheduler kubelet)

missing=0
for binary in "${binaries[@]}"; do
  [ -x "$cache/$binary" ] || missing=1
done
if ((missing == 0)) && [ -x "$kubectl_cache/kubectl" ]; then
  echo "$cache"
  exit 0
fi
command -v go >/dev/null || { echo "build-kubernetes: needs Go (https://go.dev/dl/)" >&2; exit 2; }

staging=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider cluster-bootstrap
  code-generator component-base component-helpers controller-manager cri-api cri-client csi-translation-lib
  dynamic-resource-allocation endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy
  kube-scheduler kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin
  sample-controller)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
{
  echo "module storbench.local/kubernetes-build"
  echo
  echo "go 1.24"
  echo
  echo "require k8s.io/kubernetes v${VERSION}"
  echo
  echo "replace ("
  for module in "${staging[@]}"; do
    echo "	k8s.io/${module} => k8s.io/${module} v${STAGING_VERSION}"
  done
  echo ")"
} > "$work/go.mod"
cat > "$work/tools.go" <<'GO'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
GO
mkdir -p "$cache.partial"
(
  cd "$work"
  export CGO_ENABLED=0 GOFLAGS=-mod=mod
  go mod tidy >&2
  for binary in "${binaries[@]}"; do
    ((missing)) || break
    echo "build-kubernetes: building $binary v${VERSION}" >&2
    go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${VERSION}" \
      -o "$cache.partial/$binary" "k8s.io/kubernetes/cmd/$binary"
  done
  if [ ! -x "$kubectl_cache/kubectl" ]; then
    echo "build-kubernetes: building kubectl v${VERSION}" >&2
    mkdir -p "$kubectl_cache.partial"
    go build -trimpath -ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${VERSION}" \
      -o "$kubectl_cache.partial/kubectl" "k8s.io/kubernetes/cmd/kubectl"
    rm -rf "$kubectl_cache"
    mv "$kubectl_cache.partial" "$kubectl_cache"
  fi
)
if ((missing)); then
  rm -rf "$cache"
  mv "$cache.partial" "$cache"
fi
rm -rf "$cache.partial"
echo "$cache"
