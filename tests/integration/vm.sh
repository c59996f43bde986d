#!/bin/bash
# tests/integration/vm.sh — what only the vm backend has: its own kernel, a private disk over a
# shared read-only base image, no host share / monitor / vsock in the guest, the bounded
# serial console, the network through the supervisor, and a QEMU killed mid-run. Each test
# runs only with PD_BACKEND=vm (tests/run.sh's vm pass); elsewhere it ends as "skip".
. "$(dirname "$0")/../lib.sh"

REG=$(cd "$(dirname "$0")/../registry" && pwd)
vm_image() { echo "${PADDOCK_VM_IMAGE:-${PADDOCK_VM_CACHE_HOME:-$PADDOCK_HOME}/cache/vm-rootfs/rootfs.img}"; }

t_guest_runs_its_own_kernel() {
	pd_only vm "a guest kernel"
	local k
	k=$(pd_run -- uname -r)
	assert_ne "$k" "$(uname -r)" "the box must not run on the host kernel"
	assert_contains "$(pd_run -- cat /proc/cmdline)" "paddock.root=vda"
	# doctor looks where the boxes do (a shared PADDOCK_VM_CACHE_HOME included)
	local doc
	doc=$(pd doctor 2>&1 || true)
	assert_contains "$doc" "guest kernel $k"
	assert_not_contains "$doc" "MISSING  no guest kernel"
	# and whether QEMU keeps huge pages, with the page fault cost that decided it
	assert_contains "$doc" "huge pages: "
	assert_contains "$doc" "a page fault costs "
	assert_contains "$(PADDOCK_VM_THP=0 pd doctor 2>&1 || true)" "huge pages: off for QEMU (PADDOCK_VM_THP=0)"
}

# virtio device ids: 1 net, 2 block, 3 console, 4 rng, 5 balloon; 9 would be 9p, 19 vsock,
# 26 virtiofs. (Every box has its NIC: --net none is a network that refuses everything.)
# --accel is the box's: kept in its config (a restart uses it too), on QEMU's command line,
# and kvm where KVM does not work is refused with the reason, never run on TCG instead.
t_accel_is_the_boxs_choice() {
	pd_only vm "an accelerator"
	pd create --workspace none --accel tcg acx >/dev/null
	assert_contains "$(tr '\0' ' ' </proc/"$(pgrep -f -n "paddock-acx ")"/cmdline)" "-accel tcg"
	pd stop acx && pd start acx
	assert_contains "$(tr '\0' ' ' </proc/"$(pgrep -f -n "paddock-acx ")"/cmdline)" "-accel tcg"
	pd rm -f acx >/dev/null
	local out st=0
	out=$(pd run --rm --workspace none --accel kvm -- true 2>&1) || st=$?
	if [ "$st" != 0 ]; then
		assert_eq "$st" 125
		assert_contains "$out" "--accel kvm, but"
	fi
	assert_eq "$(ls "$PADDOCK_HOME/boxes" 2>/dev/null)" "" "a refused box left state behind"
}

