#!/bin/sh
# vm-build-rootfs.sh OUTPUT.img [SIZE] [SUITE] — the default vm base image: a minimal Debian
# (mmdebstrap --variant=minbase, through the host's own apt sources) as a raw ext4 disk image,
# with the agent user (uid/gid 1000) that paddock-init runs sessions as, and the few tools agents
# (and the test suites) expect: curl, git, python3, ps.
#
# Without this disk, paddock builds its own vm-base image with the same packages through the
# image store (src/cli/vmbase.c: unprivileged, cached, with progress). The test suite uses this
# script (tests/run.sh): it needs root, as mmdebstrap's root mode builds a directory with the
# right owners and mke2fs 1.47.0 (Debian 12) can only populate an image from a directory (-d
# from a tarball needs 1.47.1).
#
# The image is built once and never written again: every box gets a qcow2 overlay on top.
# Inode tables and the journal are initialised here (lazy_*_init=0), so no guest ever spends
# time — or overlay space — zeroing them.
set -eu
out=${1:?usage: vm-build-rootfs.sh OUTPUT.img [SIZE] [SUITE]}
size=${2:-2G}
suite=${3:-bookworm}
[ "$(id -u)" = 0 ] || { echo "vm-build-rootfs.sh: needs root for now (see TODO in the script)" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/var/tmp}/paddock-rootfs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mmdebstrap --variant=minbase --mode=root --quiet \
	--include=ca-certificates,curl,git,python3,procps \
	--customize-hook='chroot "$1" groupadd -g 1000 agent' \
	--customize-hook='chroot "$1" useradd -m -u 1000 -g 1000 -s /bin/bash agent' \
	--customize-hook='echo paddock > "$1/etc/hostname"' \
	--customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
	"$suite" "$tmp/root"
mkdir -p "$(dirname "$out")"
rm -f "$out.tmp"
mkfs.ext4 -q -F -L paddock-root -m 0 -E lazy_itable_init=0,lazy_journal_init=0 \
	-d "$tmp/root" "$out.tmp" "$size"
chmod 0444 "$out.tmp"
mv -f "$out.tmp" "$out"
echo "vm base image: $out ($(du -h --apparent-size "$out" | cut -f1) apparent, $(du -h "$out" | cut -f1) used)"
