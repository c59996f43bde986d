# bench/lib.sh — timing helpers shared by the bench/*.sh scripts (sourced, never run).
#
# Every bench script compares paddock with its anchors side by side in ONE run on the
# same machine and reports medians and ratios. Results are printed as table rows
#     name | median | ratio vs anchor
# and appended as TSV lines (suite, name, value, unit, ratio, anchor, note) to
# $BENCH_OUT/<suite>.tsv, which bench/run-all.sh combines into one table.
#
# Environment:
#   BENCH_RUNS     timed runs per command (default 20)
#   BENCH_WARMUP   untimed warm-up runs (default 3)
#   BENCH_OUT      directory for result files (default bench/results)
#   BENCH_WORK     scratch directory for large trees/files (default /var/tmp/paddock-bench)
#   BENCH_PADDOCK_HOME  PADDOCK_HOME for the boxes the benchmarks make
#                  (default $BENCH_WORK/paddock-home)
#   BENCH_NO_HYPERFINE=1  force the plain bash timing loop even if hyperfine exists
#
# Timing: `hyperfine --shell=none --export-json` when installed (Debian package hyperfine),
# else a bash loop around $EPOCHREALTIME (no fork per timestamp; `date +%s%N` if the shell
# lacks it). Peak RSS: GNU time (`/usr/bin/time -f %M`, package time) or VmHWM polled from
# /proc/PID/status for a long-lived process.

set -u
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
BENCH_RUNS=${BENCH_RUNS:-20}
BENCH_WARMUP=${BENCH_WARMUP:-3}
BENCH_OUT=${BENCH_OUT:-$BENCH_DIR/results}
BENCH_WORK=${BENCH_WORK:-/var/tmp/paddock-bench}
BENCH_SUITE=${BENCH_SUITE:-$(basename "${BASH_SOURCE[1]:-$0}" .sh)}
BENCH_SRT=${BENCH_SRT:-$BENCH_DIR/node_modules/.bin/srt}
# absolute: suites change directory (a relative BENCH_SRT once emptied egress's srt rows)
case "$BENCH_SRT" in /*) ;; *) BENCH_SRT=$PWD/$BENCH_SRT ;; esac
mkdir -p "$BENCH_OUT" "$BENCH_WORK"
# absolute: the scripts change directory (PADDOCK=build/src/cli/paddock from the repo root)
case ${PADDOCK:-} in ?*/*) PADDOCK=$(realpath "$PADDOCK") ;; esac
# paddock's state for benchmark boxes stays out of the user's own PADDOCK_HOME
export PADDOCK_HOME=${BENCH_PADDOCK_HOME:-$BENCH_WORK/paddock-home}
mkdir -p "$PADDOCK_HOME" && chmod 0711 "$PADDOCK_HOME"

bench_log() { printf '# %s\n' "$*" >&2; }
bench_die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

# bench_now_ns: current wall clock in nanoseconds
bench_now_ns() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		local t=${EPOCHREALTIME/[.,]/}
		echo "${t}000"
	else
		date +%s%N
	fi
}

# bench_median: reads numbers (one a line) on stdin, prints their median
bench_median() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit 1 }
		if (NR % 2) m = v[(NR + 1) / 2]; else m = (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f\n", m }'
}

# bench_percentile P: reads numbers on stdin, prints the P-th percentile (nearest rank)
bench_percentile() {
	sort -g | awk -v p="$1" '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit 1 }
		r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1; if (r > NR) r = NR
		printf "%.3f\n", v[r] }'
}

# bench_ratio A B: prints A/B with two decimals ("-" when either is missing)
bench_ratio() {
	awk -v a="${1:-}" -v b="${2:-}" 'BEGIN {
		if (a == "" || b == "" || a == "-" || b == "-" || b + 0 == 0) { print "-"; exit }
		printf "%.2f\n", a / b }'
}

# _bench_argv_string ARGV...: argv quoted for hyperfine's shell-words splitting
_bench_argv_string() {
	local out="" a
	for a in "$@"; do
		out+="'${a//\'/\'\\\'\'}' "
	done
	printf '%s' "${out% }"
}

