#!/bin/bash
# tests/escape/syscalls.sh — kernel attack surface the seccomp filter must close: nested
# namespaces (unshare, clone3, setns), bpf, perf_event_open, userfaultfd, keyrings,
# io_uring, personality, x32 and int 0x80 entry points, modules, kexec, the kernel log,
# the clock, I/O ports, reboot, the kernel crypto API's sockets (AF_ALG).
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/syscalls.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"
# on vm these syscalls meet the guest's kernel, not the host's
esc_vm_guest_kernel "a vm guest has its own kernel; no paddock seccomp filter inside it yet"

t_userns() { esc_simple userns; }
t_clone3_ns() { esc_simple clone3-ns; }
t_setns() { esc_simple setns; }
t_bpf() { esc_simple bpf; }
t_perf_event_open() { esc_simple perf; }
t_userfaultfd() { esc_simple userfaultfd; }
t_io_uring() { esc_simple io-uring; }
t_personality() { esc_simple personality; }
t_x32_syscall() { esc_simple x32; }
t_int80_syscall() { esc_simple int80; }
t_kernel_modules() { esc_simple kmod; }
t_kexec() { esc_simple kexec; }
t_syslog() { esc_simple syslog; }
t_clock_set() { esc_simple clock-set; }
t_ioport() { esc_simple ioport; }
t_reboot() { esc_simple reboot; }
# AF_ALG feeds user data to the kernel's crypto code (algif_*: a record of memory corruption).
# On ns the refusal must be the filter's (--filtered), so that the test also fails on hosts
# built without AF_ALG, where the socket could not open anyway; gVisor and a vm guest answer
# with their own kernels (on vm, reported: see above).
t_af_alg() {
	if [ "$PD_BACKEND" = ns ]; then esc_simple alg --filtered; else esc_simple alg; fi
}

# keyrings are not namespaced: the probe's key ("paddock-probe") must not appear on the host
t_keyctl() {
	esc_begin
	esc_blocked_both -- keyctl
	if grep -q paddock-probe /proc/keys 2>/dev/null; then
		fail "a key added in the box is in the host's keyrings: $(grep paddock-probe /proc/keys)"
	fi
	esc_host_unchanged
}

run_tests
