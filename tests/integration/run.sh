#!/bin/bash
# tests/integration/run.sh — `paddock run`: exit statuses, signals, pipes, TTYs, environment,
# users, limits, and paddock's own failures (125) and usage errors (2).
. "$(dirname "$0")/../lib.sh"

t_exit_status_zero() { assert_status 0 pd_run -- true; }
t_exit_status_is_the_commands() {
	assert_status 7 pd_run -- sh -c 'exit 7'
	assert_status 255 pd_run -- sh -c 'exit 255'
}
t_signal_death_is_128_plus_n() {
	assert_status 143 pd_run -- sh -c 'kill -TERM $$'
	assert_status 137 pd_run -- sh -c 'kill -KILL $$'
}
t_missing_command_is_127() {
	local err
	err=$(pd_run -- /nonexistent/cmd 2>&1 >/dev/null) && return 1
	assert_status 127 pd_run -- /nonexistent/cmd
	assert_contains "$err" "/nonexistent/cmd"
}
t_usage_errors_exit_2() {
	assert_status 2 pd run --memory lots -- true
	assert_status 2 pd run --backend xen -- true
	assert_status 2 pd run --accel xen -- true
	assert_status 2 pd run --backend ns --accel tcg -- true
	assert_status 2 pd run --backend ns --guest-aslr -- true
	assert_status 2 pd run --user daemon -- true
	assert_status 2 pd run -v relative:/x -- true
	assert_status 2 pd nosuchverb
	assert_status 2 pd exec
	# create --rm names what is wrong (it said "takes one NAME and no command" of one NAME)
	assert_status 2 pd create --rm x
	assert_contains "$(pd create --rm x 2>&1)" "--rm is for run"
	# network values are checked by the parsers that use them, before anything is made
	local v
	for v in "-p 99999:80" "-p 1.2.3:80:80" "--resolve foo=notanip" "--allow a:99999" "--deny *.:1"; do
		# shellcheck disable=SC2086
		assert_status 2 pd run --rm --workspace none $v -- true
	done
	# a command the control protocol cannot carry is a usage error, said before anything is made
	local big
	big=$(head -c 70000 /dev/zero | tr '\0' a)
	assert_status 2 pd run --rm --workspace none -- ''
	assert_status 2 pd run --rm -t --workspace none -- true </dev/null
	assert_status 2 pd run --rm -w /etc/hostname -- true
	assert_status 2 pd run --rm --workspace none -- echo "$big"
	assert_status 2 pd run --rm --workspace none -e "BIG=$big" -- true
	local b60=${big:0:60000}
	assert_status 2 pd run --rm --workspace none -- echo "$b60" "$b60" "$b60" "$b60" "$b60"
	# shellcheck disable=SC2046
	assert_status 2 pd run --rm --workspace none -- echo $(seq 5000)
	[ -z "$(ls "$PADDOCK_HOME/boxes" 2>/dev/null)" ] || fail "a refused run left a box: $(ls "$PADDOCK_HOME/boxes")"
	assert_eq "$(pd run --rm --workspace none -- sh -c 'echo ${#1}' x "${big:0:65535}")" "65535"
}
# a PADDOCK_HOME that cannot be used is paddock's own failure (125), said once, on run and
# create alike: it was a usage error (2, "Try 'paddock run --help'") from the check of -v
# paths against the state
t_an_unusable_paddock_home_is_not_a_usage_error() {
	local out a
	for a in "run --rm -- true" "run --rm --workspace none -- true" "create uh"; do
		# shellcheck disable=SC2086
		out=$(PADDOCK_HOME=/etc/passwd "$PADDOCK" $a 2>&1) && fail "$a started: $out"
		# shellcheck disable=SC2086
		assert_status 125 env PADDOCK_HOME=/etc/passwd "$PADDOCK" $a
		assert_contains "$out" "cannot create /etc/passwd/boxes"
		assert_not_contains "$out" "--help"
	done
}
# a -v whose two ends differ in type says so, with the fix that is the user's
t_a_bind_of_the_wrong_type_says_which() {
	pd_only ns "binds"
	mkdir -p "$PADDOCK_HOME/d"
	local out
	out=$(pd run --rm --workspace none -v "$PADDOCK_HOME/d:/etc/passwd" -- true 2>&1) && fail "started: $out"
	assert_contains "$out" "bind target /etc/passwd exists with another type"
	assert_contains "$out" "check the -v paths"
	assert_not_contains "$out" "the kernel must allow"
}
# no box sees paddock's own state (other boxes' control sockets, the image store, the vm
# templates) through a -v or its project, not even read-only (a socket connects there too),
# nor paddock's configuration read-write (its next run's profile and policy)
t_no_box_reaches_paddocks_state() {
	mkdir -p "$PADDOCK_HOME/boxes" "$PADDOCK_HOME/elsewhere" "$PADDOCK_HOME/config/paddock"
	local out v
	# (a vm box refuses every -v before this check: it shares no host path)
	for v in "$PADDOCK_HOME:/x:ro" "$PADDOCK_HOME/boxes:/x:ro" "$(dirname "$PADDOCK_HOME"):/x:ro" \
		"$PADDOCK_HOME/boxes/../boxes:/x"; do
		out=$(pd run --rm --workspace none -v "$v" -- true 2>&1) && fail "-v $v started: $out"
		assert_status 2 pd run --rm --workspace none -v "$v" -- true
		[ "$PD_BACKEND" = vm ] || assert_contains "$out" "paddock's own state"
	done
	export XDG_CONFIG_HOME=$PADDOCK_HOME/config
	out=$(pd run --rm --workspace none -v "$XDG_CONFIG_HOME:/c" -- true 2>&1) && fail "config rw started: $out"
	if [ "$PD_BACKEND" != vm ]; then
		assert_contains "$out" "paddock's configuration"
		assert_status 0 pd run --rm --workspace none -v "$XDG_CONFIG_HOME:/c:ro" -- true
		assert_status 0 pd run --rm --workspace none -v "$PADDOCK_HOME/elsewhere:/e" -- true
	fi
	out=$(cd "$PADDOCK_HOME" && pd run --rm -- true 2>&1) && fail "a copy of the state started: $out"
	assert_contains "$out" "refusing to copy"
	assert_eq "$(pd ls --json)" "[]" "nothing half-made"
}
t_stdout_and_stderr_kept_apart() {
	local out err
	out=$(pd_run -- sh -c 'echo to-out; echo to-err >&2' 2>/tmp/pd-err.$$)
	err=$(cat /tmp/pd-err.$$); rm -f /tmp/pd-err.$$
	assert_eq "$out" "to-out"
	assert_eq "$err" "to-err"
}
t_stdin_is_binary_clean() {
	local f=/tmp/pd-bin.$$
	head -c 3000000 /dev/urandom >$f
	pd_run -- cat <$f >$f.out
	cmp $f $f.out
	pd_run -- sh -c 'cat >/dev/null; echo done' <$f | grep -qx done
	rm -f $f $f.out
}
t_stdin_eof_reaches_the_box() {
	local out
	out=$(printf 'a\nb\n' | pd_run -- wc -l)
	assert_eq "$(echo $out)" "2"
	out=$(pd_run -- cat </dev/null)
	assert_eq "$out" ""
}
# a closed stdin is an empty one (it used to become a pipe of our own that never ended), and
# a reader that goes away ends the command with SIGPIPE as in a shell pipeline (it spun)
t_closed_stdin_and_a_gone_reader_end_the_command() {
	assert_status 0 timeout 60 "$PADDOCK" run --rm --backend "$PD_BACKEND" --workspace none -- cat <&-
	timeout 60 "$PADDOCK" run --rm --backend "$PD_BACKEND" --workspace none -- yes | head -c 4 >/dev/null
	local st=${PIPESTATUS[0]}
	assert_eq "$st" "141" "yes | head: the status of the box's yes"
	# only the writer gets SIGPIPE (the pipe to it closes), not the whole command: a script
	# goes on after its pipeline, as it would on the host
	local err=$PADDOCK_HOME/gone-reader.err
	timeout 60 "$PADDOCK" run --rm --backend "$PD_BACKEND" --workspace none -- \
		sh -c 'yes | head -c 50M; echo after >&2; exit 3' 2>"$err" | head -c 4 >/dev/null
	st=${PIPESTATUS[0]}
	assert_eq "$st" "3" "the script's own status"
	assert_eq "$(cat "$err")" "after"
	# a terminal session has no pipe to close in the box: its process group gets SIGPIPE
	local sh=$PADDOCK_HOME/tty-gone.sh out
	printf '%q run --rm --backend %q --workspace none -t -- yes | head -c 4 >/dev/null\necho "rc=${PIPESTATUS[0]}"\n' \
		"$PADDOCK" "$PD_BACKEND" >"$sh"
	out=$(timeout 60 script -qec "bash $sh" /dev/null </dev/null | tr -d '\r')
	assert_contains "$out" "rc=141"
}
t_tty_allocated_when_stdin_is_a_terminal() {
	local out
	out=$(script -qec "$PADDOCK run --rm --backend $PD_BACKEND -- sh -c 'tty; stty size'" /dev/null </dev/null | tr -d '\r')
	assert_contains "$out" "/dev/pts/"
	out=$(pd_run -- sh -c 'tty || true')
	assert_contains "$out" "not a tty"
}
t_tty_ctrl_c_reaches_the_box() {
	# ^C typed on the terminal goes through the box's own pty to its foreground job
	# (^C only once the box says it is ready: a vm guest takes seconds to boot)
	local f=/tmp/pd-tty.$$ out rc=0
	: >$f
	(for _ in $(seq 1200); do grep -q ready $f && break; sleep 0.05; done; printf '\003'; sleep 2) |
		script -qec "$PADDOCK run --rm -- sh -c 'trap \"echo got-int; exit 3\" INT; echo ready; sleep 30 & wait'" /dev/null >$f || rc=$?
	out=$(tr -d '\r' <$f)
	rm -f $f
	assert_contains "$out" "got-int"
}
t_sigint_forwarded_in_pipe_mode() {
	local f=/tmp/pd-sig.$$
	# started directly (not through a shell function) so $! is paddock itself
	"$PADDOCK" run --rm --backend "$PD_BACKEND" -- sh -c 'trap "echo trapped; exit 5" INT; echo ready; sleep 30 & wait' >$f 2>&1 &
	local pid=$!
	# (a vm guest under TCG on a loaded host can take many seconds to boot)
	for _ in $(seq 1200); do grep -q ready $f 2>/dev/null && break; sleep 0.05; done
	kill -INT $pid
	local rc=0
	wait $pid || rc=$?
	assert_eq "$rc" "5"
	assert_contains "$(cat $f)" "trapped"
	rm -f $f
}
t_host_environment_does_not_leak() {
	local out
	out=$(PD_SECRET_TOKEN=hunter2 pd_run -- env)
	assert_not_contains "$out" "hunter2"
	out=$(PD_SECRET_TOKEN=hunter2 pd_run -e PD_SECRET_TOKEN -e EXPLICIT=yes -- env)
	assert_contains "$out" "PD_SECRET_TOKEN=hunter2"
	assert_contains "$out" "EXPLICIT=yes"
}
t_runs_as_agent_by_default() {
	local out
	out=$(pd_run -- sh -c 'id -u; id -g; echo $HOME; echo $USER; pwd')
	assert_eq "$out" "$(printf '1000\n1000\n/home/agent\nagent\n/workspace')"
	out=$(pd_run --workspace none -- pwd)
	assert_eq "$out" "/home/agent"
}
t_user_root_when_asked() {
	if ! pd_root_available; then
		# no subordinate range: root must be refused with a clear message, never faked
		local err
		err=$(pd_run --user root -- id -u 2>&1) && return 1
		assert_contains "$err" "subordinate"
		return 0
	fi
	assert_eq "$(pd_run --user root -- id -u)" "0"
	# root inside holds no capabilities
	assert_eq "$(pd_run --user root -- sh -c 'grep CapEff /proc/self/status')" "$(printf 'CapEff:\t0000000000000000')"
}
# files the agent writes into a writable bind belong to the caller on the host: an ordinary
# user's agent is the user; host root's agent (a subordinate uid: host uid 0 is never mapped
# into a box) writes through an idmapped bind that lands its files as root
t_files_written_belong_to_the_caller() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	local d
	d=$(mktemp -d) # the caller's, mode 0700: only the caller (and so the agent) may write it
	echo old >"$d/existing"
	pd_run -v "$d:/out" -- sh -c 'echo hi >/out/f && mkdir /out/sub && echo new >>/out/existing && stat -c %u:%g /out/existing'
	assert_eq "$(stat -c %u:%g "$d/f")" "$(id -u):$(id -g)"
	assert_eq "$(stat -c %u:%g "$d/sub")" "$(id -u):$(id -g)"
	assert_eq "$(cat "$d/existing")" "$(printf 'old\nnew')"
	# the caller's files are the agent's inside
	assert_eq "$(pd_run -v "$d:/out" -- stat -c %u:%g /out/existing)" "1000:1000"
	rm -rf "$d"
}
# --workspace rw: the same through the project's bind
t_workspace_rw_writes_belong_to_the_caller() {
	pd_only ns "--workspace rw binds the host directory; a vm guest gets the copy mode only"
	local d
	d=$(mktemp -d)
	echo old >"$d/existing"
	(cd "$d" && pd_run --workspace rw -- sh -c 'touch f && mkdir sub && touch sub/g && echo new >>existing')
	assert_eq "$(stat -c %u:%g "$d/f" "$d/sub" "$d/sub/g" "$d/existing")" "$(printf '%s\n' "$(id -u):$(id -g)" "$(id -u):$(id -g)" "$(id -u):$(id -g)" "$(id -u):$(id -g)")"
	assert_eq "$(cat "$d/existing")" "$(printf 'old\nnew')"
	rm -rf "$d"
}
# a new shared scratch directory (/tmp-like: world-writable, sticky)
scratch_dir() { local d; d=$(mktemp -d) && chmod 1777 "$d" && echo "$d"; }
# host root's bind of a shared scratch directory (/tmp-like: world-writable, sticky) is not
# idmapped: root-owned files and symlinks planted there would defeat the host's
# protected_symlinks; the run says so
t_sticky_scratch_dir_bind_is_not_idmapped() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	[ "$(id -u)" = 0 ] || return 0
	local d out
	d=$(scratch_dir)
	out=$(pd_run -v "$d:/s" -- sh -c 'echo hi >/s/f' 2>&1)
	assert_contains "$out" "1 writable bind is not idmapped"
	[ "$(stat -c %u "$d/f")" != 0 ] || fail "a box wrote a file as host root into a sticky shared directory"
	rm -rf "$d"
}
# a box made with create (its supervisor detached, its stderr the box's log) says it to the
# caller as run does, once; so does each start (the binds are made anew)
t_create_says_a_bind_is_not_idmapped() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	[ "$(id -u)" = 0 ] || return 0
	local d out
	d=$(scratch_dir)
	out=$(pd create --workspace none -v "$d:/s" nb 2>&1 >/dev/null)
	assert_eq "$(grep -c "1 writable bind is not idmapped" <<<"$out")" "1" "create said: $out"
	pd stop nb
	out=$(pd start nb 2>&1)
	assert_eq "$(grep -c "1 writable bind is not idmapped" <<<"$out")" "1" "start said: $out"
	pd rm -f nb
	rm -rf "$d"
}
# root in the box is never host root, through an idmapped bind too
t_box_root_writes_in_a_bind_are_not_host_roots() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	pd_root_available || return 0
	local d
	d=$(mktemp -d)
	chmod 0777 "$d"
	pd_run --user root -v "$d:/out" -- sh -c 'echo hi >/out/r'
	[ "$(stat -c %u "$d/r")" != 0 ] || fail "root in the box wrote a file as host root"
	[ "$(stat -c %u "$d/r")" != "$(id -u)" ] || fail "root in the box wrote a file as the caller"
	rm -rf "$d"
}
t_readonly_volume_is_readonly() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	local d
	d=$(mktemp -d)
	chmod 0777 "$d"
	echo orig >"$d/f"
	chmod 0666 "$d/f"
	local err
	err=$(pd_run -v "$d:/in:ro" -- sh -c 'echo x >/in/f' 2>&1) && fail "write to a read-only volume succeeded"
	assert_contains "$err" "Read-only file system"
	assert_eq "$(cat "$d/f")" "orig"
	rm -rf "$d"
}
t_writes_stay_in_the_box() {
	assert_eq "$(pd_run -- sh -c 'echo x >/tmp/f && echo y >$HOME/g && cat /tmp/f $HOME/g')" "$(printf 'x\ny')"
	if pd_root_available; then
		assert_eq "$(pd_run --user root -- sh -c 'echo x >/usr/pd-overlay-probe && cat /usr/pd-overlay-probe')" "x"
		[ ! -e /usr/pd-overlay-probe ] || fail "a write to /usr inside reached the host"
	fi
}
t_workdir_inside() {
	assert_eq "$(pd_run --workspace none -w /tmp -- pwd)" "/tmp"
}
t_workspace_ro_and_rw() {
	pd_only ns "--workspace ro/rw bind the host directory; a vm guest gets the copy mode only"
	local d
	d=$(mktemp -d)
	chmod 0777 "$d"
	echo data >"$d/f"
	assert_eq "$(cd "$d" && pd_run --workspace ro -- sh -c 'pwd; cat f; cat /workspace/f')" "$(printf '%s\ndata\ndata' "$d")"
	assert_contains "$(cd "$d" && "$PADDOCK" run --rm --workspace ro -- sh -c 'echo x >f' 2>&1)" "Read-only file system"
	chmod 0666 "$d/f"
	(cd "$d" && pd_run --workspace rw -- sh -c 'echo new >f')
	assert_eq "$(cat "$d/f")" "new"
	rm -rf "$d"
}
t_hostname_is_the_box_name() {
	assert_eq "$(pd_run --name pd-host-test -- cat /proc/sys/kernel/hostname)" "pd-host-test"
}
t_rm_leaves_nothing_behind() {
	pd_run -- true
	assert_eq "$(ls "$PADDOCK_HOME/boxes")" ""
}

