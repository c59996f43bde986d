#!/bin/bash
# tests/integration/workspace-fault.sh — issue 3's fault test: `paddock apply` of 5,000 changed
# files is killed with SIGKILL at 20 random moments; after each kill every host file is
# byte-identical to either its old or its new version, and a final apply finishes the job.
. "$(dirname "$0")/../lib.sh"

N=${PD_FAULT_FILES:-5000}

t_apply_survives_sigkill_at_random_points() {
	local P=$PADDOCK_HOME/proj i
	mkdir -p "$P/d"
	for i in $(seq "$N"); do echo "old $i" >"$P/d/f$i"; done
	chmod -R a+rwX "$P"
	(cd "$P" && pd create fault >/dev/null)
	pd exec fault -- sh -c "i=1; while [ \$i -le $N ]; do echo \"new \$i with more bytes\" >d/f\$i; i=\$((i+1)); done"
	pd diff --stat fault >/dev/null
	local k delay
	for k in $(seq 20); do
		delay=$(( (RANDOM % 400) + 5 ))
		"$PADDOCK" apply fault >/dev/null 2>&1 &
		local pid=$!
		sleep "0.$(printf %03d "$delay")"
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		# every file is whole: old or new, never anything else
		local bad
		bad=$(cd "$P/d" && awk 'FNR == 1 { n = substr(FILENAME, 2); seen++ }
			FNR == 1 && $0 != "old " n && $0 != "new " n " with more bytes" { print FILENAME ": " $0 }
			FNR > 1 { print FILENAME ": extra line" }
			END { if (seen != '"$N"') print "files: " seen }' f* | head -3)
		[ -z "$bad" ] || fail "after kill $k at ${delay} ms: $bad"
	done
	pd apply fault >/dev/null
	for i in 1 $((N / 2)) "$N"; do assert_eq "$(cat "$P/d/f$i")" "new $i with more bytes"; done
	assert_eq "$(grep -L "^new " "$P"/d/f* | wc -l)" "0"
	[ -z "$(find "$P" -name '.paddock-tmp-*')" ] || fail "temporary files left behind"
	pd rm -f fault
}

run_tests
