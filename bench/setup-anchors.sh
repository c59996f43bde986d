#!/bin/bash
# bench/setup-anchors.sh — installs (idempotently) everything the benchmarks compare
# paddock against, then proves each anchor runs here.
#
#   bench/setup-anchors.sh            # as root: Debian packages + npm package + checks
#   BENCH_USER=pdbench bench/setup-anchors.sh   # also create that user and check srt as it
#   bench/setup-anchors.sh --check    # only the checks, installs nothing
#
# Anchors: bubblewrap, Anthropic's sandbox-runtime (`srt`, npm, installed locally into
# bench/node_modules), raw `qemu-system-x86_64 -M microvm`, tinyproxy, `tar | tar`.
# Tools: hyperfine, GNU time, jq, curl, nginx-light (loopback upstream), openssl, socat and
# ripgrep (srt needs both on Linux), busybox-static/cpio/lz4/gcc (the vm anchor's initramfs
# and kernel extraction), mmdebstrap (the images suite's plain chroot).
set -euo pipefail
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
SRT="$BENCH_DIR/node_modules/.bin/srt"
SRT_VERSION=${SRT_VERSION:-0.0.78}
DEBS=(bubblewrap hyperfine time jq curl tinyproxy nginx-light openssl socat ripgrep
	qemu-system-x86 busybox-static cpio lz4 gcc libc6-dev python3 mmdebstrap psmisc)
CHECK_ONLY=0
[ "${1:-}" = --check ] && CHECK_ONLY=1

say() { printf '%s\n' "$*"; }
die() { printf 'setup-anchors: %s\n' "$*" >&2; exit 1; }

missing_debs() {
	local p
	for p in "${DEBS[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			printf '%s\n' "$p"
	done
}

install_debs() {
	local miss
	miss=$(missing_debs)
	[ -z "$miss" ] && { say "debian packages: all present"; return 0; }
	[ "$(id -u)" = 0 ] || die "missing packages (run as root): $(echo $miss)"
	say "installing: $(echo $miss)"
	# apt's lock may be held by a concurrent install; retry for a while
	local i
	for i in $(seq 1 20); do
		if DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
			$miss >/dev/null 2>&1; then
			return 0
		fi
		[ "$i" = 1 ] && { apt-get update >/dev/null 2>&1 || true; continue; }
		# apt's lock may be held by a concurrent install; anything else fails fast
		fuser /var/lib/dpkg/lock-frontend >/dev/null 2>&1 || break
		sleep 10
	done
	die "apt-get install failed: $(echo $miss)"
}

install_srt() {
	# srt 0.0.78 is the newest release whose engines field accepts Node 20 (0.0.79+ want
	# Node >= 22.12); Debian 12's own nodejs (18.x) is too old for any recent srt.
	command -v npm >/dev/null || die "npm missing: install Node.js >= 20.11 with npm"
	if [ -x "$SRT" ] && [ "$("$SRT" --version 2>/dev/null)" = "$SRT_VERSION" ]; then
		say "sandbox-runtime $SRT_VERSION: present"
		return 0
	fi
	# local, not global: the anchor lives beside the benchmarks that use it
	npm install --prefix "$BENCH_DIR" --save-exact --no-audit --no-fund \
		"@anthropic-ai/sandbox-runtime@$SRT_VERSION" >/dev/null
	say "sandbox-runtime $("$SRT" --version): installed into bench/node_modules"
}

ensure_user() {
	local u=$1
	id "$u" >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] || die "user $u missing and we are not root"
	useradd -m -s /bin/bash "$u"
	say "created user $u"
}

# check NAME CMD...: runs CMD, says ok or FAILED with its output
check() {
	local name=$1 out; shift
	if out=$("$@" 2>&1); then
		say "ok      $name"
	else
		say "FAILED  $name"
		printf '%s\n' "$out" | tail -n 10 | sed 's/^/        | /'
		return 1
	fi
}

srt_settings() {
	local f
	f=$(mktemp /tmp/srt-settings.XXXXXX.json)
	printf '%s\n' '{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}' >"$f"
	chmod 0644 "$f"
	echo "$f"
}

run_checks() {
	local rc=0 st tmpd utmp=""
	st=$(srt_settings)
	# srt leaves its proxy socket in TMPDIR on exit: give it one to throw away
	tmpd=$(mktemp -d)
	check "bwrap (root)" bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true || rc=1
	check "srt (root): srt --settings FILE -- true" \
		env TMPDIR="$tmpd" bash -c "cd /tmp && '$SRT' --settings '$st' -- true </dev/null" || rc=1
	check "srt exit status passes through" env TMPDIR="$tmpd" \
		bash -c "cd /tmp && '$SRT' --settings '$st' -- sh -c 'exit 7' </dev/null; [ \$? = 7 ]" || rc=1
	check "srt isolates net+pid namespaces" env TMPDIR="$tmpd" bash -c "cd /tmp &&
		[ \"\$('$SRT' --settings '$st' -- readlink /proc/self/ns/net </dev/null)\" != \"\$(readlink /proc/self/ns/net)\" ]" || rc=1
	if [ -n "${BENCH_USER:-}" ]; then
		check "bwrap (user $BENCH_USER)" runuser -u "$BENCH_USER" -- \
			bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true || rc=1
		utmp=$(runuser -u "$BENCH_USER" -- mktemp -d)
		check "srt (user $BENCH_USER)" runuser -u "$BENCH_USER" -- env TMPDIR="$utmp" \
			HOME="$(getent passwd "$BENCH_USER" | cut -d: -f6)" \
			bash -c "cd /tmp && '$SRT' --settings '$st' -- true </dev/null" || rc=1
	fi
	check "tinyproxy" tinyproxy -v || rc=1
	check "qemu microvm machine" bash -c "qemu-system-x86_64 -M help | grep -q '^microvm'" || rc=1
	check "hyperfine" hyperfine --version || rc=1
	check "GNU time" /usr/bin/time -f %M true || rc=1
	check "nginx with ssl" bash -c "nginx -V 2>&1 | grep -q http_ssl_module" || rc=1
	check "node >= 20.11 (srt needs it)" node -e \
		'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a==20&&b>=11)?0:1)' || rc=1
	rm -rf "$st" "$tmpd" ${utmp:+"$utmp"}
	return $rc
}

main() {
	if [ $CHECK_ONLY = 0 ]; then
		install_debs
		install_srt
		[ -n "${BENCH_USER:-}" ] && ensure_user "$BENCH_USER"
	fi
	run_checks || die "some anchors do not work (see above)"
	say "all anchors ready"
}
main "$@"