# fail closed: each layer forced to fail refuses to start, says which, leaves nothing behind
t_each_layer_failure_refuses_to_start() {
	# these are the ns backend's layers; a vm box's own fail-closed layer (its NIC) is
	# net.sh's network_failure_refuses_to_start, which runs on both backends
	pd_only ns "the ns backend's confinement layers"
	local layer err
	for layer in cgroup userns mount pivot rlimit caps landlock seccomp; do
		err=$(PADDOCK_TESTING=1 PADDOCK_TEST_FAIL_LAYER=$layer "$PADDOCK" run --rm -- echo SHOULD-NOT-RUN 2>&1) && return 1
		assert_status 125 env PADDOCK_TESTING=1 PADDOCK_TEST_FAIL_LAYER=$layer "$PADDOCK" run --rm -- true
		assert_not_contains "$err" "SHOULD-NOT-RUN"
		assert_contains "$err" "$layer"
		assert_eq "$(ls "$PADDOCK_HOME/boxes")" "" "box dir left behind after $layer failure"
	done
}
t_test_failure_hook_needs_testing_mode() {
	# without PADDOCK_TESTING=1 the hook is inert
	assert_status 0 env PADDOCK_TEST_FAIL_LAYER=seccomp "$PADDOCK" run --rm -- true
}

run_tests
