#!/bin/bash
# tests/escape/run-all.sh — runs every escape suite against one paddock binary and backend
# and prints the totals; exit 1 if any test failed.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe \
#       [PD_BACKEND=ns] [PD_FILTER=regex] bash tests/escape/run-all.sh [SUITE...]
# Suites: fs proc syscalls net-local resources tty (default: all).
set -u
: "${PADDOCK:?set PADDOCK to the paddock binary}" "${PD_PROBE:?set PD_PROBE to the paddock-probe binary}"
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(fs proc syscalls net-local resources tty)
PD_RESULTS=$(mktemp /tmp/pdesc-results.XXXXXX)
export PD_RESULTS PADDOCK PD_PROBE
for s in "${suites[@]}"; do
	bash "$here/$s.sh"
done
pass=$(grep -c '^pass ' "$PD_RESULTS")
failed=$(grep -c '^fail ' "$PD_RESULTS")
echo "escape tests (${PD_BACKEND:-ns}, uid $(id -u)): $pass passed, $failed failed"
grep '^fail ' "$PD_RESULTS" | sed 's/^fail /  FAIL /'
rm -f "$PD_RESULTS"
[ "$failed" = 0 ]
