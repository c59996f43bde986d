#!/bin/bash
# tests/integration/lifecycle.sh — persistent sandboxes: create/exec/stop/start/rm, ls, the
# supervisor dying, concurrent calls.
. "$(dirname "$0")/../lib.sh"

# the box cgroup's leaf name (ns_cgroup_leaf): box-NAME.<FNV-1a of the box's state dir path
# and then of its inode number's 8 little-endian bytes>; only while the state dir exists
cgroup_leaf() {
	python3 -c 'import os, sys
h = 2166136261
for c in sys.argv[2].encode() + os.stat(sys.argv[2]).st_ino.to_bytes(8, "little"):
    h = ((h ^ c) * 16777619) & 0xffffffff
print("box-%s.%08x" % (sys.argv[1], h))' "$1" "$PADDOCK_HOME/boxes/$1"
}
# the cgroup directories named LEAF of this user (empty once removed)
cgroups_at() {
	local mine="*/paddock/$1"
	[ "$(id -u)" = 0 ] || mine="*/paddock/$(id -u)/$1"
	find /sys/fs/cgroup -maxdepth 5 -name "$1" -path "$mine" 2>/dev/null
}
status_of() { pd ls --json | python3 -c "import json,sys; print(next((b['status'] for b in json.load(sys.stdin) if b['name']=='$1'), 'absent'))"; }

t_create_exec_stop_start_rm() {
	pd create --backend "$PD_BACKEND" b1 >/dev/null
	assert_eq "$(status_of b1)" "running"
	assert_eq "$(pd exec b1 -- echo hello)" "hello"
	assert_status 3 pd exec b1 -- sh -c 'exit 3'
	pd exec b1 -- sh -c 'echo kept >/tmp/state'
	assert_eq "$(pd exec b1 -- cat /tmp/state)" "kept"
	pd stop b1
	assert_eq "$(status_of b1)" "stopped"
	assert_status 125 pd exec b1 -- true
	pd start b1
	assert_eq "$(status_of b1)" "running"
	assert_eq "$(pd exec b1 -- echo again)" "again"
	pd stop b1
	pd rm b1
	assert_eq "$(status_of b1)" "absent"
}
t_run_without_rm_keeps_the_box() {
	assert_eq "$(pd run --name keep -- echo first)" "first"
	assert_eq "$(status_of keep)" "running"
	assert_eq "$(pd exec keep -- echo second)" "second"
	pd rm -f keep
}
t_rm_refuses_a_running_box_without_force() {
	pd create r1 >/dev/null
	assert_status 125 pd rm r1
	assert_eq "$(status_of r1)" "running"
	pd rm -f r1
	assert_eq "$(status_of r1)" "absent"
}
t_name_collision_is_refused() {
	pd create dup >/dev/null
	local err
	err=$(pd create dup 2>&1) && return 1
	assert_contains "$err" "already exists"
	pd rm -f dup
}
t_supervisor_sigkill_leaves_a_consistent_ls() {
	pd create k1 >/dev/null
	local spid bpid
	spid=$(pd ls --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['name']=='k1'][0]['supervisor_pid'])")
	bpid=$(pd exec k1 -- sh -c 'sleep 4242 & echo $!' >/dev/null; pgrep -f -n 'sleep 4242' || true)
	kill -KILL "$spid"
	for _ in $(seq 100); do [ "$(status_of k1)" = dead ] && break; sleep 0.05; done
	assert_eq "$(status_of k1)" "dead"
	# the box died with its supervisor: nothing of it still runs
	for _ in $(seq 100); do pgrep -f 'sleep 4242' >/dev/null || break; sleep 0.05; done
	! pgrep -f 'sleep 4242' >/dev/null || fail "a box process survived its supervisor"
	assert_status 125 pd exec k1 -- true
	local leaf
	leaf=$(cgroup_leaf k1)
	# (ns: the box's own cgroup; a vm box's QEMU has none of this name)
	if [ "$PD_BACKEND" = ns ] && [ -z "$(cgroups_at "$leaf")" ]; then
		fail "the dead box's cgroup $leaf is not where the test looks"
	fi
	# stop records the death (it said 0 and left it dead), and frees the cgroup
	pd stop k1
	assert_eq "$(status_of k1)" "stopped"
	assert_eq "$(cgroups_at "$leaf")" ""
	pd rm k1
	assert_eq "$(status_of k1)" "absent"
	# and its cgroup, which the killed supervisor could not remove, is gone too
	assert_eq "$(cgroups_at "$leaf")" ""
}
# A box whose init dies unasked (here: killed from the host; in life, the OOM killer) reads
# "dead", not "stopped", its log says why, and it starts again.
t_init_killed_unasked_reads_dead() {
	pd_only ns "the box's init is a host process here (vm: qemu_killed_midrun_box_recovers)"
	pd create k2 >/dev/null
	local spid c killed=0
	spid=$(pd ls --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['name']=='k2'][0]['supervisor_pid'])")
	for c in $(pgrep -P "$spid"); do
		if grep -Eq '^NSpid:.*[[:space:]]1$' "/proc/$c/status"; then kill -KILL "$c"; killed=1; fi
	done
	[ "$killed" = 1 ] || fail "no init process of the box found under its supervisor"
	for _ in $(seq 100); do [ "$(status_of k2)" = dead ] && break; sleep 0.05; done
	assert_eq "$(status_of k2)" "dead"
	assert_contains "$(pd logs k2)" "died: its init was killed (SIGKILL: a kill from outside"
	assert_contains "$(pd start k2 2>&1)" "k2 died without a stop: what it wrote since its last stop is gone"
	assert_eq "$(pd exec k2 -- echo back)" "back"
	pd rm -f k2
}

