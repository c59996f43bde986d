#!/bin/bash
# tests/escape/proc.sh — privileges and processes: capabilities, namespaces, set-user-ID
# binaries, /proc/sys and sysrq, cgroup release_agent, ptrace of init and the parent,
# kill(-1). Each test asserts blocked and host unchanged.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/proc.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

# no capabilities (effective, permitted, bounding, ambient), no_new_privs, seccomp filter
t_confinement() {
	esc_vm_guest_kernel "no paddock seccomp filter or capability drop inside a vm guest yet; its kernel is its own"
	esc_simple confinement
}

# user, mnt, pid, net, uts, ipc, cgroup: all new namespaces
t_ns_distinct() {
	pd_only ns "a vm guest's initial namespaces have the same fixed inode numbers as the host's (another kernel: vm.sh guest_runs_its_own_kernel)"
	esc_begin
	# shellcheck disable=SC2046
	esc_blocked_both -- ns-distinct $(esc_host_ns)
	esc_host_unchanged
}

# su/passwd/chfn/chsh from the host view, plus (host root only) a root-owned 04755 copy of
# the probe and a copy with file capabilities: none may raise euid or capabilities
t_setuid_binary() {
	pd_only ns "a host setuid file bound in (-v); in a vm guest root is the guest's own (--user root is offered), no host path is shared"
	esc_begin
	local s=$ESC_DIR/suid extra=()
	mkdir -m 0755 "$s"
	if [ "$(id -u)" = 0 ]; then
		install -o root -g root -m 04755 "$PD_PROBE" "$s/suid-probe"
		extra+=(/.suid/suid-probe)
		if command -v setcap >/dev/null; then
			install -o root -g root -m 0755 "$PD_PROBE" "$s/fcap-probe"
			setcap 'cap_sys_admin,cap_net_raw,cap_dac_override+ep' "$s/fcap-probe" && extra+=(/.suid/fcap-probe)
		fi
	fi
	esc_blocked_both -v "$s:/.suid:ro" -- setuid-binary
	if [ ${#extra[@]} -gt 0 ]; then
		esc_blocked_both -v "$s:/.suid:ro" -- setuid-binary "${extra[@]}"
	fi
	esc_host_unchanged
}

t_proc_sys_write() {
	esc_vm_guest_root "the guest's /proc/sys and /sys are its own kernel's"
	esc_simple proc-sys-write
}

# The files that hold the box's own limits are checked by owner and mode only: root in the box
# (uid 0, no capabilities) must find them read-only — on vm ext4's reserved clusters
# (--disk), the guest cgroup's pids.max (--pids) and the balloon's free page reporting order
# (how much of the guest's free memory the host gets back), which the test demands exist there.
t_limit_knobs() {
	esc_begin
	local need=()
	[ "$PD_BACKEND" = vm ] && need=(/sys/fs/ext4/vda/reserved_clusters /sys/fs/cgroup/box/pids.max
		/sys/module/page_reporting/parameters/page_reporting_order)
	esc_blocked_both --pids 64 --disk 256M -- limit-knobs "${need[@]}"
	esc_host_unchanged
}

t_sysrq() {
	esc_vm_guest_root "the guest's sysrq reaches the guest's kernel"
	esc_simple sysrq
}

t_cgroup_release_agent() {
	esc_begin
	local ra before=()
	for ra in /sys/fs/cgroup/*/release_agent /sys/fs/cgroup/release_agent; do
		[ -r "$ra" ] && before+=("$ra=$(cat "$ra")")
	done
	esc_blocked_both -- cgroup-release-agent
	for ra in "${before[@]}"; do
		assert_eq "${ra%%=*}=$(cat "${ra%%=*}")" "$ra" "host release_agent changed"
	done
	esc_host_unchanged
}

# PID 1 (paddock-init) and the parent; host pids (the canary, this shell) mean nothing inside
t_ptrace_init_and_parent() {
	esc_begin
	esc_blocked_both -- ptrace "$ESC_CANARY_PID" "$$"
	esc_host_unchanged
}

# kill(-1, SIGKILL) from inside: the host canary lives and the box's init lives long enough
# to report the probe's exit status (0)
t_kill_all() {
	esc_begin
	esc_blocked_both -- kill-all "$ESC_CANARY_PID" "$ESC_LISTENER_PID"
	esc_host_unchanged
}

# A session's child shares the box init's memory until its execve() (session.c spawn). Once
# it has dropped to the agent's uid the agent may SIGSTOP it; init must not freeze with it.
# A PATH of 20000 missing directories widens that window to tens of milliseconds; the probe
# stops the first such child it sees. That exec fails (125) after init's deadline instead of
# hanging, the stopped child is gone, and the box still runs sessions.
t_stopped_session_child_does_not_freeze_init() {
	esc_begin
	local name=spawn-$$ probe=/.probe/paddock-probe lp rc out i hit=
	if [ "$PD_BACKEND" = vm ]; then
		pd create --backend vm --workspace none "$name" >/dev/null || { fail "create"; return 1; }
		pd cp "$PD_PROBE" "$name:/tmp" || { fail "cp probe"; return 1; }
		probe=/tmp/paddock-probe
	else
		pd create --backend "$PD_BACKEND" --workspace none -v "$PD_PROBE:$probe:ro" "$name" >/dev/null ||
			{ fail "create"; return 1; }
	fi
	lp=$(printf '/x:%.0s' $(seq 20000))/usr/bin:/bin
	timeout -k 5 120 "$PADDOCK" exec "$name" -- "$probe" stop-spawns 100 >"$ESC_DIR/stopper" 2>&1 &
	local spid=$!
	for i in $(seq 100); do grep -q scanning "$ESC_DIR/stopper" && break; sleep 0.1; done
	for i in $(seq 40); do
		rc=0
		out=$(timeout -k 5 60 "$PADDOCK" exec -e PATH="$lp" "$name" -- true 2>&1) || rc=$?
		hit=$(sed -n 's/^stopped //p' "$ESC_DIR/stopper")
		[ -n "$hit" ] && break
		[ "$rc" = 0 ] || { fail "an exec failed ($rc): $out (124/137: it hung — init frozen with a stopped child)"; break; }
	done
	wait "$spid"
	cat "$ESC_DIR/stopper"
	if [ -z "$hit" ]; then
		fail "the probe never caught a session's child before its execve(); nothing was tested"
	else
		echo "child $hit stopped; its exec: [exit $rc] $out"
		assert_eq "$rc" 125 "the exec whose child was stopped ends with paddock's error, not a hang" &&
			assert_contains "$out" "did not reach execve()"
		rc=0
		out=$(timeout -k 5 60 "$PADDOCK" exec "$name" -- sh -c "test ! -e /proc/$hit && echo alive" 2>&1) || rc=$?
		assert_eq "$rc:$out" "0:alive" "init serves sessions afterwards and the stopped child is gone"
	fi
	pd rm -f "$name" >/dev/null 2>&1
	esc_host_unchanged
}

# System V shm, queue and semaphore made on the host: not visible (own IPC namespace)
t_sysv_ipc() {
	esc_begin
	local keys=() k
	for k in m q s; do
		esc_ipc "$k"
		keys+=("$ESC_IPC_KEY")
	done
	esc_blocked_both -- sysv-ipc "${keys[@]}"
	esc_host_unchanged
}

run_tests
