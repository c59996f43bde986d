#!/bin/sh
# scripts/install-deps.sh — installs the Debian 12 packages paddock needs to build, run and
# test. Idempotent; run as root (or through sudo). Nothing is downloaded from anywhere but
# the host's configured apt sources.
set -eu

BUILD="build-essential pkg-config meson ninja-build clang libclang-rt-14-dev
       libseccomp-dev libslirp-dev libglib2.0-dev libarchive-dev libcjson-dev nettle-dev
       libhttp-parser-dev libcap-dev liblz4-dev liblzma-dev libzstd-dev libcurl4-openssl-dev"
RUN="uidmap iproute2 procps util-linux ca-certificates tar git
     qemu-system-x86 qemu-utils e2fsprogs mmdebstrap"
TEST="libcmocka-dev bubblewrap python3 psmisc hyperfine time curl socat strace openssl bsdutils
      busybox-static file"

if [ "$(id -u)" != 0 ]; then
	exec sudo "$0" "$@"
fi
want=""
for p in $BUILD $RUN $TEST; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || want="$want $p"
done
if [ -n "$want" ]; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $want
fi
