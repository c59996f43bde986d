#!/bin/bash
# bench/vm-startup.sh — issue 5: `paddock run --rm --backend vm -- true` against raw
# `qemu-system-x86_64 -M microvm` booting the same kernel with an initramfs whose init
# powers off at once, same accelerator, in one run.
#
#   PADDOCK=build/src/cli/paddock bench/vm-startup.sh
#   KERNEL=/path/to/vmlinux ACCEL=tcg bench/vm-startup.sh
#
# Environment:
#   KERNEL    guest kernel (ELF vmlinux, booted through PVH; or a bzImage). Default: the
#             one paddock cached in $PADDOCK_HOME/cache/kernel (so both sides boot the same
#             kernel), else Debian's linux-image-cloud-amd64 fetched with `apt-get download`
#             into bench/.cache, its ELF vmlinux unpacked from the bzImage payload.
#   ACCEL     tcg (default) | kvm | auto (kvm only if a probe boot succeeds: here /dev/kvm
#             opens but guests die with "KVM internal error", so auto falls back to tcg)
#   BENCH_VM_RUNS  timed boots per command (default 10), BENCH_VM_MEM guest MiB (512)
#   BENCH_VM_BASE=1  also the cold rows of paddock's vm-base image against
#             scripts/vm-build-rootfs.sh (root; minutes)
#
# Under TCG the guest kernel calibrates its TSC against the emulated PIT; on a busy host
# that calibration fails ("tsc: Unable to calibrate against PIT ... No reference
# (HPET/PMTIMER) available") and the guest then hangs for ever. Measured here: 6/6 boots hung
# with two CPU hogs running, 0/6 with `tsc_early_khz=<host TSC kHz>` on the kernel command
# line. The anchor therefore passes tsc_early_khz under TCG, and every boot runs under
# `timeout` so a hang fails the run instead of blocking it.
set -u
. "$(dirname "$0")/lib.sh"

CACHE="$BENCH_DIR/.cache/kernel"
ACCEL=${ACCEL:-tcg}
VM_RUNS=${BENCH_VM_RUNS:-10}
VM_MEM=${BENCH_VM_MEM:-512}
BOOT_TIMEOUT=${BENCH_VM_TIMEOUT:-60}
NA="not measured: paddock run --rm --backend vm -- true does not work yet"

# fetch_kernel: prints the path of an ELF vmlinux from Debian's cloud kernel package
fetch_kernel() {
	local pkg deb bz
	mkdir -p "$CACHE"
	if [ -s "$CACHE/vmlinux" ]; then echo "$CACHE/vmlinux"; return 0; fi
	pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { print $2; exit }')
	[ -n "$pkg" ] || bench_die "cannot resolve linux-image-cloud-amd64 (apt-get update?)"
	(cd "$CACHE" && apt-get download "$pkg" >/dev/null 2>&1) || bench_die "apt-get download $pkg failed"
	deb=$(ls "$CACHE"/"$pkg"_*.deb | head -n 1)
	rm -rf "$CACHE/x" && mkdir -p "$CACHE/x"
	dpkg-deb --fsys-tarfile "$deb" | tar -C "$CACHE/x" -xf - ./boot
	bz=$(ls "$CACHE"/x/boot/vmlinuz-* | head -n 1)
	cp "$bz" "$CACHE/bzImage"
	extract_vmlinux "$bz" "$CACHE/vmlinux.tmp" && mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"
	echo "$CACHE/vmlinux"
}