# On ns the box's files live in its memory: a disk asked larger than the memory can hold is
# capped, so filling it is ENOSPC for the writer, never an out-of-memory kill of the box.
t_a_full_disk_is_enospc_and_the_box_lives() {
	pd_only ns "the disk is tmpfs only on ns"
	local out
	out=$(pd create --memory 256M --disk 2G k3 2>&1)
	assert_contains "$out" "its disk is 128 MiB at --memory 256 MiB"
	out=$(pd exec k3 -- sh -c 'echo keep >/tmp/keep; head -c 300M /dev/zero >/tmp/fill; echo "rc=$?"' 2>&1)
	assert_contains "$out" "No space left on device"
	assert_contains "$out" "rc=1"
	assert_eq "$(pd exec k3 -- cat /tmp/keep)" "keep"
	assert_eq "$(status_of k3)" "running"
	pd rm -f k3
}
# a stop that cannot save the workspace because paddock's own disk is full says so once, on
# what (it said "cannot write the command's output" of no file, then "(status 125)" on a
# second line)
t_a_stop_on_a_full_paddock_home_says_what_failed() {
	pd_only ns "only an ns box's copy is saved by stop"
	[ "$(id -u)" = 0 ] || { echo "skip: mounts a small tmpfs as PADDOCK_HOME (root)"; exit 77; }
	local out
	small=$PADDOCK_HOME/small # (global: the trap reads it)
	mkdir "$small" "$PADDOCK_HOME/proj" && echo a >"$PADDOCK_HOME/proj/a"
	mount -t tmpfs -o size=400k tmpfs "$small"
	trap 'PADDOCK_HOME=$small/h pd rm -f fd2 >/dev/null 2>&1
		for _ in 1 2 3 4 5 6 7 8 9 10; do umount "$small" 2>/dev/null && break; sleep 0.5; done
		pd_cleanup_home' EXIT
	(cd "$PADDOCK_HOME/proj" && PADDOCK_HOME=$small/h pd create fd2 >/dev/null)
	PADDOCK_HOME=$small/h pd exec fd2 -- sh -c 'head -c 1000000 /dev/urandom >big'
	out=$(PADDOCK_HOME=$small/h pd stop fd2 2>&1) && fail "stopped: $out"
	assert_contains "$out" "No space left on device"
	assert_contains "$out" "$small/h/boxes/fd2"
	assert_eq "$(printf '%s\n' "$out" | grep -c '^paddock')" 1 "one message: $out"
	assert_eq "$(PADDOCK_HOME=$small/h status_of fd2)" "running"
}

# `run --rm` killed with SIGKILL (its supervisor is the CLI process), at start-up and later:
# nothing of the box runs on (a setup child once held the supervisor's end of its go-ahead
# socket and waited forever: 9 of 30 early kills as an ordinary user), and `rm` removes the
# state and the cgroups
# TERM, HUP or INT to `run --rm` while its box is still being set up (here: copying in a
# 200 MB project) ends the run as the signal asks, and leaves no box and no cgroup behind
# (it used to die half-way, leaving a dead box and its cgroups).
t_run_rm_signalled_during_start_leaves_nothing() {
	mkdir -p "$PADDOCK_HOME/bigproj"
	head -c 200M /dev/zero >"$PADDOCK_HOME/bigproj/big.bin"
	local sig pid st n=0
	for sig in TERM HUP INT; do
		n=$((n + 1))
		(cd "$PADDOCK_HOME/bigproj" && exec "$PADDOCK" run --rm --name sg$n -- sleep 4545) &
		pid=$!
		for _ in $(seq 100); do [ -e "$PADDOCK_HOME/boxes/sg$n" ] && break; sleep 0.01; done
		kill -$sig $pid
		st=0
		wait $pid || st=$?
		[ "$st" -gt 128 ] || fail "run --rm ended with $st after SIG$sig"
		for _ in $(seq 100); do [ -e "$PADDOCK_HOME/boxes/sg$n" ] || break; sleep 0.05; done
		assert_eq "$(status_of sg$n)" "absent"
	done
	for _ in $(seq 100); do [ -z "$(cgroups_at 'box-sg*')" ] && break; sleep 0.05; done
	assert_eq "$(cgroups_at 'box-sg*')" ""
	! pgrep -f "sleep 4545" >/dev/null || fail "left running: $(pgrep -af "sleep 4545")"
}

