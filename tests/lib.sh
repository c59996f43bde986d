# tests/lib.sh — tiny harness for integration and escape tests (sourced by bash scripts).
#
# Each test is a shell function `t_<name>`; run_tests runs every t_* function defined in the
# calling script in a subshell, prints "ok"/"FAIL" per test, and appends one line per result
# to $PD_RESULTS (the suite runner counts them). A test fails when any command in it fails
# (set -e in the subshell) or when an assertion helper fails.
#
# Environment:
#   PADDOCK      path to the paddock binary under test (required)
#   PD_RESULTS   file collecting "pass NAME" / "fail NAME" lines (optional)
#   PD_PROBE     path to the static probe payload (tests/probe), for escape tests
#   PD_BACKEND   backend to run boxes on (default ns; vm: QEMU guests, see pd_only, pd_probe)
#   PD_FILTER    only run tests whose name matches this extended regex

set -u
PD_BACKEND=${PD_BACKEND:-ns}
# boxes made without --backend (create, run) use it too
export PADDOCK_BACKEND=$PD_BACKEND
: "${PADDOCK:?set PADDOCK to the paddock binary}"
_pd_suite="${PD_SUITE_LABEL:+$PD_SUITE_LABEL/}$(basename "$(dirname "${BASH_SOURCE[1]:-$0}")")/$(basename "${BASH_SOURCE[1]:-$0}" .sh)"

fail() { echo "    assertion failed: $*" >&2; return 1; }
assert_eq() { [ "$1" = "$2" ] || fail "expected '$2', got '$1'${3:+ ($3)}"; }
assert_ne() { [ "$1" != "$2" ] || fail "did not expect '$2'${3:+ ($3)}"; }
assert_contains() { case "$1" in *"$2"*) ;; *) fail "'$2' not in output: $(printf %q "$1" | head -c 600)";; esac; }
assert_not_contains() { case "$1" in *"$2"*) fail "'$2' unexpectedly in output: $(printf %q "$1" | head -c 600)";; esac; }
# assert_status EXPECTED CMD... : runs CMD, asserts its exit status
assert_status() {
	local want=$1; shift
	local got=0
	"$@" || got=$?
	[ "$got" = "$want" ] || fail "exit status $got, expected $want: $*"
}
# a fresh PADDOCK_HOME per test so tests never see each other's boxes
pd_fresh_home() {
	PADDOCK_HOME=$(mktemp -d /tmp/pdtest.XXXXXX)
	chmod 0711 "$PADDOCK_HOME"
	export PADDOCK_HOME
}
pd() { "$PADDOCK" "$@"; }
# whether uid 0 can exist inside a box for this caller (host root, or a subordinate uid range)
pd_root_available() { [ "$(id -u)" = 0 ] || grep -q "^$(id -un):" /etc/subuid 2>/dev/null; }
pd_run() { "$PADDOCK" run --rm --backend "$PD_BACKEND" "$@"; }
# pd_resolve_args NAME...: "--resolve NAME=ADDR" for each name the host resolves, one word a
# line (read with mapfile). This network routes public names to an intercepting proxy at a
# documentation address, which paddock refuses to dial unless told: what a user behind such a
# proxy passes too.
pd_resolve_args() {
	local h a
	for h in "$@"; do
		a=$(getent hosts "$h" | awk '{print $1; exit}') || true
		[ -n "$a" ] && printf '%s\n' --resolve "$h=$a"
	done
	return 0
}
# probe payload inside a box: pd_probe [run options] -- SUBCOMMAND ARGS...
# (a vm guest shares no host path: there the probe travels with the workspace copy of the
# current directory)
pd_probe() {
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	if [ "$PD_BACKEND" = vm ] && [[ " ${opts[*]} " == *" --workspace none "* ]]; then
		# no workspace to carry it: a box of its own, the probe copied in with `cp`
		local name=probe-$$-$RANDOM rc=0
		"$PADDOCK" create --backend vm "${opts[@]}" "$name" >/dev/null || return 125
		"$PADDOCK" cp "$PD_PROBE" "$name:/tmp" && "$PADDOCK" exec "$name" -- /tmp/paddock-probe "$@" || rc=$?
		"$PADDOCK" rm -f "$name" >/dev/null 2>&1
		return $rc
	elif [ "$PD_BACKEND" = vm ]; then
		mkdir -p .probe && cp "$PD_PROBE" .probe/paddock-probe
		"$PADDOCK" run --rm --backend vm "${opts[@]}" -- /workspace/.probe/paddock-probe "$@"
		return
	fi
	"$PADDOCK" run --rm --backend "$PD_BACKEND" -v "$PD_PROBE:/.probe/paddock-probe:ro" "${opts[@]}" -- /.probe/paddock-probe "$@"
}
# pd_file HOSTFILE BOXPATH: sets PD_FILE_OPTS (run options) and PD_FILE_PATH (where the file
# is in the box) so that a box sees HOSTFILE read-only: a bind at BOXPATH on ns; on vm (no
# host path is ever shared) a copy that travels with the workspace copy of the current
# directory (renamed: the copy leaves out secret-looking names such as *.pem)
pd_file() {
	if [ "$PD_BACKEND" = vm ]; then
		mkdir -p .pdfiles && cp "$1" ".pdfiles/$(basename "$2").file"
		PD_FILE_OPTS="" PD_FILE_PATH="/workspace/.pdfiles/$(basename "$2").file"
	else
		PD_FILE_OPTS="-v $1:$2:ro" PD_FILE_PATH=$2
	fi
}
# pd_run_ms [run options] -- PROG ARGS...: runs PROG in a box and prints "MS STATUS": how
# long the command took inside the box beyond PROG's own start-up (`PROG --version`, timed
# first in the same box), and its exit status. Timing assertions use it, so that they measure
# the thing under test and neither the box's start nor loading a program (seconds each for a
# vm guest under TCG on a loaded host).
pd_run_ms() {
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	pd_run "${opts[@]}" -- sh -c 't0=$(date +%s%N); "$1" --version >/dev/null 2>&1; t1=$(date +%s%N)
		rc=0; "$@" >/dev/null 2>&1 || rc=$?; t2=$(date +%s%N)
		ms=$(( (t2 - t1 - (t1 - t0)) / 1000000 )); [ $ms -ge 0 ] || ms=0; echo $ms $rc' sh "$@"
}
# pd_only BACKEND REASON: the test does not apply to other backends; it ends as "skip" (never
# counted as a pass), saying why
pd_only() {
	[ "$PD_BACKEND" = "$1" ] && return 0
	echo "skip: only on the $1 backend: $2"
	exit 77
}

