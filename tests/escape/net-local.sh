#!/bin/bash
# tests/escape/net-local.sh — host-local network reachable from a box: abstract and
# pathname unix sockets, TCP to host loopback and the host's own addresses, UDP, raw and
# packet sockets, AF_VSOCK. The host listener (listener.py) logs anything that reaches it; the log
# must stay empty.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/net-local.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

t_abstract_unix() {
	esc_begin
	esc_blocked_both -- abstract-unix "@$ESC_ABSTRACT"
	esc_host_unchanged
}

# a docker.sock / ssh-agent style socket at a host path
t_unix_socket_path() {
	esc_begin
	esc_blocked_both -- unix-socket "$ESC_UNIX"
	esc_host_unchanged
}

# 127.0.0.1, ::1 and every host address, on the listener's port
t_host_loopback_tcp() {
	esc_begin
	# shellcheck disable=SC2046
	esc_blocked_both -- host-loopback "$ESC_PORT" $(esc_host_addrs)
	esc_host_unchanged
}

t_host_udp() {
	esc_begin
	local a
	for a in 127.0.0.1 ::1 $(esc_host_addrs); do
		esc_blocked_both -- udp-send "$a" "$ESC_PORT"
	done
	esc_host_unchanged
}

t_raw_socket() { esc_simple raw-socket; }

# AF_VSOCK is not network-namespaced: the VM host's vsock services would be reachable
t_vsock() { esc_simple vsock; }

run_tests
