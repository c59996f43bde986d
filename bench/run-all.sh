#!/bin/bash
# bench/run-all.sh — runs every benchmark and prints one combined table.
#
#   PADDOCK=build/src/cli/paddock bench/run-all.sh [SUITE...]
#
# SUITE: ns-startup workspace egress vm-startup images (default: all, in that order). Anchors must
# be installed first (bench/setup-anchors.sh). Each suite writes bench/results/SUITE.tsv
# (or $BENCH_OUT/SUITE.tsv); a failing suite is reported and the others still run.
# Exit status: 0 if every suite ran, 1 otherwise.
set -u
BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
export BENCH_OUT=${BENCH_OUT:-$BENCH_DIR/results}
SUITES=("$@")
[ ${#SUITES[@]} -eq 0 ] && SUITES=(ns-startup workspace egress vm-startup images)
mkdir -p "$BENCH_OUT"

rc=0
failed=()
for s in "${SUITES[@]}"; do
	[ -x "$BENCH_DIR/$s.sh" ] || { echo "run-all: no suite $s" >&2; rc=1; failed+=("$s"); continue; }
	rm -f "$BENCH_OUT/$s.tsv"
	if ! "$BENCH_DIR/$s.sh"; then
		rc=1
		failed+=("$s")
	fi
done

printf '\n== all suites — %s (load %s) ==\n' "${PADDOCK:-PADDOCK unset: anchors only}" \
	"$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s | %-58s | %14s %-6s | %s\n' suite benchmark median unit ratio
for s in "${SUITES[@]}"; do
	[ -f "$BENCH_OUT/$s.tsv" ] || continue
	awk -F'\t' '{
		r = ($5 == "-" || $5 == "") ? "-" : $5 "x vs " $6
		if ($3 == "-") r = "-"
		else if ($6 == "") r = "anchor"
		printf "%-12s | %-58s | %14s %-6s | %s%s\n", $1, $2, $3, $4, r, ($7 != "" ? "  (" $7 ")" : "")
	}' "$BENCH_OUT/$s.tsv"
done
[ ${#failed[@]} -gt 0 ] && printf 'failed suites: %s\n' "${failed[*]}"
exit $rc