# extract_vmlinux BZIMAGE OUT: the ELF kernel from a bzImage's compressed payload (x86 boot
# protocol: setup_sects at 0x1f1, payload_offset/payload_length at 0x248/0x24c; Debian's
# kernels use legacy LZ4 frames followed by a 4-byte size, which lz4 must not see)
extract_vmlinux() {
	local bz=$1 out=$2 sects poff plen start
	sects=$(od -An -tu1 -j $((0x1f1)) -N1 "$bz" | tr -d ' ')
	[ "$sects" = 0 ] && sects=4
	read -r poff plen < <(od -An -tu4 -j $((0x248)) -N8 "$bz")
	start=$(((sects + 1) * 512 + poff))
	tail -c +$((start + 1)) "$bz" | head -c $((plen - 4)) | lz4 -dc >"$out" 2>/dev/null
	[ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
		bench_die "could not unpack an ELF vmlinux from $bz (not LZ4?)"
}

# build_initramfs: prints the path of a cpio whose /init powers the guest off at once
build_initramfs() {
	local d="$CACHE/poweroff-root"
	if [ -s "$CACHE/poweroff.cpio" ]; then echo "$CACHE/poweroff.cpio"; return 0; fi
	rm -rf "$d" && mkdir -p "$d"
	printf '%s\n' '#include <sys/reboot.h>' '#include <unistd.h>' \
		'int main(void) { sync(); reboot(RB_POWER_OFF); return 0; }' >"$CACHE/poweroff.c"
	if ! gcc -static -Os -s -o "$d/init" "$CACHE/poweroff.c" 2>/dev/null; then
		# fallback: busybox-static
		mkdir -p "$d/bin" && cp /bin/busybox "$d/bin/busybox"
		printf '#!/bin/busybox sh\n/bin/busybox poweroff -f\n' >"$d/init"
		chmod 0755 "$d/init"
	fi
	(cd "$d" && find . -mindepth 1 | cpio -o -H newc --quiet) >"$CACHE/poweroff.cpio"
	echo "$CACHE/poweroff.cpio"
}

host_tsc_khz() {
	awk -F: '/^cpu MHz/ { printf "%d\n", $2 * 1000; exit }' /proc/cpuinfo
}

# qemu_cmd KERNEL ACCEL: sets QEMU=(the anchor's argv, under timeout)
qemu_cmd() {
	local kernel=$1 accel=$2 append="console=ttyS0 quiet panic=-1"
	[ "$accel" = tcg ] && append+=" tsc_early_khz=$(host_tsc_khz)"
	QEMU=(timeout "$BOOT_TIMEOUT" qemu-system-x86_64 -M "microvm,accel=$accel"
		-m "$VM_MEM" -smp 1 -nodefaults -no-user-config -display none
		-serial "file:$BENCH_WORK/vm-anchor-console.log"
		-kernel "$kernel" -initrd "$INITRD" -append "$append" -no-reboot)
	[ "$accel" = kvm ] && QEMU+=(-cpu host)
	return 0
}

choose_accel() {
	[ "$ACCEL" != auto ] && { echo "$ACCEL"; return; }
	qemu_cmd "$KERNEL" kvm
	QEMU[1]=20
	if "${QEMU[@]}" </dev/null >/dev/null 2>&1; then echo kvm; else echo tcg; fi
}

# paddock_kernel: the kernel paddock itself cached (PADDOCK_HOME/cache/kernel/current)
paddock_kernel() {
	local root="$PADDOCK_HOME/cache/kernel" rel boot
	rel=$(cat "$root/current" 2>/dev/null) && boot=$(cat "$root/$rel/boot" 2>/dev/null) &&
		[ -s "$root/$rel/$boot" ] && echo "$root/$rel/$boot"
}

# vm_memory: a persistent box with VM_MEM MiB: host RSS of QEMU + its supervisor against the
# guest's RAM in use (MemTotal - MemAvailable), then the guest touches 256 MiB, frees it, and
# the host RSS is sampled for 5 s (virtio-balloon free page reporting gives it back).
# vm_memory 0: the same box with transparent huge pages off (PADDOCK_VM_THP=0, which is what
# qemu_spawn chooses on a host with cheap page faults; docs/vm-backend.md), without the
# balloon rows.
vm_memory() {
	local name=benchmem$$ qpid spid used host peak base after t returned thp=${1:-} tag=""
	local -a env=()
	[ -n "$thp" ] && tag=" [PADDOCK_VM_THP=$thp]" && env=(env "PADDOCK_VM_THP=$thp")
	(cd "$BENCH_WORK" && "${env[@]}" "$PADDOCK" create --backend vm --workspace none --memory "${VM_MEM}M" "$name" >/dev/null) ||
		{ bench_row "host RSS overhead of QEMU + supervisor$tag" - KiB "" - "box did not start"; return; }
	qpid=$(pgrep -f -n "paddock-$name " || true)
	spid=$("$PADDOCK" ls --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['name']=='$name'][0]['supervisor_pid'])")
	# let the guest settle: its free page reporting gives back what the restore touched, in
	# rounds 2 s apart, and where QEMU keeps huge pages the supervisor splits them 3, 8 and
	# 13 s after QEMU's start (thp_trim.h); wait 14 s, then until QEMU's RSS holds still for
	# 2 s (at most 30 s more)
	local last=-1 same=0 now
	sleep 14
	for t in $(seq 60); do
		now=$(bench_vmrss_kb "$qpid")
		if [ "$now" = "$last" ]; then same=$((same + 1)); else same=0; fi
		[ "$same" -ge 4 ] && break
		last=$now
		sleep 0.5
	done
	# "in use" two ways: what Linux calls used by programs (MemTotal - MemAvailable: page cache
	# and reclaimable slab count as free, the kernel's image and struct pages are outside
	# MemTotal), and all the guest RAM that is not free (RAM - MemFree: any page the guest
	# holds, which is what it would need resident on a perfect host)
	local inuse nonfree
	inuse=$("$PADDOCK" exec "$name" -- awk -v ram=$((VM_MEM * 1024)) '/MemTotal/{t=$2} /MemAvailable/{a=$2} /MemFree/{f=$2} END{print t-a, ram-f}' /proc/meminfo)
	used=${inuse% *} nonfree=${inuse#* }
	host=$(( $(bench_vmrss_kb "$qpid") + $(bench_vmrss_kb "$spid") ))
	bench_row "host RSS of QEMU + supervisor$tag" "$host" KiB "" "" "guest in use ${used} KiB (MemTotal-MemAvailable), not free ${nonfree} KiB (RAM-MemFree)"
	bench_row "host RSS overhead (QEMU + supervisor - guest in use)$tag" "$((host - used))" KiB "" "" "target <= 65536 KiB"
	bench_row "host RSS overhead (QEMU + supervisor - guest RAM not free)$tag" "$((host - nonfree))" KiB "" "" "target <= 65536 KiB"
	# The same RSS split by mapping: QEMU's guest-RAM mapping (an anonymous one of exactly the
	# guest's size) holds what the guest wrote, its kernel image and struct pages included,
	# which MemTotal leaves out; the rest is QEMU's own (code, heap, TCG's code buffer) and the
	# supervisor's.
	local ram
	ram=$(awk -v sz=$((VM_MEM * 1024)) '/^[0-9a-f]+-[0-9a-f]+ /{m=0} /^Size:/{m=($2==sz)} /^Rss:/{if(m){print $2; exit}}' "/proc/$qpid/smaps")
	if [ -n "$ram" ]; then
		bench_row "of which QEMU's guest-RAM mapping (resident)$tag" "$ram" KiB "" "" ""
		bench_row "QEMU + supervisor beyond the guest's RAM$tag" "$((host - ram))" KiB "" "" "paddock's and QEMU's own"
	fi
	# TCG's translated code lives in one writable+executable mapping (1 GiB reserved); KVM has none
	local tb
	tb=$(awk '/^[0-9a-f]+-[0-9a-f]+ rwxp /{m=1; next} /^[0-9a-f]+-[0-9a-f]+ /{m=0} /^Rss:/{if(m){print $2; exit}}' "/proc/$qpid/smaps")
	[ -n "$tb" ] && bench_row "of which TCG's translated-code buffer$tag" "$tb" KiB "" "" "none under KVM"
	if [ -n "$thp" ]; then
		"$PADDOCK" rm -f "$name" >/dev/null 2>&1
		return
	fi
	base=$(bench_vmrss_kb "$qpid")
	"$PADDOCK" exec "$name" -- python3 -c 'b = bytearray(b"\1") * (256 << 20); import time; time.sleep(3)' &
	local epid=$! v
	peak=$base
	while kill -0 "$epid" 2>/dev/null; do
		v=$(bench_vmrss_kb "$qpid") && [ "$v" -gt "$peak" ] && peak=$v
		sleep 0.1
	done
	wait "$epid"
	after=$peak
	for t in $(seq 20); do
		sleep 0.25
		after=$(bench_vmrss_kb "$qpid")
	done
	returned=$(( (peak - after) * 100 / ( (peak - base) > 0 ? (peak - base) : 1 ) ))
	bench_row "QEMU RSS: before / after 256 MiB touched / 5 s after free" "$base/$peak/$after" KiB "" "" ""
	bench_row "memory returned by the balloon within 5 s of the guest freeing 256 MiB" "$returned" "%" "" "" "target >= 80%"
	"$PADDOCK" rm -f "$name" >/dev/null 2>&1
}

# vm_exec_work OPTS...: a box created with OPTS runs an agent's kind of work (160 short tool
# runs: grep, sed, awk, ls; then three Python starts importing a few modules) BENCH_VM_RUNS
# times after one warm-up; prints "median-ms qemu-rss-kib code-buffer-kib" (the last two
# after all rounds)
VM_WORK='for i in $(seq 40); do grep -r root /etc/passwd /etc/group >/dev/null 2>&1; sed -n 1p /etc/passwd >/dev/null; awk "NR==1" /etc/hostname >/dev/null; ls -l /usr/bin >/dev/null; done; for i in 1 2 3; do python3 -c "import json, email.parser, http.client, subprocess, argparse, re"; done'
vm_exec_work() {
	local name=benchwork$$ qpid t s e times="" rss tb
	# booted, not restored: a new configuration's template builder would otherwise run beside
	# the rounds (seen: 5.7 s a round instead of 3.4-4.0)
	(cd "$BENCH_WORK" && PADDOCK_VM_TEMPLATE=0 "$PADDOCK" create --backend vm --workspace none \
		--memory "${VM_MEM}M" "$@" "$name" >/dev/null) || { echo "- - -"; return; }
	qpid=$(pgrep -f -n "paddock-$name " || true)
	for t in $(seq 0 "$VM_RUNS"); do
		s=$(date +%s%N)
		"$PADDOCK" exec "$name" -- sh -c "$VM_WORK" >/dev/null 2>&1 || { times=""; break; }
		e=$(date +%s%N)
		[ "$t" = 0 ] || times="$times $(( (e - s) / 1000 ))"
	done
	rss=$(bench_vmrss_kb "$qpid")
	tb=$(awk '/^[0-9a-f]+-[0-9a-f]+ rwxp /{m=1; next} /^[0-9a-f]+-[0-9a-f]+ /{m=0} /^Rss:/{if(m){print $2; exit}}' "/proc/$qpid/smaps")
	"$PADDOCK" rm -f "$name" >/dev/null 2>&1
	[ -n "$times" ] || { echo "- - -"; return; }
	echo "$(printf '%s\n' $times | awk '{ printf "%.3f\n", $1 / 1000 }' | bench_median) ${rss:--} ${tb:--}"
}

# vm_exec_heavy: the same work in a box with the guest's ASLR (--guest-aslr: every exec is new
# code to TCG) and in one without (TCG's default: execs reuse translations)
vm_exec_heavy() {
	if [ "$ACCEL" != tcg ] || ! "$PADDOCK" run --help 2>&1 | grep -q -- '--guest-aslr'; then
		bench_log "exec-heavy rows: only under TCG with a paddock that has --guest-aslr"
		return
	fi
	local on off
	read -r -a on < <(vm_exec_work --guest-aslr)
	read -r -a off < <(vm_exec_work)
	bench_row "agent work in a vm box (160 tool runs + 3 python3), --guest-aslr" "${on[0]}" ms "" "" "median of $VM_RUNS"
	bench_row "the same, guest without ASLR (default under TCG)" "${off[0]}" ms "${on[0]}" "--guest-aslr"
	bench_row "QEMU RSS after the rounds: --guest-aslr / default" "${on[1]}/${off[1]}" KiB "" "" "guest ${VM_MEM} MiB"
	bench_row "of which TCG's code buffer: --guest-aslr / default" "${on[2]}/${off[2]}" KiB "" "" "capped at a quarter of guest RAM, 128-512 MiB; QEMU 7.2's own 1 GiB"
}

# vm_base_cold (BENCH_VM_BASE=1, root): the first vm run on a host without a base disk, which
# builds paddock's vm-base image (mmdebstrap minbase, the tools installed in a build box, the
# ext4 disk) and boots it, against scripts/vm-build-rootfs.sh making the same disk as root
# (what a user had to run before). One run each: minutes, and the mirror's speed in both.
vm_base_cold() {
	[ "$(id -u)" = 0 ] || { bench_log "BENCH_VM_BASE=1 needs root (the script's side)"; return; }
	local work=$BENCH_WORK/vm-base-cold res=() h a script pd second
	rm -rf "$work" && mkdir -p "$work/cache" "$work/home"
	# the kernel paddock has cached already, without the base disk beside it
	ln -s "${PADDOCK_VM_CACHE_HOME:-$PADDOCK_HOME}/cache/kernel" "$work/cache/kernel"
	# a network that resolves the mirror to an address paddock dials only when told (this one)
	for h in deb.debian.org security.debian.org; do
		a=$(getent hosts "$h" | awk '{print $1; exit}') || true
		[ -n "$a" ] && res+=(--resolve "$h=$a")
	done
	script=$(bench_once_ms "$BENCH_DIR/../scripts/vm-build-rootfs.sh" "$work/script.img") || script=-
	bench_row "scripts/vm-build-rootfs.sh (root, mmdebstrap + mkfs)" "$script" ms "" "" "one run"
	pd=$(PADDOCK_HOME=$work/home PADDOCK_VM_CACHE_HOME=$work PADDOCK_VM_TEMPLATE=0 \
		bench_once_ms "$PADDOCK" run --rm --backend vm --workspace none "${res[@]}" -- true) || pd=-
	bench_row "first vm run without a base disk (builds vm-base, boots)" "$pd" ms "$script" "the script" "one run"
	second=$(PADDOCK_HOME=$work/home PADDOCK_VM_CACHE_HOME=$work PADDOCK_VM_TEMPLATE=0 \
		bench_once_ms "$PADDOCK" run --rm --backend vm --workspace none -- true) || second=-
	bench_row "the second run (the image reused, booted)" "$second" ms "" "" "one run"
	rm -rf "$work"
}

# probe paddock first: its first vm run fetches the kernel the anchor should boot too
PD_VM=0
bench_paddock_works vm && PD_VM=1
KERNEL=${KERNEL:-$(paddock_kernel || fetch_kernel)}
[ -s "$KERNEL" ] || bench_die "no guest kernel"
INITRD=$(build_initramfs)
[ -s "$INITRD" ] || bench_die "no initramfs"
ACCEL=$(choose_accel)
BENCH_RUNS=$VM_RUNS
BENCH_WARMUP=${BENCH_VM_WARMUP:-1}

bench_header "vm start-up, accel=$ACCEL, ${VM_MEM} MiB guest (issue 5) — $(bench_machine)"
qemu_cmd "$KERNEL" "$ACCEL"
raw=$(bench_time_ms "${QEMU[@]}") || bench_die "raw qemu boot failed (see $BENCH_WORK/vm-anchor-console.log)"
bench_row "raw qemu -M microvm, ELF vmlinux (PVH), init powers off" "$raw" ms "" "" "$(basename "$KERNEL")"
if [ -s "$CACHE/bzImage" ] && [ "${BENCH_VM_BZIMAGE:-1}" = 1 ]; then
	qemu_cmd "$CACHE/bzImage" "$ACCEL"
	bz=$(bench_time_ms "${QEMU[@]}") || bz=-
	bench_row "raw qemu -M microvm, bzImage, init powers off" "$bz" ms "$raw" "raw ELF"
fi
qemu_cmd "$KERNEL" "$ACCEL"
rss=$(bench_peak_rss_median_kb 3 "${QEMU[@]}") || rss=-
bench_row "peak RSS: raw qemu (GNU time %M)" "$rss" KiB "" "" "guest RAM ${VM_MEM} MiB, mostly untouched"

if [ $PD_VM = 1 ]; then
	# no project to copy in: the anchor boots nothing of the sort either
	PD=("$PADDOCK" run --rm --backend vm --workspace none --memory "${VM_MEM}M")
	"$PADDOCK" run --help 2>&1 | grep -q -- '--accel' && PD+=(--accel "$ACCEL")
	PD+=(--)
	# fresh boxes are restored from a template of a booted guest (docs/vm-templates.md): make
	# sure this configuration's exists (its builder runs after the first box), then time both
	export PADDOCK_VM_TEMPLATE_DIR=$BENCH_WORK/vm-templates
	"${PD[@]}" true >/dev/null 2>&1
	for _ in $(seq 240); do compgen -G "$PADDOCK_VM_TEMPLATE_DIR/*.state" >/dev/null && break; sleep 0.5; done
	compgen -G "$PADDOCK_VM_TEMPLATE_DIR/*.state" >/dev/null || bench_log "no template was built: the restored row boots"
	pd=$(bench_time_ms "${PD[@]}" true) || pd=-
	bench_row "paddock run --rm --backend vm -- true (restored from its template)" "$pd" ms "$raw" "raw qemu" "target <= 1.15x"
	pdcold=$(PADDOCK_VM_TEMPLATE=0 bench_time_ms "${PD[@]}" true) || pdcold=-
	bench_row "paddock run --rm --backend vm -- true (booted: PADDOCK_VM_TEMPLATE=0)" "$pdcold" ms "$raw" "raw qemu"
	pdrss=$(bench_peak_rss_median_kb 3 "${PD[@]}" true) || pdrss=-
	bench_row "peak RSS: paddock vm run (GNU time %M, max of qemu/supervisor)" "$pdrss" KiB "$rss" "raw qemu"
	vm_memory
	vm_memory 0
	vm_exec_heavy
	[ "${BENCH_VM_BASE:-0}" = 1 ] && vm_base_cold
else
	bench_log "PADDOCK=${PADDOCK:-unset}: paddock side not available yet"
	bench_row "paddock run --rm --backend vm -- true" - ms "" - "$NA"
	bench_row "host RSS overhead of QEMU + supervisor" - KiB "" - "$NA"
	bench_row "memory returned by the balloon after guest frees 256 MB" - "%" "" - "$NA"
fi
