#!/bin/bash
# tests/integration/workspace-freeze.sh — diff and apply read a paused box: a process writing
# in a loop inside the box never produces a torn snapshot, and it runs on afterwards.
. "$(dirname "$0")/../lib.sh"

# The writer bumps a counter in "a" then in "z" (each by rename, so each file is always
# whole); "m.bin" (30 MB, rewritten by the box) sits between them in the fetch order, so an
# unpaused read of "z" comes long after the read of "a". Paused, every snapshot has
# a == z or a == z + 1; unpaused, z runs ahead of a.
WRITER='i=0; while :; do i=$((i+1)); echo $i >a.t; mv a.t a; echo $i >z.t; mv z.t z; done'

consistent() { # DIR: prints nothing when a and z are a paused pair
	local a z
	a=$(cat "$1/a") z=$(cat "$1/z")
	[ "$a" = "$z" ] || [ "$a" = "$((z + 1))" ] || echo "a=$a z=$z"
}

t_writer_in_a_loop_does_not_tear_diff_or_apply() {
	local P=$PADDOCK_HOME/proj k bad
	mkdir -p "$P" && echo base >"$P/base.txt" && chmod -R a+rwX "$P"
	(cd "$P" && pd create frz >/dev/null)
	pd exec frz -- sh -c 'head -c 30000000 /dev/urandom >m.bin'
	pd exec frz -- sh -c "$WRITER" &
	local writer=$!
	sleep 1
	for k in 1 2 3 4 5; do
		pd diff --stat frz >/dev/null
		pd apply --force frz >/dev/null
		bad=$(consistent "$P")
		[ -z "$bad" ] || { kill "$writer"; fail "apply $k took a torn snapshot: $bad"; }
	done
	# the box was resumed: the counter still moves
	local c1 c2
	c1=$(pd exec frz -- cat a)
	sleep 0.5
	c2=$(pd exec frz -- cat a)
	kill "$writer" 2>/dev/null || true
	[ "$c2" -gt "$c1" ] || fail "the writer did not run on after the snapshots ($c1 then $c2)"
	pd rm -f frz >/dev/null
}

t_a_job_stopped_before_the_snapshot_stays_stopped() {
	local P=$PADDOCK_HOME/proj
	mkdir -p "$P" && chmod a+rwX "$P"
	(cd "$P" && pd create frz2 >/dev/null)
	# a process the box stopped itself, and one that runs
	pd exec frz2 -- sh -c 'sleep 1000 & echo $! >stopped.pid; kill -STOP $!; sleep 1000 & echo $! >running.pid' 
	pd diff --stat frz2 >/dev/null
	local st
	st=$(pd exec frz2 -- sh -c 'for f in stopped running; do p=$(cat $f.pid); sed "s/.*) \(.\).*/\1/" /proc/$p/stat; done' | tr '\n' ' ')
	assert_eq "$st" "T S "
	pd rm -f frz2 >/dev/null
}

run_tests
