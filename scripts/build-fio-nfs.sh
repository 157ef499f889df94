#!/usr/bin/env bash
# Debian's fio is built without libnfs and libcurl, so it has no `nfs` and no `http` engine. This builds fio
# from Debian's own source package with libnfs-dev and libcurl (the http engine's S3 mode), once, and caches
# the binary in ${XDG_CACHE_HOME:-~/.cache}/storbench/fio-nfs/fio (not in the repository). Prints the binary's
# path. storbench uses it for `kind: nfs` and `kind: s3` targets.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
engine_src=$here/fio-engines/storbench_nfsmeta.c
cache=${XDG_CACHE_HOME:-$HOME/.cache}/storbench/fio-nfs
has_nfs() { "$1" --enghelp 2>/dev/null | grep -qx $'\tnfs' && "$1" --enghelp 2>/dev/null | grep -qx $'\thttp'; }
# the external engine for metadata operations over libnfs is built with it, and again whenever its source changes
engine_ok() { [ -f "$cache/storbench-nfsmeta.so" ] && cmp -s "$engine_src" "$cache/storbench_nfsmeta.c"; }
if [ -x "$cache/fio" ] && has_nfs "$cache/fio" && engine_ok; then echo "$cache/fio"; exit 0; fi
export DEBIAN_FRONTEND=noninteractive
if ! grep -rqs "deb-src" /etc/apt/sources.list /etc/apt/sources.list.d/; then
  cat > /etc/apt/sources.list.d/storbench-deb-src.sources <<'SOURCES'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
  apt-get update -qq
fi
apt-get install -y -qq --no-install-recommends build-essential dpkg-dev pkg-config libaio-dev zlib1g-dev \
  libnfs-dev libcurl4-openssl-dev libssl-dev >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -qq --download-only fio >/dev/null && dpkg-source -x ./fio_*.dsc src >/dev/null)
cd "$work/src"
./configure --disable-native > configure.log
grep -Eiq "^NFS engine +yes" configure.log || { echo "build-fio-nfs: configure did not find libnfs" >&2; exit 1; }
grep -Eiq "^http engine +yes" configure.log || { echo "build-fio-nfs: configure did not find libcurl" >&2; exit 1; }
make -j"$(nproc)" fio >/dev/null
gcc -O2 -shared -fPIC -Wall -Werror -D_GNU_SOURCE -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64 -include config-host.h \
  -I. -o storbench-nfsmeta.so "$engine_src" -lnfs
mkdir -p "$cache"
install -m 0755 fio "$cache/fio"
install -m 0755 storbench-nfsmeta.so "$cache/storbench-nfsmeta.so"
install -m 0644 "$engine_src" "$cache/storbench_nfsmeta.c"
has_nfs "$cache/fio" || { echo "build-fio-nfs: the built fio has no nfs or http engine" >&2; exit 1; }
echo "$cache/fio"
