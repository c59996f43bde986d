#!/bin/bash
# tests/escape/syscalls.sh — kernel attack surface the seccomp filter must close: nested
# namespaces (unshare, clone3, setns), bpf, perf_event_open, userfaultfd, keyrings,
# io_uring, personality, x32 and int 0x80 entry points, modules, kexec.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/syscalls.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

_esc_simple() {
	esc_begin
	esc_blocked_both -- "$@"
	esc_host_unchanged
}

t_userns() { _esc_simple userns; }
t_clone3_ns() { _esc_simple clone3-ns; }
t_setns() { _esc_simple setns; }
t_bpf() { _esc_simple bpf; }
t_perf_event_open() { _esc_simple perf; }
t_userfaultfd() { _esc_simple userfaultfd; }
t_io_uring() { _esc_simple io-uring; }
t_personality() { _esc_simple personality; }
t_x32_syscall() { _esc_simple x32; }
t_int80_syscall() { _esc_simple int80; }
t_kernel_modules() { _esc_simple kmod; }
t_kexec() { _esc_simple kexec; }

# keyrings are not namespaced: also check the host user's keyring is unchanged
t_keyctl() {
	esc_begin
	local before
	before=$(wc -l </proc/keys 2>/dev/null)
	esc_blocked_both -- keyctl
	assert_eq "$(wc -l </proc/keys 2>/dev/null)" "$before" "host /proc/keys changed"
	esc_host_unchanged
}

run_tests
