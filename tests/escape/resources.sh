#!/bin/bash
# tests/escape/resources.sh — resource exhaustion and persistence: fork bomb, memory hog,
# disk fill, a daemon that tries to outlive its box. Each asserts the limit held, only the
# box suffered, and the host (canaries, paddock itself) is fine.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/resources.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

# paddock still starts boxes after the attack
_esc_paddock_ok() { assert_status 0 pd_run -- true </dev/null; }

# --pids 64: fork stops well below 5000 (at most 64 tasks), for root too (RLIMIT_NPROC does
# not bind root: the pids cgroup must)
t_fork_bomb() {
	esc_begin
	local n u
	for u in $ESC_USERS; do
		esc_blocked --user "$u" --pids 64 -- fork-bomb 5000
		n=$(printf '%s\n' "$ESC_OUT" | sed -n 's/.*forked processes: stopped after \([0-9]*\).*/\1/p')
		if [ -z "$n" ] || [ "$n" -gt 64 ]; then fail "fork count '$n' as $u not within --pids 64"; fi
	done
	esc_host_unchanged
	_esc_paddock_ok
}

# --memory 128M: touching 1 GB ends in an OOM kill (137) or an allocation failure (0)
t_memory_hog() {
	esc_begin
	local u
	for u in $ESC_USERS; do
		esc_probe_run --user "$u" --memory 128M -- memory-hog 1024
		case $ESC_RC in 0 | 137) ;; *) _esc_judge "$ESC_RC" "$ESC_OUT" "memory-hog as $u" ;; esac
	done
	esc_host_unchanged
	_esc_paddock_ok
}

# --disk 64M: the box's writable layer (home) fills up long before 512 MB
t_disk_fill_home() {
	esc_begin
	esc_blocked --disk 64M -- disk-fill /home/agent 512
	esc_blocked --user root --disk 64M -- disk-fill /root 512
	esc_blocked --user root --disk 64M -- disk-fill /usr 512
	esc_host_unchanged
	_esc_paddock_ok
}

# /tmp and /dev/shm: a tmpfs without a size is RAM; the disk or memory limit must hold
# (ENOSPC = 0, or the OOM killer = 137)
t_disk_fill_tmp_and_shm() {
	esc_begin
	local d
	for d in /tmp /dev/shm; do
		esc_probe_run --disk 64M --memory 128M -- disk-fill "$d" 512
		case $ESC_RC in 0 | 137) ;; *) _esc_judge "$ESC_RC" "$ESC_OUT" "disk-fill $d" ;; esac
	done
	esc_host_unchanged
	_esc_paddock_ok
}

# a double-forked, signal-ignoring daemon dies with its box
t_daemon_outlives_box() {
	esc_begin
	local u m
	for u in $ESC_USERS; do
		m=pdd-$(_esc_rand | cut -c1-10)
		ESC_MARKERS+=("$m")
		esc_blocked --user "$u" -- daemon "$m"
		sleep 1
		[ -z "$(esc_find_marker "$m")" ] || fail "daemon $m (as $u) outlived its box: pids $(esc_find_marker "$m")"
	done
	esc_host_unchanged
}

# same, holding the box's stdout open: the CLI must still return (the box ends when its
# command does) instead of waiting for EOF
t_daemon_keeps_stdout() {
	esc_begin
	local m
	m=pdd-$(_esc_rand | cut -c1-10)
	ESC_MARKERS+=("$m")
	ESC_TIMEOUT=30 esc_blocked -- daemon "$m" --keep-stdio
	sleep 1
	[ -z "$(esc_find_marker "$m")" ] || fail "daemon $m outlived its box"
	esc_host_unchanged
}

run_tests
