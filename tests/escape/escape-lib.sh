# tests/escape/escape-lib.sh — host canaries and probe helpers for the escape tests.
# Sourced after tests/lib.sh by every tests/escape/*.sh. Each escape test:
#   esc_begin                       host canaries: files with a random token (in $HOME, /tmp,
#                                   /var/tmp, /dev/shm, the runtime dir), a sleeping process, a listener
#                                   on every host address + abstract and pathname unix
#                                   sockets, hashes of host files that must not change
#   esc_blocked [run opts] -- SUBCMD ARGS   the probe, in a box, must exit 0 (all blocked)
#   esc_host_unchanged              every canary exactly as it was
# esc_blocked_both runs the probe as the default `agent` user and with --user root.
#
# Environment: PD_PROBE (required), ESC_PY (python3 for the listener, default
# /usr/bin/python3), ESC_USERS (default "agent root").

: "${PD_PROBE:?set PD_PROBE to the paddock-probe binary (build/tests/probe/paddock-probe)}"
PD_PROBE=$(realpath "$PD_PROBE")
# absolute, so tests may cd (the cwd test runs the CLI from a host dir)
case $PADDOCK in */*) PADDOCK=$(realpath "$PADDOCK") ;; esac
ESC_PY=${ESC_PY:-/usr/bin/python3}
ESC_USERS=${ESC_USERS:-agent root}
_esc_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# esc_on_exit CMD: runs CMD when the test's subshell exits, before whatever was already set
# (tests/lib.sh's run_tests installs pd_cleanup_home there).
esc_on_exit() {
	local cmd=$1 prev
	prev=$(trap -p EXIT)
	if [ -n "$prev" ]; then
		eval "set -- $prev" # trap -- 'CMD' EXIT
		cmd="$cmd; $3"
	fi
	# shellcheck disable=SC2064
	trap "$cmd" EXIT
}

_esc_rand() { od -An -N8 -tx1 /dev/urandom | tr -d ' \n'; }
_esc_sha() { sha256sum "$1" 2>/dev/null | cut -d' ' -f1; }

# esc_watch FILE: remember FILE's hash; esc_host_unchanged compares it
esc_watch() {
	[ -r "$1" ] || return 0
	ESC_WATCH+=("$1")
	ESC_HASH+=("$(_esc_sha "$1")")
}

# esc_canary_file PATH: a file holding the test's token (removed at exit)
esc_canary_file() {
	(umask 077 && printf 'paddock escape canary %s\n' "$ESC_TOKEN" >"$1") || return 1
	ESC_FILES+=("$1")
	esc_watch "$1"
}

esc_begin() {
	ESC_DIR=$(mktemp -d /tmp/pdesc.XXXXXX)
	chmod 0755 "$ESC_DIR"
	ESC_TOKEN=pdtok-$(_esc_rand)
	ESC_WATCH=() ESC_HASH=() ESC_FILES=() ESC_MARKERS=() ESC_PIDS=() ESC_IPC=()
	esc_on_exit esc_cleanup
	# a host secret in the CLI's environment: must never reach the box
	export PD_HOST_SECRET=$ESC_TOKEN
	ESC_HOME_CANARY=$HOME/.pdcanary-$(_esc_rand)
	esc_canary_file "$ESC_HOME_CANARY"
	esc_canary_file "$ESC_DIR/canary"
	ESC_VARTMP_CANARY=/var/tmp/pdcanary-$(_esc_rand)
	esc_canary_file "$ESC_VARTMP_CANARY" || ESC_VARTMP_CANARY=
	ESC_SHM_CANARY=/dev/shm/pdcanary-$(_esc_rand)
	esc_canary_file "$ESC_SHM_CANARY" || ESC_SHM_CANARY=
	ESC_RUN_CANARY=
	local rundir=${XDG_RUNTIME_DIR:-/run}
	if [ -w "$rundir" ]; then
		ESC_RUN_CANARY=$rundir/pdcanary-$(_esc_rand)
		esc_canary_file "$ESC_RUN_CANARY" || ESC_RUN_CANARY=
	fi
	local f
	for f in /etc/passwd /etc/shadow /etc/hostname /etc/hosts "$PADDOCK" "$PD_PROBE" "$HOME/.bashrc" \
		"$HOME/.profile"; do
		esc_watch "$f"
	done
	ESC_HOSTNAME=$(hostname)
	# a sleeping process the box must not be able to kill
	(exec -a "pdcanary-$ESC_TOKEN" sleep 3600) &
	ESC_CANARY_PID=$!
	disown "$ESC_CANARY_PID"
	ESC_PIDS+=("$ESC_CANARY_PID")
	esc_start_listener
}

# TCP+UDP on every host address (one port), @abstract and pathname unix sockets, all logging
esc_start_listener() {
	local i port abstract path
	"$ESC_PY" "$_esc_here/listener.py" --dir "$ESC_DIR" </dev/null >>"$ESC_DIR/listener.out" 2>&1 &
	ESC_LISTENER_PID=$!
	disown "$ESC_LISTENER_PID"
	ESC_PIDS+=("$ESC_LISTENER_PID")
	for i in $(seq 200); do
		[ -e "$ESC_DIR/ready" ] && break
		sleep 0.02
	done
	[ -e "$ESC_DIR/ready" ] || fail "listener did not start: $(cat "$ESC_DIR/listener.out")" || return 1
	read -r port abstract path <"$ESC_DIR/ready"
	# shellcheck disable=SC2034 # used by the test scripts
	ESC_PORT=${port#port=} ESC_ABSTRACT=${abstract#abstract=} ESC_UNIX=${path#path=}
	touch "$ESC_DIR/log"
}

esc_cleanup() {
	local p
	for p in "${ESC_PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${ESC_MARKERS[@]}"; do esc_kill_marker "$p"; done
	[ ${#ESC_IPC[@]} -eq 0 ] || ipcrm "${ESC_IPC[@]}" 2>/dev/null
	rm -f "${ESC_FILES[@]}"
	rm -rf "$ESC_DIR"
	return 0
}

# live (not zombie) host pids whose comm or command line carries MARKER (bash builtins
# only: this scans every process)
esc_find_marker() {
	local p comm stat args
	for p in /proc/[0-9]*; do
		{ read -r comm <"$p/comm" && read -r stat <"$p/stat"; } 2>/dev/null || continue
		stat=${stat##*) }
		[ "${stat:0:1}" = Z ] && continue
		args=()
		mapfile -d '' args 2>/dev/null <"$p/cmdline"
		if [ "$comm" = "$1" ] || [[ " ${args[*]} " == *"$1"* ]]; then
			echo "${p#/proc/}"
		fi
	done
}
esc_kill_marker() {
	local p
	for p in $(esc_find_marker "$1"); do kill -9 "$p" 2>/dev/null; done
	return 0
}

# esc_host_unchanged: the canaries are as esc_begin left them
esc_host_unchanged() {
	local i ok=0
	for i in "${!ESC_WATCH[@]}"; do
		[ "$(_esc_sha "${ESC_WATCH[$i]}")" = "${ESC_HASH[$i]}" ] ||
			{ fail "host file changed: ${ESC_WATCH[$i]}"; ok=1; }
	done
	kill -0 "$ESC_CANARY_PID" 2>/dev/null || { fail "host canary process $ESC_CANARY_PID was killed"; ok=1; }
	kill -0 "$ESC_LISTENER_PID" 2>/dev/null || { fail "host listener died"; ok=1; }
	if [ -s "$ESC_DIR/log" ]; then
		fail "the host listener saw traffic from the box: $(cat "$ESC_DIR/log")"
		ok=1
	fi
	[ "$(hostname)" = "$ESC_HOSTNAME" ] || { fail "host hostname changed to $(hostname)"; ok=1; }
	for i in "${ESC_MARKERS[@]}"; do
		[ -z "$(esc_find_marker "$i")" ] || { fail "process '$i' from the box is alive on the host"; ok=1; }
	done
	return $ok
}

# esc_vm_guest_kernel REASON: on the vm backend the probe's attempts reach the guest's own
# kernel (a separate kernel: the boundary is the hypervisor, not a seccomp filter), so an
# attempt that succeeds inside the guest is reported, not failed; the test is then decided by
# what it checks on the host (canaries, host keyrings, ...). A probe that cannot run, a
# timeout or a paddock failure still fail.
esc_vm_guest_kernel() {
	[ "$PD_BACKEND" = vm ] || return 0
	ESC_VM_GUEST_KERNEL=$1
}

# _esc_judge RC OUT WHAT: maps the probe's exit status to pass/fail with a clear reason
_esc_judge() {
	if [ "$1" = 1 ] && [ -n "${ESC_VM_GUEST_KERNEL:-}" ]; then
		echo "vm: $3 reached the guest's own kernel ($ESC_VM_GUEST_KERNEL); the host checks decide"
		return 0
	fi
	case $1 in
	0) return 0 ;;
	1) fail "ESCAPE: $3 — an attack succeeded (lines marked ESCAPED above)" ;;
	2) fail "probe could not run the check: $3" ;;
	124) fail "timed out after ${ESC_TIMEOUT:-120} s: $3" ;;
	125) fail "paddock failed (exit 125): $3" ;;
	*) fail "unexpected exit status $1: $3" ;;
	esac
}

# esc_probe_run [run opts] -- SUBCMD ARGS: lib.sh's pd_probe (the probe in a box), stdin
# /dev/null (pipe mode), under a time limit ($ESC_TIMEOUT s, default 120) so a hung box fails
# the test instead of the suite; sets ESC_OUT and ESC_RC, never fails
export -f pd_probe
export PADDOCK PD_BACKEND PD_PROBE
esc_probe_run() {
	ESC_RC=0
	ESC_OUT=$(timeout -k 10 "${ESC_TIMEOUT:-120}" bash -c 'pd_probe "$@"' pd_probe "$@" </dev/null 2>&1) ||
		ESC_RC=$?
	printf '$ paddock run %s\n%s\n[exit %s]\n' "$*" "$ESC_OUT" "$ESC_RC"
}

# esc_blocked [run opts] -- SUBCMD ARGS: the probe in a box must report every attempt blocked
esc_blocked() {
	esc_probe_run "$@"
	_esc_judge "$ESC_RC" "$ESC_OUT" "$*"
}

# esc_blocked_both [run opts] -- SUBCMD ARGS: esc_blocked as each user of $ESC_USERS
esc_blocked_both() {
	local u rc=0
	for u in $ESC_USERS; do
		esc_blocked --user "$u" "$@" || rc=1
	done
	return $rc
}

# esc_vm_guest_root REASON: on the vm backend, root in the box is root of the guest's own
# kernel (the guest is the boundary: its devices, syscalls and files are its own, and nothing
# of the host is in it), so this test's probe runs as the agent only there — the agent is
# still confined inside the guest — and the host canaries decide as everywhere.
esc_vm_guest_root() {
	[ "$PD_BACKEND" = vm ] || return 0
	echo "vm: probing as the agent only ($1)"
	ESC_USERS=agent
}

# esc_simple SUBCMD ARGS: the whole test for a probe that needs no canary arguments
esc_simple() {
	esc_begin
	esc_blocked_both -- "$@"
	esc_host_unchanged
}

# esc_tty_run [run opts] -- SUBCMD ARGS: like esc_probe_run but with a terminal on the CLI's
# stdin/stdout/stderr (script(1) allocates it), so the box gets a tty too. ESC_TTY_REDIR
# (e.g. "</dev/null") is appended to the command inside script.
esc_tty_run() {
	local opts=() cmd
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	if [ "$PD_BACKEND" = vm ]; then # (no host path in a guest: the probe rides the workspace copy)
		mkdir -p .probe && cp "$PD_PROBE" .probe/paddock-probe
		cmd=$(printf '%q ' "$PADDOCK" run --rm --backend vm "${opts[@]}" -- /workspace/.probe/paddock-probe "$@")
	else
		cmd=$(printf '%q ' "$PADDOCK" run --rm --backend "$PD_BACKEND" -v "$PD_PROBE:/.probe/paddock-probe:ro" \
			"${opts[@]}" -- /.probe/paddock-probe "$@")
	fi
	ESC_RC=0
	ESC_OUT=$(timeout -k 10 "${ESC_TIMEOUT:-120}" script -qec "$cmd ${ESC_TTY_REDIR:-}" /dev/null </dev/null 2>&1) ||
		ESC_RC=$?
	ESC_OUT=${ESC_OUT//$'\r'/}
	printf '$ script -qec "paddock run %s %s"\n%s\n[exit %s]\n' "$*" "${ESC_TTY_REDIR:-}" "$ESC_OUT" "$ESC_RC"
}

esc_tty_blocked() {
	esc_tty_run "$@"
	_esc_judge "$ESC_RC" "$ESC_OUT" "$* (with a tty)"
}

# the host's namespace inodes as KIND=INODE words for `paddock-probe ns-distinct`
esc_host_ns() {
	local k
	for k in user mnt pid net uts ipc cgroup; do
		printf '%s=%s ' "$k" "$(stat -Lc %i "/proc/self/ns/$k")"
	done
}

# the first line of a host file (the token proving a read reached the host's copy), or ""
# esc_ipc KIND(m|q|s): makes a host System V object (removed at exit), its key in ESC_IPC_KEY
esc_ipc() {
	local id
	case $1 in
	m) id=$(ipcmk -M 4096 -p 0600) ;;
	q) id=$(ipcmk -Q -p 0600) ;;
	s) id=$(ipcmk -S 1 -p 0600) ;;
	esac
	id=${id##* }
	ESC_IPC+=("-$1" "$id")
	ESC_IPC_KEY=$(ipcs "-$1" | awk -v id="$id" '$2 == id {print $1}')
	[ -n "$ESC_IPC_KEY" ] || fail "cannot make a System V object (ipcmk -$1)"
}

esc_first_line() { head -n1 "$1" 2>/dev/null || true; }

# host addresses other than loopback (the box must not reach them either)
esc_host_addrs() { hostname -I 2>/dev/null; }