_bench_hyperfine_ok() {
	[ -z "${BENCH_NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1
}

# _bench_hyperfine_median_ms SHELLMODE CMDSTRING [PREPARE]: median in ms via hyperfine
_bench_hyperfine_median_ms() {
	local mode=$1 cmd=$2 prep=${3:-} json err
	json=$(mktemp "$BENCH_WORK/hf.XXXXXX.json")
	err=$(mktemp "$BENCH_WORK/hf.XXXXXX.err")
	local args=(--style none --runs "$BENCH_RUNS" --warmup "$BENCH_WARMUP" --export-json "$json")
	if [ "$mode" = none ]; then args+=(--shell=none); else args+=(--shell "$mode"); fi
	[ -n "$prep" ] && args+=(--prepare "$prep")
	if ! hyperfine "${args[@]}" -- "$cmd" >/dev/null 2>"$err"; then
		bench_log "hyperfine failed for: $cmd"
		sed 's/^/#   /' "$err" | tail -n 15 >&2
		rm -f "$json" "$err"
		return 1
	fi
	jq -r '.results[0].times[] * 1000' "$json" 2>/dev/null | bench_median ||
		awk -F'[:,]' '/"median"/ { printf "%.2f\n", $2 * 1000; exit }' "$json"
	rm -f "$json" "$err"
}

# _bench_loop_median_ms PREPARE CMD...: median in ms via a plain bash loop
_bench_loop_median_ms() {
	local prep=$1; shift
	local i t0 t1 samples=()
	for ((i = 0; i < BENCH_WARMUP + BENCH_RUNS; i++)); do
		[ -n "$prep" ] && { bash -c "$prep" >/dev/null 2>&1 || return 1; }
		t0=$(bench_now_ns)
		"$@" </dev/null >/dev/null 2>&1 || { bench_log "command failed: $*"; return 1; }
		t1=$(bench_now_ns)
		((i >= BENCH_WARMUP)) && samples+=("$(((t1 - t0) / 1000))")
	done
	printf '%s\n' "${samples[@]}" | awk '{ print $1 / 1000 }' | bench_median
}

# bench_rounds_ms ROUNDS ARGVSTRING...: the commands (argv strings from _bench_argv_string)
# timed by hyperfine in ROUNDS alternating blocks of BENCH_RUNS/ROUNDS runs each; prints one
# median per command, in order, over all its runs. Alternating blocks keep a drift of the
# machine (a neighbour's load for a minute) from landing on one command alone: with one block
# per command, bwrap's median here once moved 4.95 -> 11.80 ms between two runs of the script.
# Needs hyperfine and jq (fails otherwise: the caller falls back to bench_time_ms).
bench_rounds_ms() {
	local rounds=$1; shift
	_bench_hyperfine_ok && command -v jq >/dev/null 2>&1 || return 1
	local per=$(((BENCH_RUNS + rounds - 1) / rounds)) r i dir
	dir=$(mktemp -d "$BENCH_WORK/rounds.XXXXXX")
	for ((r = 0; r < rounds; r++)); do
		if ! hyperfine --style none --shell=none --runs "$per" --warmup "$BENCH_WARMUP" \
			--export-json "$dir/$r.json" -- "$@" >/dev/null 2>"$dir/err"; then
			bench_log "hyperfine failed for: $*"
			sed 's/^/#   /' "$dir/err" | tail -n 15 >&2
			rm -rf "$dir"
			return 1
		fi
	done
	for ((i = 0; i < $#; i++)); do
		cat "$dir"/[0-9]*.json | jq -r ".results[$i].times[] * 1000" | bench_median
	done
	rm -rf "$dir"
}

# bench_time_ms CMD...: runs the argv BENCH_RUNS times, prints the median wall time in ms.
# Fails (status 1) if any run exits non-zero. BENCH_PREPARE (shell string) runs untimed
# before each run.
bench_time_ms() {
	if _bench_hyperfine_ok; then
		_bench_hyperfine_median_ms none "$(_bench_argv_string "$@")" "${BENCH_PREPARE:-}"
	else
		_bench_loop_median_ms "${BENCH_PREPARE:-}" "$@"
	fi
}

# bench_time_sh_ms 'SHELL STRING': like bench_time_ms for a pipeline (run by bash -c;
# hyperfine subtracts the shell's own start-up, the loop does not: ~1 ms bias).
bench_time_sh_ms() {
	if _bench_hyperfine_ok; then
		_bench_hyperfine_median_ms bash "$1" "${BENCH_PREPARE:-}"
	else
		_bench_loop_median_ms "${BENCH_PREPARE:-}" bash -c "$1"
	fi
}

# bench_once_ms CMD...: one timed run (for costly steps), prints ms; fails if CMD fails
bench_once_ms() {
	local t0 t1
	t0=$(bench_now_ns)
	"$@" </dev/null >/dev/null 2>&1 || { bench_log "command failed: $*"; return 1; }
	t1=$(bench_now_ns)
	awk -v d="$((t1 - t0))" 'BEGIN { printf "%.2f\n", d / 1e6 }'
}

# bench_parallel_ms N CMD...: wall time in ms to run N copies of CMD concurrently (all
# started back to back, then waited for); fails if any copy fails, showing its stderr
bench_parallel_ms() {
	local n=$1; shift
	local i t0 t1 bad=0 pids=() errd
	errd=$(mktemp -d "$BENCH_WORK/par.XXXXXX")
	t0=$(bench_now_ns)
	for ((i = 0; i < n; i++)); do
		"$@" </dev/null >/dev/null 2>"$errd/$i" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		wait "${pids[$i]}" && continue
		bad=$((bad + 1))
		[ $bad = 1 ] && { bench_log "copy $i of $n failed: $*"; sed 's/^/#   /' "$errd/$i" | tail -n 8 >&2; }
	done
	t1=$(bench_now_ns)
	rm -rf "$errd"
	if [ $bad != 0 ]; then
		bench_log "$bad of $n concurrent copies failed"
		# BENCH_PAR_TOLERATE=1: keep the time, count the failures in $BENCH_WORK/par-failures
		[ "${BENCH_PAR_TOLERATE:-0}" = 1 ] || return 1
		echo "$bad" >>"$BENCH_WORK/par-failures"
	fi
	awk -v d="$((t1 - t0))" 'BEGIN { printf "%.2f\n", d / 1e6 }'
}

# bench_parallel_failures: failures counted under BENCH_PAR_TOLERATE=1 since the last call
bench_parallel_failures() {
	local f="$BENCH_WORK/par-failures"
	[ -f "$f" ] && awk '{ s += $1 } END { print s + 0 }' "$f" || echo 0
	rm -f "$f"
}

# bench_parallel_median_ms N REPEATS CMD...: median over REPEATS of bench_parallel_ms
bench_parallel_median_ms() {
	local n=$1 reps=$2; shift 2
	local r v samples=()
	for ((r = 0; r < reps; r++)); do
		v=$(bench_parallel_ms "$n" "$@") || return 1
		samples+=("$v")
	done
	printf '%s\n' "${samples[@]}" | bench_median
}

# bench_peak_rss_kb CMD...: peak RSS in KiB of CMD as reported by GNU time (%M, i.e.
# ru_maxrss from wait4: the largest of CMD and the descendants it waited for)
bench_peak_rss_kb() {
	[ -x /usr/bin/time ] || { bench_log "GNU time missing (apt-get install time)"; return 1; }
	local f
	f=$(mktemp "$BENCH_WORK/rss.XXXXXX")
	if ! /usr/bin/time -f %M -o "$f" "$@" </dev/null >/dev/null 2>&1; then
		bench_log "command failed: $*"
		rm -f "$f"
		return 1
	fi
	tail -n 1 "$f"
	rm -f "$f"
}

# bench_peak_rss_median_kb REPEATS CMD...: median over REPEATS of bench_peak_rss_kb
bench_peak_rss_median_kb() {
	local reps=$1 r v samples=(); shift
	for ((r = 0; r < reps; r++)); do
		v=$(bench_peak_rss_kb "$@") || return 1
		samples+=("$v")
	done
	printf '%s\n' "${samples[@]}" | bench_median
}

# bench_vmhwm_kb PID: current VmHWM (peak RSS of that process alone) in KiB
bench_vmhwm_kb() {
	awk '/^VmHWM:/ { print $2; found = 1 } END { exit !found }' "/proc/$1/status" 2>/dev/null
}

# bench_vmrss_kb PID: current VmRSS in KiB
bench_vmrss_kb() {
	awk '/^VmRSS:/ { print $2; found = 1 } END { exit !found }' "/proc/$1/status" 2>/dev/null
}

# bench_poll_hwm_kb PID [INTERVAL]: polls VmHWM of a long-lived PID until it exits and
# prints the last value seen (the process's own peak, children not included)
bench_poll_hwm_kb() {
	local pid=$1 iv=${2:-0.02} v last=""
	while v=$(bench_vmhwm_kb "$pid"); do
		last=$v
		sleep "$iv"
	done
	[ -n "$last" ] && echo "$last"
}

# bench_row NAME VALUE UNIT [ANCHOR_VALUE ANCHOR_NAME] [NOTE]: prints one table row and
# records it. VALUE "-" means not measured (NOTE says why). No ANCHOR_NAME: the row is an
# anchor; ANCHOR_NAME "-": a paddock row with nothing to divide by (absolute target).
bench_row() {
	local name=$1 value=$2 unit=$3 anchor=${4:-} aname=${5:-} note=${6:-} ratio="-"
	[ -n "$anchor" ] && ratio=$(bench_ratio "$value" "$anchor")
	local rtext="$ratio"
	[ "$ratio" != "-" ] && rtext="${ratio}x vs ${aname}"
	[ -z "$anchor" ] && [ -z "$aname" ] && rtext="anchor"
	[ "$value" = "-" ] || [ "$aname" = "-" ] && rtext="-"
	printf '%-58s | %12s %-3s | %s%s\n' "$name" "$value" "$unit" "$rtext" "${note:+  ($note)}"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$BENCH_SUITE" "$name" "$value" "$unit" "$ratio" \
		"$aname" "$note" >>"$BENCH_OUT/$BENCH_SUITE.tsv"
}

# bench_header TITLE: starts this suite's table (and truncates its result file)
bench_header() {
	: >"$BENCH_OUT/$BENCH_SUITE.tsv"
	printf '\n== %s ==\n' "$1"
	printf '%-58s | %16s | %s\n' "benchmark" "median" "ratio"
	printf '%s\n' "$(printf -- '-%.0s' $(seq 1 100))"
}

# bench_machine: one line describing this machine (for the record)
bench_machine() {
	local os
	os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
	printf '%s, %s cores, %s, kernel %s, load %s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" \
		"$(nproc)" "${os:-unknown OS}" "$(uname -r)" "$(cut -d' ' -f1-3 /proc/loadavg)"
}

# bench_srt_settings: writes (once) a minimal valid sandbox-runtime settings file and
# prints its path. srt refuses an empty or partial file, so both sections are present.
bench_srt_settings() {
	local f="$BENCH_WORK/srt-settings.json"
	local domains=${1:-}
	[ -n "$domains" ] && f="$BENCH_WORK/srt-settings-net.json"
	printf '{"network":{"allowedDomains":[%s],"deniedDomains":[]},%s\n' "$domains" \
		'"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}' >"$f"
	chmod 0644 "$f"
	echo "$f"
}

# bench_srt_cmd [DOMAINS]: prints nothing, sets SRT_CMD=(srt invocation up to and incl. --).
# srt leaves its proxy socket behind on exit (os.tmpdir()/srt-mux-PID-0.sock) and cannot
# replace a stale one another user owns in /tmp, so a reused PID then fails with
# EADDRINUSE: give it a TMPDIR of its own and empty it first.
bench_srt_cmd() {
	local tmp="$BENCH_WORK/srt-tmp-$(id -u)"
	mkdir -p "$tmp" && find "$tmp" -maxdepth 1 -name 'srt-mux-*.sock' -delete
	SRT_CMD=(env TMPDIR="$tmp" "$BENCH_SRT" --settings "$(bench_srt_settings "${1:-}")" --)
}

# bench_paddock_works: true when $PADDOCK is set and `run --rm --backend ns -- true` works
bench_paddock_works() {
	[ -n "${PADDOCK:-}" ] && [ -x "$PADDOCK" ] &&
		"$PADDOCK" run --rm --backend "${1:-ns}" -- true </dev/null >/dev/null 2>&1
}

# bench_paddock_has VERB: true when $PADDOCK knows VERB (its --help succeeds)
bench_paddock_has() {
	[ -n "${PADDOCK:-}" ] && [ -x "$PADDOCK" ] && "$PADDOCK" "$1" --help >/dev/null 2>&1
}