# What a SIGKILLed `run --rm` left (a dead box and its cgroups) goes at the next `ls` once it
# is 30 s old (younger, a run may be starting): --rm asked for it to be thrown away
t_run_rm_sigkilled_is_swept_by_ls() {
	"$PADDOCK" run --rm --name sw1 --workspace none -- sleep 4646 &
	local pid=$!
	# killed once its state exists and its run holds it (any backend)
	for _ in $(seq 400); do [ "$(status_of sw1)" = running ] && break; sleep 0.05; done
	assert_eq "$(status_of sw1)" "running"
	kill -KILL $pid
	wait $pid 2>/dev/null || true
	for _ in $(seq 100); do [ "$(status_of sw1)" = dead ] && break; sleep 0.05; done
	assert_eq "$(status_of sw1)" "dead" "a young one is left alone"
	local leaf
	leaf=$(cgroup_leaf sw1)
	python3 - "$PADDOCK_HOME/boxes/sw1/config.json" <<'PY'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["created"] -= 60
json.dump(c, open(p, "w"))
PY
	assert_eq "$(status_of sw1)" "absent"
	[ ! -e "$PADDOCK_HOME/boxes/sw1" ] || fail "its state is left"
	for _ in $(seq 100); do [ -z "$(cgroups_at "$leaf")" ] && break; sleep 0.05; done
	assert_eq "$(cgroups_at "$leaf")" ""
}

