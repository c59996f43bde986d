#!/bin/bash
# tests/escape/tty.sh — terminal injection: TIOCSTI (also with high bits set in the ioctl
# number) and TIOCLINUX, with the box on a tty (script(1) gives the CLI one), with only
# stdout/stderr on the host's tty, and in pipe mode.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/tty.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

t_tiocsti_tty() {
	esc_vm_guest_kernel "a vm session's tty is a pty of the guest's kernel: what TIOCSTI pushes is read back by the box's own session; the host terminal only ever gets bytes the CLI copies"
	esc_begin
	local u
	for u in $ESC_USERS; do
		esc_tty_blocked --user "$u" -- tiocsti
	done
	esc_host_unchanged
}

# stdin from /dev/null but stdout/stderr on the host's terminal: the box must not get the
# host's tty as an fd (it would be a TIOCSTI target)
t_tiocsti_stdout_on_host_tty() {
	esc_begin
	local u
	for u in $ESC_USERS; do
		ESC_TTY_REDIR="</dev/null" esc_tty_blocked --user "$u" -- tiocsti --no-tty-ok
		# stdin is no tty, so the box runs on pipes: any terminal it can reach is the host's
		assert_not_contains "$ESC_OUT" "ioctl(fd" || fail "the box reached a terminal (the host's?) in pipe mode"
	done
	esc_host_unchanged
}

t_tiocsti_pipes() {
	esc_begin
	esc_blocked_both -- tiocsti --no-tty-ok
	assert_not_contains "$ESC_OUT" "ioctl(fd"
	esc_host_unchanged
}

t_tioclinux() {
	esc_begin
	local u
	for u in $ESC_USERS; do
		esc_tty_blocked --user "$u" -- tioclinux
	done
	esc_blocked_both -- tioclinux
	esc_host_unchanged
}

run_tests