run_tests() {
	local names n rc
	names=$(declare -F | awk '{print $3}' | grep '^t_' || true)
	for n in $names; do
		if [ -n "${PD_FILTER:-}" ] && ! [[ "$n" =~ $PD_FILTER ]]; then continue; fi
		local start=$SECONDS
		# each test starts in an empty directory of its own: `run` copies the current
		# directory into the box by default
		( set -e; pd_fresh_home; mkdir "$PADDOCK_HOME/cwd"; cd "$PADDOCK_HOME/cwd"; trap 'pd_leave_home $?' EXIT; "$n" ) >"/tmp/pdlog.$$.$n" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			printf 'ok   %s/%s (%ss)\n' "$_pd_suite" "${n#t_}" $((SECONDS - start))
			[ -n "${PD_RESULTS:-}" ] && echo "pass $_pd_suite/${n#t_}" >>"$PD_RESULTS"
		elif [ $rc -eq 77 ] && grep -q '^skip: ' "/tmp/pdlog.$$.$n"; then
			printf 'skip %s/%s (%s)\n' "$_pd_suite" "${n#t_}" "$(grep -m1 '^skip: ' "/tmp/pdlog.$$.$n" | cut -c7-)"
			[ -n "${PD_RESULTS:-}" ] && echo "skip $_pd_suite/${n#t_}" >>"$PD_RESULTS"
		else
			printf 'FAIL %s/%s (exit %s)\n' "$_pd_suite" "${n#t_}" $rc
			sed 's/^/    | /' "/tmp/pdlog.$$.$n" | tail -n 60
			[ -n "${PD_RESULTS:-}" ] && echo "fail $_pd_suite/${n#t_}" >>"$PD_RESULTS"
		fi
		rm -f "/tmp/pdlog.$$.$n"
	done
}

# a failed test shows what its boxes logged (the last lines of each), then the home goes
pd_leave_home() {
	local f
	if [ "$1" != 0 ] && [ "$1" != 77 ] && [ -d "${PADDOCK_HOME:-}/boxes" ]; then
		for f in "$PADDOCK_HOME"/boxes/*/supervisor.log "$PADDOCK_HOME"/boxes/*/console.log; do
			[ -s "$f" ] || continue
			echo "--- ${f#"$PADDOCK_HOME"/boxes/}:"
			tail -n 15 "$f" | cut -c1-600 | tr -d '\033'
		done
	fi
	pd_cleanup_home
}

# removes every box of the test's PADDOCK_HOME, then the home itself
pd_cleanup_home() {
	[ -n "${PADDOCK_HOME:-}" ] && [ -d "$PADDOCK_HOME" ] || return 0
	"$PADDOCK" rm -f --all >/dev/null 2>&1 || true
	# a run --rm's detached remover may still be emptying its renamed state directory
	# (boxes/.gone-*): rm -rf races it once ("Directory not empty"); the next pass is clean
	local i
	for i in 1 2 3 4 5 6 7 8 9; do
		rm -rf "$PADDOCK_HOME" 2>/dev/null && return 0
		sleep 0.2
	done
	rm -rf "$PADDOCK_HOME"
}