t_run_rm_sigkilled_leaves_nothing_after_rm() {
	local i pid d
	for i in 0 1 2 3 4 5 6 7 8 9; do
		"$PADDOCK" run --rm --name k2$i --workspace none -- sleep 4343 &
		pid=$!
		d=$(python3 -c "import random; print(random.choice([0, 0.001, 0.003, 0.006, 0.01, 0.3]))")
		sleep "$d"
		kill -KILL $pid
		wait $pid 2>/dev/null || true
	done
	for _ in $(seq 100); do pgrep -f 'sleep 4343' >/dev/null || break; sleep 0.05; done
	! pgrep -f "sleep 4343" >/dev/null || fail "left running after run --rm was killed: $(pgrep -af "sleep 4343")"
	local leaf
	for i in 0 1 2 3 4 5 6 7 8 9; do
		[ -e "$PADDOCK_HOME/boxes/k2$i" ] || continue
		leaf=$(cgroup_leaf k2$i)
		# what a killed run left is dead (not "created"), and is never started as a box
		assert_eq "$(status_of k2$i)" "dead"
		assert_status 125 pd start k2$i
		pd rm k2$i
		assert_eq "$(status_of k2$i)" "absent"
		assert_eq "$(cgroups_at "$leaf")" ""
	done
}
# a box is made under a private name and renamed into place with its configuration: a create
# killed half-way leaves a .new- directory (never a box without config.json), which ls removes
# once it is 30 s old — and not before, when it may be a create still under way
t_half_created_box_is_swept_not_listed() {
	mkdir -p "$PADDOCK_HOME/boxes/.new-hc.99999" "$PADDOCK_HOME/boxes/.new-hc2.99998"
	touch -d '-2 min' "$PADDOCK_HOME/boxes/.new-hc.99999"
	local out
	out=$(pd ls 2>&1)
	assert_not_contains "$out" "hc"
	[ ! -e "$PADDOCK_HOME/boxes/.new-hc.99999" ] || fail "a stale .new- directory survived ls"
	[ -e "$PADDOCK_HOME/boxes/.new-hc2.99998" ] || fail "ls removed a create that may still be under way"
	rm -rf "$PADDOCK_HOME/boxes/.new-hc2.99998"
	pd create --workspace none hc >/dev/null
	assert_eq "$(status_of hc)" "running"
	[ -z "$(compgen -G "$PADDOCK_HOME/boxes/.new-*")" ] || fail "create left $(compgen -G "$PADDOCK_HOME/boxes/.new-*")"
	assert_contains "$(pd create --workspace none hc 2>&1 || true)" "already exists"
	[ -z "$(compgen -G "$PADDOCK_HOME/boxes/.new-*")" ] || fail "a refused create left $(compgen -G "$PADDOCK_HOME/boxes/.new-*")"
	pd rm -f hc
}
# a running `run --rm` box lives in its run: stop, rm -f and exec refuse at once and say why
# (they waited 10-15 s for a supervisor it does not have, then failed)
t_run_rm_box_refuses_outside_stop_and_exec() {
	"$PADDOCK" run --rm --name rr --workspace none -- sleep 4344 &
	local pid=$! i
	for i in $(seq 100); do [ "$(status_of rr)" = running ] && break; sleep 0.05; done
	local out
	out=$(timeout 5 "$PADDOCK" stop rr 2>&1) && fail "stop of a run --rm box succeeded"
	assert_contains "$out" "run --rm"
	out=$(timeout 5 "$PADDOCK" rm -f rr 2>&1) && fail "rm -f of a run --rm box succeeded"
	assert_contains "$out" "run --rm"
	out=$(timeout 5 "$PADDOCK" exec rr -- true 2>&1) && fail "exec into a run --rm box succeeded"
	assert_contains "$out" "run --rm"
	kill -TERM $pid
	wait $pid 2>/dev/null || true
}
# run --rm renames its state away and a detached process removes it (with the network's last
# close): the name is free at once, nothing stays behind, and ls sweeps what a crash left
t_run_rm_state_is_gone_and_swept() {
	"$PADDOCK" run --rm --name rmq -- true
	[ ! -e "$PADDOCK_HOME/boxes/rmq" ] || fail "the state directory is still there"
	"$PADDOCK" run --rm --name rmq -- true || fail "the name was not free again"
	local gone
	for _ in $(seq 100); do
		gone=$(ls -A "$PADDOCK_HOME/boxes" | grep '^\.gone-' || true)
		[ -z "$gone" ] && break
		sleep 0.05
	done
	assert_eq "$gone" ""
	mkdir -p "$PADDOCK_HOME/boxes/.gone-crashed-1/net" && touch "$PADDOCK_HOME/boxes/.gone-crashed-1/config.json"
	assert_not_contains "$(pd ls)" "gone"
	[ ! -e "$PADDOCK_HOME/boxes/.gone-crashed-1" ] || fail "ls did not sweep a leftover"
}
t_concurrent_execs_on_one_box() {
	pd create c1 >/dev/null
	local i pids=()
	for i in $(seq 10); do
		( out=$(pd exec c1 -- sh -c "echo $i") && [ "$out" = "$i" ] ) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || fail "a concurrent exec failed"; done
	pd rm -f c1
}
# More sessions at once than the supervisor once took connections (64), and a stop while they
# all run: every exec is served, stop ends them, nothing of the box's cgroups is left.
t_eighty_execs_at_once_and_a_stop() {
	pd create c2 >/dev/null
	local i pids=() st=0
	for i in $(seq 80); do
		pd exec c2 -- sleep 20 2>>"$PADDOCK_HOME/exec-errors" &
		pids+=($!)
	done
	local count='cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^sleep$"'
	for _ in $(seq 300); do [ "$(pd exec c2 -- sh -c "$count")" = 80 ] && break; sleep 0.1; done
	assert_eq "$(pd exec c2 -- sh -c "$count")" "80"
	pd stop c2
	for p in "${pids[@]}"; do wait "$p" || st=$?; done
	assert_eq "$st" "143" "the execs end with their command's SIGTERM"
	assert_eq "$(cat "$PADDOCK_HOME/exec-errors")" ""
	local leaf
	leaf=$(cgroup_leaf c2)
	pd rm c2
	assert_eq "$(cgroups_at "$leaf")" ""
}
# The client's position in the file it reads as stdin (its fd 0)
stdin_pos() { awk '/^pos:/ {print $2}' "/proc/$1/fdinfo/0"; }
# Another session of box $1 (by $PADDOCK, or by the command in $2) runs at once: its output
# and its status come back within 15 s
another_session_runs() {
	local out st=0 t0=$SECONDS
	out=$(timeout -k 1 30 ${2:-"$PADDOCK"} exec "$1" -- sh -c 'echo ok; exit 3') || st=$?
	assert_eq "$out" "ok"
	assert_eq "$st" 3
	[ $((SECONDS - t0)) -lt 15 ] || fail "another session of $1 took $((SECONDS - t0)) s"
}
# One session whose command never reads its stdin while its client pours data in: the box
# takes about a window of it, the client stops reading, and another session of the box still
# runs at once, with its output and its status (paddock-init stopped reading its whole control
# channel once 1 MiB of one session's stdin waited, and every other session froze)
t_a_backed_up_stdin_stalls_only_its_own_session() {
	pd create --workspace none fl1 >/dev/null
	truncate -s 1G "$PADDOCK_HOME/zeros"
	"$PADDOCK" exec fl1 -- sleep 1000 <"$PADDOCK_HOME/zeros" >/dev/null 2>&1 &
	local a=$! pos=-1 now st=0
	# until the client reads no more of it
	for _ in $(seq 100); do
		sleep 0.3
		now=$(stdin_pos $a)
		[ "$now" = "$pos" ] && [ "$now" -gt 0 ] && break
		pos=$now
	done
	another_session_runs fl1
	[ "$pos" -gt 0 ] && [ "$pos" -lt $((4 << 20)) ] || fail "the client read $pos bytes of a stdin nobody takes"
	# the stalled session itself still takes its signals, and ends with its status
	kill -TERM $a
	st=0
	timeout 30 tail --pid=$a -f /dev/null || fail "the stalled session did not end on TERM"
	wait $a || st=$?
	assert_eq "$st" 143
	pd rm -f fl1 >/dev/null
}
# A client that stops reading a flood of output (one blocked writing to a FIFO nobody reads,
# one SIGSTOPped): another session of the box still runs at once (the supervisor stopped
# reading paddock-init once 8 MiB waited for one client, and every session's output froze)
t_a_stalled_output_reader_stalls_only_its_own_session() {
	pd create --workspace none fl2 >/dev/null
	mkfifo "$PADDOCK_HOME/fifo"
	exec 3<>"$PADDOCK_HOME/fifo" # a reader that never reads
	"$PADDOCK" exec fl2 -- cat /dev/zero >"$PADDOCK_HOME/fifo" 2>/dev/null &
	local a=$!
	"$PADDOCK" exec fl2 -- cat /dev/zero >/dev/null 2>&1 &
	local b=$!
	sleep 1
	kill -STOP $b
	sleep 3 # the floods fill whatever they can
	another_session_runs fl2
	kill -KILL $a $b
	wait $a $b 2>/dev/null || true
	exec 3<&-
	pd rm -f fl2 >/dev/null
}
# A peer of protocol minor 1 (an older paddock: no windows), stood in for by PADDOCK_TESTING=1
# PADDOCK_TEST_PROTO_MINOR=1
OLDER="env PADDOCK_TESTING=1 PADDOCK_TEST_PROTO_MINOR=1 $PADDOCK"
# The pipes of box $1 through the CLI command $2: 20 MB of random bytes through stdin and
# stdout, and through stderr, unchanged; a status comes back
pipes_round_trip() {
	head -c 20000000 /dev/urandom >data
	assert_eq "$($2 exec "$1" -- cat <data | sha256sum)" "$(sha256sum <data)"
	assert_eq "$($2 exec "$1" -- sh -c 'cat >&2' <data 2>&1 >/dev/null | sha256sum)" "$(sha256sum <data)"
	assert_status 3 $2 exec "$1" -- sh -c 'exit 3'
}
# An older CLI on a supervisor whose box speaks windows: the supervisor grants and holds in its
# place. Pipes stay binary-clean both ways, statuses come back, and a stalled session of the
# older CLI (stdin nobody takes; output nobody reads) still stalls only itself.
t_an_older_client_on_a_box_with_windows() {
	pd create --workspace none ow1 >/dev/null
	pipes_round_trip ow1 "$OLDER"
	truncate -s 1G zeros
	$OLDER exec ow1 -- sleep 1000 <zeros >/dev/null 2>&1 &
	local a=$!
	$OLDER exec ow1 -- cat /dev/zero >/dev/null 2>&1 &
	local b=$!
	sleep 1
	kill -STOP $b
	sleep 3
	another_session_runs ow1
	another_session_runs ow1 "$OLDER"
	local pos
	pos=$(stdin_pos $a)
	[ "$pos" -lt $((8 << 20)) ] || fail "the supervisor took $pos bytes of a stdin nobody takes"
	kill -KILL $a $b
	wait $a $b 2>/dev/null || true
	pd rm -f ow1 >/dev/null
}
# A box whose supervisor and init are older (minor 1 there: no windows anywhere): this CLI
# speaks the old way to it, binary-clean, with its statuses
t_a_box_of_an_older_supervisor() {
	$OLDER create --workspace none os1 >/dev/null
	pipes_round_trip os1 "$PADDOCK"
	assert_eq "$(pd exec os1 -- head -c 5000000 /dev/zero | wc -c)" "5000000"
	assert_eq "$(pd exec os1 -- sh -c 'echo out; echo err >&2' 2>&1 | sort | tr '\n' ' ')" "err out "
	pd rm -f os1 >/dev/null
}
# Sessions whose client went away and whose process ignores SIGHUP: their output is dropped
# (one writes 20 MB nobody reads and goes on), and at most 32 of them are kept — the oldest
# beyond are killed — so the box still takes new sessions. Each used to keep its slot for
# ever: past 256 of them, every exec was refused until the box stopped.
t_sessions_that_lost_their_client_do_not_fill_the_box() {
	pd_only ns "the supervisor does this alike on every backend; 300 sessions take minutes under TCG"
	pd create --workspace none or1 >/dev/null
	local batch i pids=() started=$PADDOCK_HOME/started
	"$PADDOCK" exec or1 -- sh -c 'trap "" HUP; echo started; sleep 1; head -c 20000000 /dev/zero; touch /tmp/wrote
		exec sleep 1000' >"$started.0" &
	for _ in $(seq 100); do [ -s "$started.0" ] && break; sleep 0.1; done
	kill -KILL $!
	for _ in $(seq 100); do pd exec or1 -- test -e /tmp/wrote && break; sleep 0.2; done
	pd exec or1 -- test -e /tmp/wrote || fail "the output of a session without its client was not dropped"
	for batch in 1 2 3; do
		pids=()
		for i in $(seq 100); do
			"$PADDOCK" exec or1 -- sh -c 'trap "" HUP; echo started; exec sleep 1000' >>"$started.$batch" 2>&1 &
			pids+=($!)
		done
		for _ in $(seq 300); do [ "$(grep -c started "$started.$batch")" -ge 100 ] && break; sleep 0.1; done
		kill -KILL "${pids[@]}" 2>/dev/null || true
		wait "${pids[@]}" 2>/dev/null || true
	done
	assert_eq "$(timeout -k 1 30 "$PADDOCK" exec or1 -- echo ok 2>&1)" "ok"
	local count='cat /proc/[0-9]*/comm 2>/dev/null | grep -c "^sleep$"'
	for _ in $(seq 100); do [ "$(pd exec or1 -- sh -c "$count")" -le 32 ] && break; sleep 0.1; done
	assert_eq "$(pd exec or1 -- sh -c "$count")" 32
	assert_contains "$(pd logs or1)" "lost its client and outlived its SIGHUP; killed"
	pd rm -f or1 >/dev/null
}
t_concurrent_lifecycle_calls_are_serialised() {
	pd create c2 >/dev/null
	local i
	for i in 1 2 3; do pd stop c2 & pd start c2 & done
	wait
	pd start c2
	assert_eq "$(status_of c2)" "running"
	assert_eq "$(pd exec c2 -- echo ok)" "ok"
	pd rm -f c2
	assert_eq "$(ls "$PADDOCK_HOME/boxes")" ""
}
t_concurrent_creates_of_distinct_boxes() {
	local i
	for i in $(seq 8); do pd create "p$i" >/dev/null & done
	wait
	assert_eq "$(pd ls --json | python3 -c 'import json,sys; print(sum(b["status"]=="running" for b in json.load(sys.stdin)))')" "8"
	pd rm -f --all
}
# run --rm leaves its box's exit and cgroup to a detached remover: the same name at once
# again works every time (the new box gets a cgroup of its own), a box holding memory is
# still gone (process and cgroup) within seconds, and the status is the command's
t_run_rm_back_to_back_with_one_name() {
	pd_only ns "the detached remover of an ns box (its cgroup)"
	local i out st n=rr$$
	for i in 1 2 3 4 5 6; do
		st=0
		out=$(pd run --rm --name $n --workspace none -- sh -c 'head -c 64m /dev/zero >/tmp/fill; echo run'"$i"'; exit 3') || st=$?
		assert_eq "$st" "3"
		assert_eq "$out" "run$i"
	done
	for _ in $(seq 100); do
		[ -z "$(find /sys/fs/cgroup -maxdepth 5 -type d -name "box-$n.*" 2>/dev/null)" ] && \
			! pgrep -f -- "--name $n " >/dev/null && break
		sleep 0.05
	done
	assert_eq "$(find /sys/fs/cgroup -maxdepth 5 -type d -name "box-$n.*" 2>/dev/null)" ""
	! pgrep -af -- "--name $n " || fail "a remover or box process is still there"
	assert_eq "$(ls -A "$PADDOCK_HOME/boxes")" ""
}
# one user, two PADDOCK_HOMEs, one box name: independent boxes (their cgroups must not collide)
t_same_name_in_two_homes() {
	local other=$PADDOCK_HOME/other-home
	mkdir -p "$other"
	pd create --workspace none twin >/dev/null
	PADDOCK_HOME=$other pd create --workspace none twin >/dev/null
	assert_eq "$(PADDOCK_HOME=$other pd exec twin -- echo hi)" "hi"
	assert_eq "$(pd exec twin -- echo hi)" "hi"
	PADDOCK_HOME=$other pd rm -f twin
	assert_eq "$(pd exec twin -- echo still)" "still"
	pd rm -f twin
}
t_stop_kills_stubborn_processes() {
	pd create s1 >/dev/null
	pd exec s1 -- sh -c 'trap "" TERM; sleep 300 &' 
	pd stop -t 1 s1
	assert_eq "$(status_of s1)" "stopped"
	pd rm s1
}
# A box that cannot take part in its stop (its init, or its QEMU, frozen) is killed by the
# supervisor a little after the stop's time: stop and rm -f hung for ever on it
t_stop_and_rm_end_a_frozen_box() {
	local name
	for name in fz1 fz2; do
		pd create --workspace none $name >/dev/null
		local spid c frozen=""
		spid=$(pd ls --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['name']=='$name'][0]['supervisor_pid'])")
		if [ "$PD_BACKEND" = vm ]; then
			frozen=$(pgrep -f "name paddock-$name " | head -1)
		else
			for c in $(pgrep -P "$spid"); do
				grep -Eq '^NSpid:.*[[:space:]]1$' "/proc/$c/status" && frozen=$c
			done
		fi
		[ -n "$frozen" ] || fail "no process of $name to freeze"
		kill -STOP "$frozen"
		local t0=$SECONDS st=0
		if [ $name = fz1 ]; then
			timeout -s KILL 30 "$PADDOCK" stop -t 1 $name || st=$?
			assert_eq "$st" 0
			assert_eq "$(status_of $name)" "stopped"
		else
			timeout -s KILL 30 "$PADDOCK" rm -f $name || st=$?
			assert_eq "$st" 0
		fi
		[ $((SECONDS - t0)) -lt 20 ] || fail "ending a frozen box took $((SECONDS - t0)) s"
		kill -0 "$frozen" 2>/dev/null && fail "the frozen process of $name is still there"
		pd rm -f $name >/dev/null 2>&1 || true
	done
	assert_eq "$(pd ls | tail -n +2)" ""
}
# The first Ctrl-C (SIGINT) of an exec goes to the box; a second one while the box has said
# nothing since gives up at once (an exec into a frozen box could not be stopped but by
# SIGKILL), and the session does not outlive it
t_a_second_signal_to_a_silent_exec_gives_up() {
	pd create --workspace none sig2 >/dev/null
	local pid st=0 t0
	"$PADDOCK" exec sig2 -- sh -c 'trap "" INT; sleep 30' &
	pid=$!
	sleep 1
	kill -INT $pid
	sleep 1.2
	kill -0 $pid 2>/dev/null || fail "the first SIGINT ended the exec (the box ignores it)"
	t0=$SECONDS
	kill -INT $pid
	wait $pid || st=$?
	assert_eq "$st" 130
	[ $((SECONDS - t0)) -lt 5 ] || fail "giving up took $((SECONDS - t0)) s"
	for _ in $(seq 50); do pd exec sig2 -- sh -c 'grep -qx sleep /proc/[0-9]*/comm' || break; sleep 0.1; done
	assert_status 1 pd exec sig2 -- sh -c 'grep -qx sleep /proc/[0-9]*/comm'
	pd rm -f sig2 >/dev/null
}
# create interrupted (Ctrl-C, TERM) either made the box and says so (status 0, its name) or
# made nothing (128+N): never a running box behind a failure status
t_an_interrupted_create_is_all_or_nothing() {
	local d st n=0
	for d in 0.05 0.2 0.5 1; do
		n=$((n + 1))
		st=0
		timeout --preserve-status -s INT $d "$PADDOCK" create --workspace none ci$n >/dev/null 2>&1 || st=$?
		if [ "$st" = 0 ]; then
			assert_eq "$(status_of ci$n)" "running"
		else
			assert_eq "$st" 130
			[ ! -e "$PADDOCK_HOME/boxes/ci$n" ] || fail "an interrupted create (after $d s) left ci$n: $(pd ls)"
		fi
		pd rm -f ci$n >/dev/null 2>&1 || true
	done
	assert_eq "$(pd ls | tail -n +2)" ""
}
t_logs_console_is_for_vm_boxes() {
	pd_only ns "the refusal is for boxes without a console"
	pd create lc1 >/dev/null
	assert_status 2 pd logs --console lc1
	pd rm -f lc1 >/dev/null
}
t_logs_show_the_lifecycle() {
	pd create l1 >/dev/null
	pd stop l1
	assert_contains "$(pd logs l1)" "running"
	assert_contains "$(pd logs l1)" "stopped"
	pd rm l1
}
# the supervisor's log quotes the box (its tar's and programs' error lines at start): logs
# shows each line escaped, a last line without its newline too, and -f likewise
t_logs_escape_what_the_box_wrote() {
	pd create l2 >/dev/null
	pd stop l2
	printf 'box said: \033]52;c;cGF3bmVk\007 \342\200\256evil\000x\ntail\033[2J' >>"$PADDOCK_HOME/boxes/l2/supervisor.log"
	local out
	out=$(pd logs l2 | od -An -c | tr -s ' ')
	assert_not_contains "$out" '033'
	assert_not_contains "$out" '007'
	assert_not_contains "$out" '\0'
	out=$(pd logs l2)
	assert_contains "$out" 'box said: \x1b]52;c;cGF3bmVk\x07 \xe2\x80\xaeevil\x00x'
	assert_contains "$out" 'tail\x1b[2J'
	pd rm l2
}
# stop always ends: a supervisor that does not answer (here SIGSTOPped; a box can wedge its
# control channel) is given the greeting's 10 s and the stop's time, then killed
t_stop_ends_when_the_supervisor_does_not_answer() {
	pd create --workspace none s9 >/dev/null
	local sup t0
	sup=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['supervisor_pid'])" \
		"$PADDOCK_HOME/boxes/s9/state.json")
	kill -STOP "$sup"
	t0=$SECONDS
	assert_status 0 timeout 90 "$PADDOCK" stop -t 1 s9
	[ $((SECONDS - t0)) -lt 60 ] || fail "stop took $((SECONDS - t0)) s"
	local state
	state=$(sed 's/.*) //' "/proc/$sup/stat" 2>/dev/null | cut -c1)
	[ -z "$state" ] || [ "$state" = Z ] || { kill -CONT "$sup"; fail "the supervisor still lives ($state)"; }
	assert_not_contains "$(pd ls)" "running"
	pd rm -f s9 >/dev/null
}
# an exec whose environment, with the box's own -e, passes the protocol's limits fails alone;
# the box and its other sessions go on
t_exec_too_large_with_the_box_env_fails_alone() {
	local big
	big=$(head -c 60000 /dev/zero | tr '\0' x)
	pd create --workspace none -e "A=$big" -e "B=$big" -e "C=$big" eb >/dev/null
	local out rc=0
	out=$(pd exec -e "D=$big" -e "E=$big" eb -- true 2>&1) || rc=$?
	assert_eq "$rc" 125 "$out"
	assert_contains "$out" "too large"
	assert_eq "$(pd exec eb -- sh -c 'echo ${#A}')" 60000 "the box lives on"
	pd rm -f eb >/dev/null
}
# a name no sandbox can have is a usage error (2) on every verb that takes one, as on create
# (it was paddock's own failure, 125, on all but create and run), said before anything is done
t_an_invalid_name_is_a_usage_error_on_every_verb() {
	pd create okname >/dev/null
	local v bad out
	for bad in '../x' 'a b' "$(printf 'e\033[31m')"; do
		for v in start stop rm logs shell diff apply "stop -f" "rm -f" "apply --branch"; do
			# shellcheck disable=SC2086
			out=$(pd $v "$bad" 2>&1 </dev/null) && fail "$v '$bad' succeeded"
			# shellcheck disable=SC2086
			assert_status 2 pd $v "$bad" </dev/null
			assert_contains "$out" "invalid name"
			assert_not_contains "$out" $'\033'
		done
		assert_status 2 pd exec "$bad" -- true
		assert_status 2 pd policy ls --sandbox "$bad"
		assert_status 2 pd policy allow --sandbox "$bad" example.com
		# checked before any is acted on: the valid name beside it is left alone
		assert_status 2 pd stop okname "$bad"
		assert_eq "$(status_of okname)" "running"
	done
	pd rm -f okname >/dev/null
}
t_ls_json_is_valid() {
	pd create j1 >/dev/null
	pd ls --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[0]["name"]=="j1" and d[0]["backend"]=="'"$PD_BACKEND"'"'
	pd ls | grep -q '^j1 '
	pd rm -f j1
}
# a box whose config.json cannot be loaded (cut short, unreadable to its user, gone) is listed
# as broken with the reason, never hidden behind a name that 'create' then calls taken; rm
# removes it, and rm -f when its supervisor still runs
broken_field() { pd ls --json | python3 -c "import json,sys; print(next(b.get('$2') for b in json.load(sys.stdin) if b['name']=='$1'))"; }
t_a_box_with_a_broken_config_is_listed_and_removed() {
	local out
	pd create --workspace none bc1 >/dev/null
	pd stop bc1
	printf '{"name": "bc1", "backe' >"$PADDOCK_HOME/boxes/bc1/config.json"
	assert_eq "$(status_of bc1)" "broken"
	assert_eq "$(broken_field bc1 reason)" "config.json is not valid JSON"
	out=$(pd ls 2>&1)
	assert_contains "$(echo "$out" | grep '^bc1 ')" " broken "
	assert_contains "$out" "bc1 is broken: config.json is not valid JSON"
	assert_contains "$(pd create --workspace none bc1 2>&1 || true)" "already exists"
	out=$(pd start bc1 2>&1) && fail "a broken box started"
	assert_contains "$out" "sandbox 'bc1' is broken: config.json is not valid JSON; 'paddock rm bc1' removes it"
	pd rm bc1
	assert_eq "$(status_of bc1)" "absent"
	# a running box whose config went bad: rm says why it refuses, rm -f ends and removes it
	pd create --workspace none bc2 >/dev/null
	echo '[1, 2' >"$PADDOCK_HOME/boxes/bc2/config.json"
	assert_eq "$(status_of bc2)" "broken"
	assert_ne "$(broken_field bc2 supervisor_pid)" "None"
	out=$(pd rm bc2 2>&1) && fail "rm removed a running box"
	assert_contains "$out" "sandbox 'bc2' is running; stop it first or use rm -f"
	pd rm -f bc2
	assert_eq "$(status_of bc2)" "absent"
	# a configuration gone for longer than a create takes to write it
	pd create --workspace none bc3 >/dev/null
	pd stop bc3
	rm "$PADDOCK_HOME/boxes/bc3/config.json"
	touch -d '-1 min' "$PADDOCK_HOME/boxes/bc3"
	assert_eq "$(status_of bc3)" "broken"
	assert_eq "$(broken_field bc3 reason)" "config.json is missing"
	pd rm bc3
	assert_eq "$(status_of bc3)" "absent"
	# unreadable to its user (host root reads any file)
	[ "$(id -u)" != 0 ] || return 0
	pd create --workspace none bc4 >/dev/null
	pd stop bc4
	chmod 000 "$PADDOCK_HOME/boxes/bc4/config.json"
	assert_eq "$(status_of bc4)" "broken"
	assert_contains "$(broken_field bc4 reason)" "Permission denied"
	pd rm bc4
	assert_eq "$(status_of bc4)" "absent"
}
# a healthy box's entry keeps its fields
t_ls_json_of_a_healthy_box() {
	pd create --workspace none h1 >/dev/null
	pd ls --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert sorted(d[0]) == ["backend", "created", "name", "status", "supervisor_pid", "user"], sorted(d[0])'
	pd rm -f h1
}
t_help_on_every_verb() {
	local v
	for v in run create start stop rm ls exec shell logs doctor version system diff apply cp profile; do
		pd "$v" --help | grep -q "Usage: paddock $v" || fail "no --help for $v"
		pd "$v" -h | grep -q "Usage: paddock $v" || fail "no -h for $v"
		pd help "$v" | grep -q "Usage: paddock $v" || fail "no 'paddock help $v'"
	done
	pd --help | grep -q "Verbs:"
	# help on a verb there is not is the usage error that verb would be (it printed the
	# general help and exited 0)
	assert_status 2 pd help nosuchverb
	assert_contains "$(pd help nosuchverb 2>&1)" "unknown verb 'nosuchverb'"
	# and on every sub-verb: help, exit 0, nothing done
	local sub
	for sub in "profile ls" "profile show" "image ls" "image gc" "image inspect" "image rm" "image build" \
		"image import" "image pull" "policy ls" "policy allow" "system setup"; do
		# shellcheck disable=SC2086
		assert_status 0 pd $sub --help
	done
}
t_doctor_reports() {
	local out
	out=$(pd doctor)
	assert_contains "$out" "ns backend"
	assert_contains "$out" "Landlock"
	assert_contains "$out" "/dev/kvm"
	assert_contains "$out" "vm templates: "
	assert_contains "$(PADDOCK_VM_TEMPLATE=0 pd doctor)" "vm templates: off"
}

run_tests