# Under TCG a guest's user space runs at fixed addresses (norandmaps: every exec reuses the
# translations of the last one; ~3x faster execs, translated code bounded by the code in use)
# unless the box asks for --guest-aslr, which its config keeps for restarts; TCG's translation
# buffer is a quarter of the guest's RAM, at least 128 MiB, instead of QEMU's 1 GiB. Under KVM
# the guest always has its ASLR and there is no translation buffer.
t_tcg_guest_aslr_and_code_buffer() {
	pd_only vm "a guest's ASLR"
	# two processes map their libc at one address, or at two
	local libc='for i in 1 2; do grep -m1 "libc.so" /proc/self/maps | cut -d- -f1; done | sort -u | wc -l'
	local q cmd size
	pd create --workspace none --memory 512M asl >/dev/null
	q=$(pgrep -f -n "paddock-asl ")
	cmd=$(tr '\0' ' ' </proc/"$q"/cmdline)
	if [[ $cmd == *"-accel tcg"* ]]; then
		assert_contains "$cmd" "-accel tcg,tb-size=128 "
		assert_eq "$(pd exec asl -- cat /proc/sys/kernel/randomize_va_space)" 0
		assert_eq "$(pd exec asl -- sh -c "$libc")" 1 "without ASLR two execs map libc at one address"
		assert_contains "$(pd doctor 2>&1)" "no ASLR unless --guest-aslr"
		# the buffer QEMU reserved for translated code is the cap (it was 1 GiB, and full after
		# a few hundred execs under ASLR)
		size=$(awk '/^[0-9a-f]+-[0-9a-f]+ rwxp /{m=1; next} /^[0-9a-f]+-[0-9a-f]+ /{m=0}
			/^Size:/{if(m){print $2; exit}}' /proc/"$q"/smaps)
		[ -n "$size" ] && [ "$size" -le 131072 ] || fail "TCG's code buffer is ${size:-missing} KiB, not <= 128 MiB"
	else
		assert_not_contains "$cmd" "tb-size"
		assert_eq "$(pd exec asl -- cat /proc/sys/kernel/randomize_va_space)" 2
	fi
	pd rm -f asl >/dev/null
	# --guest-aslr: randomised under any accelerator, also after a restart
	pd create --workspace none --guest-aslr asl2 >/dev/null
	assert_eq "$(pd exec asl2 -- cat /proc/sys/kernel/randomize_va_space)" 2
	assert_eq "$(pd exec asl2 -- sh -c "$libc")" 2 "with ASLR two execs map libc at two addresses"
	pd stop asl2 && pd start asl2
	assert_eq "$(pd exec asl2 -- cat /proc/sys/kernel/randomize_va_space)" 2
	assert_not_contains "$(pd exec asl2 -- cat /proc/cmdline)" "norandmaps"
	pd rm -f asl2 >/dev/null
}

t_volumes_are_refused() {
	pd_only vm "host volumes"
	local d err
	d=$(mktemp -d)
	err=$(pd_run -v "$d:/data" -- true 2>&1) && fail "a host directory was shared into a guest"
	rmdir "$d"
	assert_contains "$err" "shares no host directory"
	assert_status 2 pd_run -v "/tmp:/data" -- true
	assert_status 2 pd_run --workspace ro -- true
	assert_status 2 pd_run --workspace rw -- true
	assert_eq "$(ls "$PADDOCK_HOME/boxes" 2>/dev/null)" "" "a refused box left state behind"
}

t_guest_sees_no_host_share_monitor_or_vsock() {
	pd_only vm "virtio devices of a guest"
	local out
	out=$(pd_run --user root -- sh -c 'cat /sys/bus/virtio/devices/*/device | sort | tr "\n" " "; echo; cat /proc/mounts; ls /dev')
	assert_eq "$(echo "$out" | head -1)" "0x0001 0x0002 0x0003 0x0004 0x0005 "
	assert_not_contains "$out" "9p"
	assert_not_contains "$out" "virtiofs"
	assert_not_contains "$out" "vsock"
	assert_not_contains "$out" "hvc"
}

t_guest_network_is_the_supervisors() {
	pd_only vm "the guest's virtio-net"
	local out
	out=$(pd_run --net balanced -- sh -c 'cat /etc/resolv.conf; getent hosts deb.debian.org; cat /proc/net/route')
	assert_contains "$out" "nameserver 198.19.0.3"
	assert_contains "$out" "198.18."
	assert_contains "$out" "010013C6" # default route via 198.19.0.1
	# the proxy answers, and refuses what the policy does not allow
	out=$(pd_run --net balanced -- curl -sS -m 10 -o /dev/null -w '%{http_code}' http://denied.invalid/ || true)
	assert_eq "$out" "403"
	# --net none (the default): the same interface, and nothing resolves or connects
	assert_status 2 pd_run -- getent hosts deb.debian.org
	out=$(pd_run -- curl -sS -m 10 --noproxy '*' http://198.18.0.1/ 2>&1 || true)
	assert_contains "$out" "onnect"
}

# Kata CVE-2020-2025: root in the guest overwrites its disk; the base image is untouched and
# the next box from it boots clean.
t_root_wipes_its_disk_base_and_next_box_unchanged() {
	pd_only vm "guest disks"
	local img before tpl tbefore
	img=$(vm_image)
	before=$(sha256sum "$img" | cut -d' ' -f1)
	# the templates fresh boxes are restored from (vm_template.h) must not change either
	tpl=$(tpl_dir)
	tbefore=$(cd "$tpl" 2>/dev/null && sha256sum -- *.state *.qcow2 2>/dev/null)
	pd create wipe >/dev/null
	pd exec --user root wipe -- sh -c 'echo gone >/etc/os-release; dd if=/dev/zero of=/dev/vda bs=1M count=64 conv=fsync 2>/dev/null; sync' || true
	pd rm -f wipe
	assert_eq "$(sha256sum "$img" | cut -d' ' -f1)" "$before" "base image changed"
	[ -z "$tbefore" ] || assert_eq "$(cd "$tpl" && sha256sum -- $(echo "$tbefore" | awk '{print $2}'))" "$tbefore" "a template changed"
	assert_contains "$(pd_run -- cat /etc/os-release)" "Debian"
}

# --disk on vm: the guest's disk grows by SIZE and the image's own free space is held back,
# so what the box can write is SIZE (give or take a MiB) whatever the image; the overlay on
# the host is bounded by it; a restart keeps what the box used
t_disk_size_is_what_the_box_can_write() {
	pd_only vm "guest disks (ns: tests/escape/resources.sh)"
	local avail size out
	avail=$(PADDOCK_VM_TEMPLATE=0 pd_run --disk 3G -- df -B1M --output=avail / | tail -1)
	[ "$avail" -ge 3030 ] && [ "$avail" -le 3080 ] || fail "--disk 3G: $avail MiB available"
	pd create --disk 64M dsk >/dev/null
	avail=$(pd exec dsk -- sh -c 'dd if=/dev/zero of=/home/agent/f bs=1M count=40 2>/dev/null; sync; df -B1M --output=avail / | tail -1')
	[ "$avail" -ge 18 ] && [ "$avail" -le 28 ] || fail "--disk 64M less 40M written: $avail MiB available"
	size=$(qemu-img info -U --output=json "$PADDOCK_HOME/boxes/dsk/disk.qcow2" | python3 -c 'import json,sys; print(json.load(sys.stdin)["virtual-size"])')
	[ "$size" -le $(( $(stat -c %s "$(vm_image)") + 96 * 1048576 )) ] || fail "overlay of $size bytes"
	pd stop dsk >/dev/null
	pd start dsk >/dev/null
	# root in the guest (uid 0 without capabilities) cannot hand itself the held-back space,
	# nor lift its pids limit or change the guest's sysctls: /sys and /proc/sys are read-only
	out=$(pd exec --user root dsk -- sh -c 'for f in /sys/fs/ext4/vda/reserved_clusters /sys/fs/cgroup/box/pids.max /proc/sys/vm/dirty_expire_centisecs; do
		[ -e $f ] || { echo "$f missing"; continue; }; echo 0 2>/dev/null >$f && echo "$f written"; done; echo done')
	assert_eq "$out" "done"
	avail=$(pd exec --user root dsk -- sh -c 'dd if=/dev/zero of=/root/g bs=1M count=100 2>/dev/null; df -B1M --output=avail / | tail -1')
	assert_eq "$(echo $avail)" "0"
	pd rm -f dsk
}

# where this run's templates live (tests/run.sh sets PADDOCK_VM_TEMPLATE_DIR for the vm pass)
tpl_dir() { echo "${PADDOCK_VM_TEMPLATE_DIR:-${PADDOCK_VM_CACHE_HOME:-$PADDOCK_HOME}/cache/vm-templates}"; }

# wait_template DIR: the detached builder's template appears (a TCG boot in the background)
wait_template() {
	for _ in $(seq 600); do
		compgen -G "$1/*.state" >/dev/null && return 0
		sleep 0.5
	done
	fail "no template appeared in $1: $(ls -la "$1"; cat "$1"/*.console 2>/dev/null | tail -5)"
}

# A fresh box is restored from a snapshot of a booted guest (vm_template.h): it still gets its
# own name, the current time and its own randomness; PADDOCK_VM_TEMPLATE=0 boots instead.
t_fresh_boxes_resume_from_a_template_with_their_own_name_clock_and_entropy() {
	pd_only vm "templates of booted guests"
	local dir out a b now t
	dir=$(mktemp -d /tmp/pd-tpl.XXXXXX)
	export PADDOCK_VM_TEMPLATE_DIR=$dir
	out=$(PADDOCK_DEBUG=1 pd_run -- true 2>&1)
	assert_contains "$out" "not made yet: booting"
	wait_template "$dir" || return 1
	assert_eq "$(stat -c %a "$dir"/*.state "$dir"/*.qcow2 | sort -u)" "400" "a template is the owner's alone"
	a=$(PADDOCK_DEBUG=1 pd run --rm --backend vm --name tpl-a -- sh -c \
		'hostname; date +%s; cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1' 2>&1)
	now=$(date +%s)
	assert_contains "$a" "restored by vm"
	assert_contains "$a" "$(printf '\ntpl-a\n')"
	t=$(echo "$a" | grep -E '^[0-9]{10}$' | head -1)
	[ -n "$t" ] && [ $((now - t)) -le 10 ] && [ $((t - now)) -le 2 ] ||
		fail "the restored guest's clock says '$t', the host's $now"
	b=$(pd run --rm --backend vm --name tpl-b -- sh -c \
		'hostname; cat /proc/sys/kernel/random/boot_id; head -c 16 /dev/urandom | od -An -tx1' 2>&1)
	assert_contains "$b" "tpl-b"
	assert_ne "$(echo "$a" | tail -2)" "$(echo "$b" | tail -2)" "two restored boxes share boot id or random bytes"
	out=$(PADDOCK_VM_TEMPLATE=0 PADDOCK_DEBUG=1 pd_run -- hostname 2>&1)
	assert_contains "$out" "started by vm"
	assert_not_contains "$out" "restored"
	rm -rf "$dir"
}

# the resident KiB of QEMU $1's guest RAM (its one anonymous mapping of exactly 512 MiB)
guest_ram_kb() {
	awk '/^[0-9a-f]+-[0-9a-f]+ /{m=0} /^Size:/{m=($2==524288)} /^Rss:/{if(m){print $2; exit}}' "/proc/$1/smaps"
}

# A box restored from a template holds in host memory what its guest uses, not its whole RAM.
# The restore writes only the pages that hold something (the template's state has no zero
# markers for the guest's RAM: QEMU used to read each page before writing a marker's zeros,
# which where the host has no shared zero page allocated them all); and the guest reports its
# free memory again, which it does not do for pages it already reported, so the template's
# guest starts its balloon driver only once resumed (before, 364 of 512 MB stayed resident here
# for good; docs/vm-templates.md).
t_a_restored_box_holds_only_what_its_guest_uses() {
	pd_only vm "templates of booted guests"
	local dir q ram
	dir=$(mktemp -d /tmp/pd-tpl.XXXXXX)
	export PADDOCK_VM_TEMPLATE_DIR=$dir
	# the template comes from a box of the same configuration
	pd create --workspace none --memory 512M rss0 >/dev/null
	pd rm -f rss0 >/dev/null
	wait_template "$dir" || return 1
	# the restore itself leaves the guest RAM's free pages alone: the template's state has
	# no zero markers for it (migstream.h), so QEMU never reads, and allocates, those pages
	# (before: all 512 MiB resident for the 2 s until the guest's first report)
	local peak_file=$dir/rss-peak sampler
	(
		peak=0 qp=
		while :; do
			[ -n "$qp" ] || qp=$(pgrep -f -n "paddock-rss " || true)
			v=
			[ -z "$qp" ] || v=$(guest_ram_kb "$qp" 2>/dev/null || true)
			if [ -n "$v" ] && [ "$v" -gt "$peak" ]; then
				peak=$v
				echo "$peak" >"$peak_file"
			fi
			sleep 0.05
		done
	) &
	sampler=$!
	pd create --workspace none --memory 512M rss >/dev/null
	pd exec rss -- true
	kill "$sampler"
	wait "$sampler" 2>/dev/null || true
	q=$(pgrep -f -n "paddock-rss ")
	grep -q -- "-incoming" "/proc/$q/cmdline" || fail "the box was not restored from the template"
	ram=$(cat "$peak_file" 2>/dev/null)
	[ -n "$ram" ] || fail "no sample of the restoring QEMU's guest RAM"
	[ "$ram" -lt $((256 * 1024)) ] || fail "restoring a 512 MiB guest made $ram KiB of its RAM resident"
	# the guest-RAM mapping, for up to 20 s:
	# free page reporting waits 2 s after pages are freed, and TCG is slow under load
	for _ in $(seq 40); do
		[ -r "/proc/$q/smaps" ] || fail "the box's QEMU exited: $(pd ls)" # (its logs follow: pd_leave_home)
		ram=$(guest_ram_kb "$q")
		[ -n "$ram" ] || fail "no 512 MiB mapping in QEMU $q"
		[ "$ram" -lt $((256 * 1024)) ] && break
		sleep 0.5
	done
	[ "$ram" -lt $((256 * 1024)) ] || fail "a restored idle 512 MiB guest still holds $ram KiB of host memory after 20 s"
	# and what stays is what the guest does not hold free: free blocks down to 256 KiB are
	# given back, the 16 MiB DMA zone's too (at the kernel's default 2 MiB neither was: 22 MB
	# more than this stayed resident)
	local order nonfree last=0
	order=$(pd exec rss -- cat /sys/module/page_reporting/parameters/page_reporting_order)
	assert_eq "$order" 6 "free page reporting order"
	for _ in $(seq 40); do
		sleep 0.5
		ram=$(guest_ram_kb "$q")
		[ "$ram" = "$last" ] && break
		last=$ram
	done
	nonfree=$(pd exec rss -- awk '/^MemFree:/{print 524288 - $2}' /proc/meminfo)
	sleep 3
	ram=$(guest_ram_kb "$q")
	[ "$ram" -le $((nonfree + 14 * 1024)) ] || fail "the guest holds $nonfree KiB that are not free, its RAM takes $ram KiB of host memory"
	# where QEMU keeps huge pages (doctor says why), the supervisor splits them once the box
	# has settled (3, 8 and 13 s after QEMU's start) and their zero-filled pages go: the guest
	# RAM then holds fewer pages than the guest does not hold free (its kernel's bss and
	# virtio-console's receive buffers are allocated but zero); before, ~75 MB stayed huge
	if [ "$(awk '/^THP_enabled:/{print $2}' "/proc/$q/status")" = 1 ]; then
		local ahp
		for _ in $(seq 40); do
			ahp=$(awk '/^[0-9a-f]+-[0-9a-f]+ /{m=0} /^Size:/{m=($2==524288)} /^AnonHugePages:/{if(m){print $2; exit}}' "/proc/$q/smaps")
			[ "$ahp" -le 8192 ] && break
			sleep 0.5
		done
		[ "$ahp" -le 8192 ] || fail "QEMU keeps huge pages and $ahp KiB of the guest's RAM are still huge"
		ram=$(guest_ram_kb "$q")
		[ "$ram" -le "$nonfree" ] || fail "the guest holds $nonfree KiB that are not free, its split RAM takes $ram KiB"
	fi
	pd rm -f rss >/dev/null
	rm -rf "$dir"
}

# A template QEMU cannot load (corrupt, or from another QEMU) is dropped and the box boots.
t_a_broken_template_is_dropped_and_the_box_boots() {
	pd_only vm "templates of booted guests"
	local dir out st
	dir=$(mktemp -d /tmp/pd-tpl.XXXXXX)
	export PADDOCK_VM_TEMPLATE_DIR=$dir
	# (PADDOCK_DEBUG changes the guest's command line, hence the template: both runs have it)
	PADDOCK_DEBUG=1 pd_run -- true >/dev/null 2>&1
	wait_template "$dir" || return 1
	st=$(compgen -G "$dir/*.state")
	chmod u+w "$st"
	head -c 4096 /dev/urandom >"$st"
	out=$(PADDOCK_DEBUG=1 pd run --rm --backend vm --name broken -- hostname 2>&1)
	assert_contains "$out" "the restore from its template failed"
	assert_contains "$out" "$(printf '\nbroken')"
	[ ! -e "$st" ] || fail "the broken template is still there"
	assert_eq "$(ls "$PADDOCK_HOME/boxes" 2>/dev/null)" "" "the box left state behind"
	rm -rf "$dir"
}

t_console_flood_stays_capped() {
	pd_only vm "the serial console"
	pd create flood >/dev/null
	# 1.5 MB through the UART (~100 KB/s under TCG) against a 1 MiB cap
	pd exec --user root flood -- sh -c 'head -c 1500000 /dev/zero | tr "\0" y >/dev/ttyS0; printf "\033[2Jend-of-flood\n" >/dev/ttyS0'
	local d=$PADDOCK_HOME/boxes/flood total
	for _ in $(seq 50); do pd logs flood --console | grep -q end-of-flood && break; sleep 0.1; done
	total=$(( $(stat -c %s "$d/console.log") + $(stat -c %s "$d/console.log.1") ))
	[ "$total" -le $((1024 * 1024)) ] || fail "console files hold $total bytes"
	[ "$total" -ge $((512 * 1024)) ] || fail "console files hold only $total bytes"
	local out
	out=$(pd logs flood --console)
	assert_contains "$out" "?[2Jend-of-flood" # the newest bytes, escape sequences defused
	pd rm -f flood
}

# A guest that cannot come up says why (QEMU's own words, the console's), not only that the
# control channel closed; nothing of the box is left.
t_a_failed_boot_says_why() {
	pd_only vm "QEMU"
	local out before
	before=$(ls "$(tpl_dir)" 2>/dev/null | sort)
	out=$(pd run --rm --workspace none --memory 1T -- true 2>&1) && fail "a 1 TiB guest started: $out"
	assert_contains "$out" "QEMU said:"
	assert_contains "$out" "guest memory"
	# and no template builder for a configuration that never came up
	sleep 2
	assert_eq "$(ls "$(tpl_dir)" 2>/dev/null | sort)" "$before" "a template builder ran for a failed boot"
	assert_status 2 pd run --rm --workspace none --memory 64M -- true
	assert_status 2 pd run --rm --workspace none --cpus "$(( $(nproc) + 1 ))" -- true
	assert_eq "$(pd ls | tail -n +2)" ""
}

# Ctrl-C while a box is restored from a template keeps the template: the directory is
# shared, and a cancel in the first half second removed it (everyone's next box booted cold)
t_ctrl_c_during_a_restore_keeps_the_template() {
	pd_only vm "templates"
	pd run --rm --workspace none -- true >/dev/null
	wait_template "$(tpl_dir)"
	local before i pid
	before=$(ls "$(tpl_dir)"/*.state | sort)
	for i in 1 2 3; do
		"$PADDOCK" run --rm --backend vm --workspace none -- sleep 100 &
		pid=$!
		sleep 0.$((2 + i))
		kill -INT $pid
		wait $pid || true
	done
	assert_eq "$(ls "$(tpl_dir)"/*.state | sort)" "$before" "a cancelled start removed a template"
	assert_eq "$(pd ls | tail -n +2)" ""
}

# Ctrl-C while the guest boots ends the run at once (it waited up to the boot's 120 s), with
# the signal's status, and leaves nothing
t_ctrl_c_during_boot_ends_the_run() {
	pd_only vm "a boot of seconds"
	local pid st=0 t0
	PADDOCK_VM_TEMPLATE=0 "$PADDOCK" run --rm --backend vm --workspace none --name bootint -- sleep 100 &
	pid=$!
	sleep 1
	t0=$(date +%s%N)
	kill -INT $pid
	wait $pid || st=$?
	assert_eq "$st" "130"
	[ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 5000 ] || fail "the run took more than 5 s to end"
	for _ in $(seq 50); do [ -e "$PADDOCK_HOME/boxes/bootint" ] || break; sleep 0.1; done
	assert_eq "$(pd ls | tail -n +2)" ""
}

# The same for create: its detached supervisor is told, gives the boot up and removes the box
# (create used to wait until the guest was up, then undo it)
t_ctrl_c_during_boot_ends_create() {
	pd_only vm "a boot of seconds"
	local pid st=0 t0 ms
	PADDOCK_VM_TEMPLATE=0 "$PADDOCK" create --backend vm --workspace none crint >/dev/null 2>&1 &
	pid=$!
	sleep 0.4
	t0=$(date +%s%N)
	kill -INT $pid
	wait $pid || st=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	assert_eq "$st" "130"
	# a TCG boot here is 2-3 s from its start, several under load; the cancel takes ~50 ms
	[ "$ms" -lt 1000 ] || fail "create took $ms ms to end"
	assert_eq "$(pd ls | tail -n +2)" ""
	[ ! -e "$PADDOCK_HOME/boxes/crint" ] || fail "the box's directory is left"
	for _ in $(seq 50); do pgrep -f "paddock-crint" >/dev/null || break; sleep 0.1; done
	! pgrep -f "paddock-crint" >/dev/null || fail "its QEMU still runs"
}

# QEMU killed under a running box: ls says so, the disk (and so the workspace) survives, and
# the box starts again with its files.
t_qemu_killed_midrun_box_recovers() {
	pd_only vm "QEMU"
	echo base >f.txt
	echo keep >g.txt
	# THP off asked for explicitly: paddock keeps it on hosts whose page faults are slow
	# (qemu_spawn.c), which this machine may be
	PADDOCK_VM_THP=0 pd create --workspace copy qk >/dev/null
	pd exec qk -- sh -c 'echo changed >/workspace/f.txt; rm /workspace/g.txt; echo new >/workspace/n.txt; sync'
	# and one without a sync: the guest writes back after 1 s and commits ext4's journal every
	# second (ext4's default would lose up to 30 s of data, 5 s of metadata)
	pd exec qk -- sh -c 'echo late >/workspace/late.txt'
	sleep 5
	local qpid
	qpid=$(pgrep -f "paddock-qk " | head -1)
	[ -n "$qpid" ] || fail "no QEMU process for the box"
	# QEMU runs without transparent huge pages when so chosen (a guest write must not cost
	# the host 2 MiB)
	assert_eq "$(awk '/^THP_enabled:/{print $2}' "/proc/$qpid/status")" "0"
	kill -KILL "$qpid"
	for _ in $(seq 100); do pd ls --json | grep -q '"running"' || break; sleep 0.1; done
	assert_not_contains "$(pd ls)" "running"
	for _ in $(seq 50); do pd logs qk | grep -q 'died' && break; sleep 0.1; done
	assert_contains "$(pd logs qk)" "died: its QEMU was killed (SIGKILL: a kill from outside); its disk is kept"
	pd start qk
	# the disk's workspace is the box's own: nothing copied over it (edits kept, the deleted
	# file stays deleted)
	assert_eq "$(pd exec qk -- cat /workspace/n.txt)" "new"
	assert_eq "$(pd exec qk -- cat /workspace/late.txt)" "late"
	assert_eq "$(pd exec qk -- cat /workspace/f.txt)" "changed"
	assert_eq "$(pd exec qk -- sh -c 'ls /workspace/g.txt 2>&1 || true')" "ls: cannot access '/workspace/g.txt': No such file or directory"
	assert_contains "$(pd diff qk)" "n.txt"
	# a clean stop and start keep it too, without a saved tar of it
	pd stop qk
	[ ! -e "$PADDOCK_HOME/boxes/qk/workspace.tar" ] || fail "a vm box's stop saved its workspace as a tar"
	pd start qk
	assert_eq "$(pd exec qk -- cat /workspace/f.txt)" "changed"
	# a disk whose first copy-in never finished (no marker) is not taken for the box's own:
	# the box starts on a fresh disk with the project copied in again
	pd stop qk
	rm -f "$PADDOCK_HOME/boxes/qk/workspace.on-disk"
	pd start qk
	assert_eq "$(pd exec qk -- cat /workspace/f.txt)" "base"
	assert_eq "$(pd exec qk -- cat /workspace/g.txt)" "keep"
	[ -e "$PADDOCK_HOME/boxes/qk/workspace.on-disk" ] || fail "no marker after a completed copy-in"
	pd rm -f qk
}
# An image on vm: its tree becomes a raw ext4 disk once (owners as in the image: root's shift
# and an ordinary user's own id are mapped back), the guest boots from a qcow2 overlay over
# it, finds an agent user and home it did not bring, and cannot change the disk; gc keeps the
# disk while a box uses it. A profile built on ns runs on vm from the same image.
t_image_runs_on_vm() {
	pd_only vm "images as vm disks"
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox --symlink bin/sh:busybox
	pd image import --name local/bb:1 "$PADDOCK_HOME/bb" >/dev/null
	local out disk sum
	out=$(pd_run -T --workspace none --image local/bb:1 -- /bin/busybox sh -c \
		'cat /etc/hello; ls /olddir; id -u; stat -c "%u %g" /etc/hello /keep/x; ls -d /home/agent; echo x > /etc/hello; cat /etc/hello' 2>&1)
	assert_contains "$out" "making the vm disk of this image (once)"
	assert_contains "$out" "hello from layer 1"
	assert_contains "$out" "$(printf '1000\n0 0\n0 0\n/home/agent')"
	disk=$(ls "$PADDOCK_HOME"/images/vmdisk/*)
	sum=$(sha256sum "$disk" | cut -d" " -f1)
	# the second box: the disk is reused, the first box's write is not there
	out=$(pd_run -T --workspace none --image local/bb:1 -- /bin/busybox cat /etc/hello 2>&1)
	assert_not_contains "$out" "making the vm disk"
	assert_eq "$out" "hello from layer 1"
	assert_eq "$(sha256sum "$disk" | cut -d" " -f1)" "$sum" "the image's disk changed"
	# gc keeps the disk of an existing box, removes it with the last user
	pd create --backend vm --workspace none --image local/bb:1 vmimg >/dev/null 2>&1
	pd image rm local/bb:1 >/dev/null
	[ -e "$disk" ] || fail "gc removed the disk of an existing box"
	assert_eq "$(pd exec vmimg -- /bin/busybox cat /keep/x)" "x"
	pd rm -f vmimg >/dev/null
	pd image gc >/dev/null
	[ ! -e "$disk" ] || fail "gc left the disk of a removed image"
	# a profile: built on ns (its install commands), run on vm from the same image
	pd image import --name local/bb:1 "$PADDOCK_HOME/bb" >/dev/null
	export XDG_CONFIG_HOME=$PADDOCK_HOME/config
	mkdir -p "$XDG_CONFIG_HOME/paddock/agents"
	echo '{"displayName": "V", "baseImage": "local/bb:1", "installCommands": ["echo built-on-ns > /opt/note"],
	       "launchCommand": ["/bin/busybox", "cat", "/opt/note"]}' >"$XDG_CONFIG_HOME/paddock/agents/vp.json"
	if pd_root_available; then
		out=$(pd run --rm -T --backend vm --workspace none vp 2>&1)
		assert_contains "$out" "building the vp image"
		assert_contains "$out" "built-on-ns"
	fi
}

# PADDOCK_CA_FILE on vm: no host file reaches a guest, so the supervisor copies the bundle in
# at every boot (the guest's /run is gone after a stop), and the TLS variables point at it
t_ca_bundle_reaches_vm_boxes() {
	pd_only vm "the CA bundle copied into a guest"
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox --symlink bin/sh:busybox
	pd image import --name local/bb:1 "$PADDOCK_HOME/bb" >/dev/null
	printf -- '-----BEGIN CERTIFICATE-----\ntest-ca\n-----END CERTIFICATE-----\n' >"$PADDOCK_HOME/ca.pem"
	PADDOCK_CA_FILE=$PADDOCK_HOME/ca.pem pd create --backend vm --workspace none --image local/bb:1 vmca >/dev/null 2>&1 ||
		fail "create with PADDOCK_CA_FILE failed"
	local probe='/bin/busybox cat /run/paddock/ca.pem; /bin/busybox stat -c "%a %u" /run/paddock/ca.pem; echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"'
	local want
	want="$(cat "$PADDOCK_HOME/ca.pem")
644 0
/run/paddock/ca.pem /run/paddock/ca.pem"
	assert_eq "$(pd exec vmca -- /bin/busybox sh -c "$probe")" "$want"
	pd stop vmca >/dev/null
	pd start vmca >/dev/null
	assert_eq "$(pd exec vmca -- /bin/busybox sh -c "$probe")" "$want"
	# the bundle gone from the host: the box does not start without it, and says why
	rm "$PADDOCK_HOME/ca.pem"
	pd stop vmca >/dev/null
	local out
	out=$(pd start vmca 2>&1) && fail "a box started without its CA bundle"
	assert_contains "$out" "CA bundle"
	pd rm -f vmca >/dev/null
}
# A host without a base disk of its own (neither scripts/vm-build-rootfs.sh's nor one named by
# PADDOCK_VM_IMAGE): a vm box that names no image gets paddock's vm-base image, built once
# through the image store (mmdebstrap, then the script's tools installed in a build box) and
# reused; doctor says so; no profile can take its name; a PADDOCK_VM_IMAGE that names a
# missing disk stays an error. As root and as an ordinary user (mmdebstrap's unshare mode).
t_a_host_without_a_base_disk_builds_the_vm_base_image() {
	pd_only vm "the vm-base image"
	local shared=${PADDOCK_VM_CACHE_HOME:-$PADDOCK_HOME}
	[ -d "$shared/cache/kernel" ] || fail "no guest kernel cached at $shared/cache/kernel"
	# the same kernel, but no base disk beside it
	export PADDOCK_VM_CACHE_HOME=$PADDOCK_HOME/vmcache PADDOCK_VM_TEMPLATE=0
	unset PADDOCK_VM_IMAGE
	mkdir -p "$PADDOCK_VM_CACHE_HOME/cache"
	ln -s "$shared/cache/kernel" "$PADDOCK_VM_CACHE_HOME/cache/kernel"
	local res out
	mapfile -t res < <(pd_resolve_args deb.debian.org security.debian.org)
	out=$(pd_run --workspace none "${res[@]}" -- sh -c 'python3 -c "print(6 * 7)"; git --version; id -un' \
		2>"$PADDOCK_HOME/build.log") || { tail -n 40 "$PADDOCK_HOME/build.log"; fail "the first vm box failed"; }
	assert_contains "$out" "42"
	assert_contains "$out" "git version"
	assert_contains "$out" "agent"
	grep -q "building the vm-base image" "$PADDOCK_HOME/build.log" || fail "the vm-base image was not built"
	pd_run --workspace none -- true 2>"$PADDOCK_HOME/second.log" || fail "the second vm box failed"
	! grep -q "building" "$PADDOCK_HOME/second.log" || fail "the vm-base image was built again"
	assert_contains "$(pd image ls)" "localhost/paddock/vm-base:"
	assert_contains "$(pd doctor 2>&1)" "base image: paddock's vm-base image"
	export XDG_CONFIG_HOME=$PADDOCK_HOME/config
	mkdir -p "$XDG_CONFIG_HOME/paddock/agents"
	echo '{"displayName": "X", "baseImage": "debian:bookworm-slim", "installCommands": [],
	       "launchCommand": ["true"]}' >"$XDG_CONFIG_HOME/paddock/agents/vm-base.json"
	out=$(pd profile show vm-base 2>&1) && fail "a profile took the vm-base image's name"
	assert_contains "$out" "paddock's own image for vm boxes"
	assert_not_contains "$(pd profile ls)" "vm-base"
	out=$(PADDOCK_VM_IMAGE=$PADDOCK_HOME/none.img pd_run --workspace none -- true 2>&1) &&
		fail "a box ran without the base disk PADDOCK_VM_IMAGE names"
	assert_contains "$out" "$PADDOCK_HOME/none.img"
}

# A profile's mounts on vm: no host path reaches a guest, so they are copied in before the
# agent starts (a directory's contents, a file under its own name); a file whose name differs
# from the box path is left out with a note; a read-write directory is offered back through
# diff/apply --mount. Root only: it builds a Debian base (mmdebstrap).
t_profile_mounts_are_copied_into_vm() {
	pd_only vm "copying profile mounts into a guest"
	[ "$(id -u)" = 0 ] || { echo "skip: builds a Debian base image with mmdebstrap (root)"; exit 77; }
	pd image build debian:bookworm-slim >/dev/null 2>&1 || fail "image build debian:bookworm-slim failed"
	export HOME=$PADDOCK_HOME/home XDG_CONFIG_HOME=$PADDOCK_HOME/config
	mkdir -p "$HOME/shared" "$HOME/rw/sub" "$XDG_CONFIG_HOME/paddock/agents"
	echo shared-note >"$HOME/shared/note"
	echo file-content >"$HOME/f.txt"
	echo keep >"$HOME/rw/keep"; echo old >"$HOME/rw/sub/edit"; echo old >"$HOME/rw/both"; echo gone >"$HOME/rw/del"
	echo '{"displayName": "M", "baseImage": "debian:bookworm-slim", "installCommands": [],
	       "launchCommand": ["sh", "-c", "cat /home/agent/shared/note /home/agent/f.txt; ls /root/other.txt; cd /home/agent/rw && echo new >sub/edit && echo box >both && echo add >added && rm del && ln -s /etc/passwd out"],
	       "mounts": [{"hostPath": "~/shared", "containerPath": "/home/agent/shared", "readOnly": true},
	                  {"hostPath": "~/f.txt", "containerPath": "/home/agent/f.txt"},
	                  {"hostPath": "~/rw", "containerPath": "/home/agent/rw"},
	                  {"hostPath": "~/f.txt", "containerPath": "/root/other.txt"}]}' >"$XDG_CONFIG_HOME/paddock/agents/mnt.json"
	local out
	out=$(pd run -T --backend vm --workspace none --name mntbox mnt 2>&1) || true
	assert_contains "$out" "shared-note"
	assert_contains "$out" "file-content"
	assert_contains "$out" "copied $HOME/shared to /home/agent/shared"
	assert_contains "$out" "copied $HOME/f.txt to /home/agent/f.txt (a vm box shares no host path; changes stay in the box until paddock cp brings them back)"
	assert_contains "$out" "paddock apply --mount /home/agent/rw mntbox brings them back"
	assert_contains "$out" "is not copied to /root/other.txt"
	# a read-write directory comes back through diff/apply --mount: what changed, a conflict
	# when the host changed the same file since, an escaping symlink refused, nothing else
	echo host >"$HOME/rw/both"
	out=$(pd diff --stat --mount /home/agent/rw mntbox 2>&1)
	assert_contains "$out" "M sub/edit"
	assert_contains "$out" "A added"
	assert_contains "$out" "D del"
	assert_not_contains "$out" "keep"
	[ "$(cat "$HOME/rw/sub/edit")" = old ] || fail "diff wrote to the host"
	out=$(pd apply --mount /home/agent/rw mntbox 2>&1) && fail "apply with a conflict and a refused link exited 0"
	assert_eq "$(cat "$HOME/rw/sub/edit")" "new"
	assert_eq "$(cat "$HOME/rw/added")" "add"
	[ ! -e "$HOME/rw/del" ] || fail "deletion not applied"
	assert_eq "$(cat "$HOME/rw/both")" "host"
	[ ! -L "$HOME/rw/out" ] || fail "an escaping symlink was applied"
	assert_contains "$out" "conflict"
	# the read-only mount and unknown paths are not offered
	out=$(pd diff --mount /home/agent/shared mntbox 2>&1) && fail "a read-only mount was offered back"
	assert_contains "$out" "no copied read-write mount at /home/agent/shared"
	pd rm -f mntbox >/dev/null
	# --rm: the process that booted the box copies them in over the box's own control fd; a
	# read-write directory's changes go with the box, which is said
	out=$(pd run --rm -T --backend vm --workspace none mnt 2>&1) || true
	assert_contains "$out" "shared-note"
	assert_contains "$out" "file-content"
	assert_contains "$out" "copied $HOME/rw to /home/agent/rw (a vm box shares no host path; changes there go with the box at exit"
	assert_eq "$(cat "$HOME/rw/both")" "host"
	ls "$PADDOCK_HOME/boxes" | grep -q . && fail "run --rm left a box behind: $(ls "$PADDOCK_HOME/boxes")"
	return 0
}

run_tests
