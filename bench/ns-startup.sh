#!/bin/bash
# bench/ns-startup.sh — issue 2: start-up cost of an ns box against bubblewrap and
# Anthropic's sandbox-runtime, in one run on this machine.
#
#   PADDOCK=build/src/cli/paddock bench/ns-startup.sh
#
# Measures (medians of BENCH_RUNS runs, default 20; bwrap and paddock in BENCH_ROUNDS
# alternating blocks, default 5):
#   paddock run --rm --backend ns -- true         (all of paddock's layers on)
#   bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true
#   srt --settings FILE -- true                   (sandbox-runtime 0.0.78, bench/node_modules)
# Ratios: paddock/bwrap (target <= 2x), srt/paddock (target >= 20x).
# Peak RSS: GNU time %M of each whole command (for `run --rm` the supervisor runs inside
# the paddock process, so this is the supervisor plus what it reaped: an upper bound), and
# paddock's own VmHWM polled from /proc while a `run --rm -- sleep 1` box is alive
# (target <= 4 MB), and the detached supervisor's VmHWM after `create` + `exec -- true`. Concurrency: wall time for 50 boxes started at once (median of
# BENCH_PAR_REPEATS, default 5), each running `sleep 0`.
# Every command runs from an empty directory: paddock copies its working directory into
# the box by default, so that copy costs the same (nothing) on every machine; a row with
# --workspace none shows the box alone.
# Without a working $PADDOCK the anchors run alone and paddock rows say "not measured".
set -u
. "$(dirname "$0")/lib.sh"

BWRAP=(bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc)
PAR_N=${BENCH_PAR_N:-50}
PAR_REPEATS=${BENCH_PAR_REPEATS:-5}
RSS_REPEATS=${BENCH_RSS_REPEATS:-5}
ROUNDS=${BENCH_ROUNDS:-5}   # alternating blocks of the start-up rows (bench_rounds_ms)
NA="not measured: paddock run --rm --backend ns -- true does not work yet"

# srt scans its working directory for files it must protect (ripgrep, depth 3): run every
# command from the same empty directory so that scan costs the same on every machine
cwd="$BENCH_WORK/empty-cwd"
mkdir -p "$cwd" && cd "$cwd" || bench_die "cannot enter $cwd"
[ -x "$BENCH_SRT" ] || bench_die "srt missing: run bench/setup-anchors.sh"
bench_srt_cmd
PD_CMD=()
if bench_paddock_works ns; then
	PD_CMD=("$PADDOCK" run --rm --backend ns --)
else
	bench_log "PADDOCK=${PADDOCK:-unset}: paddock side not available yet, anchors only"
fi

time_startup() {
	bench_header "ns start-up, $(id -un) (issue 2) — $(bench_machine)"
	local bw srt pd="" none="" all
	srt=$(bench_time_ms "${SRT_CMD[@]}" true) || bench_die "srt failed"
	# bwrap and paddock (the default, and the box alone: the default copies the empty working
	# directory in) in alternating rounds, so that a drift of the machine hits all three
	if [ ${#PD_CMD[@]} -gt 0 ] &&
		all=$(bench_rounds_ms "$ROUNDS" "$(_bench_argv_string "${BWRAP[@]}" true)" \
			"$(_bench_argv_string "${PD_CMD[@]}" true)" \
			"$(_bench_argv_string "${PD_CMD[@]:0:5}" --workspace none -- true)"); then
		read -r bw pd none <<<"$(echo $all)"
	else
		bw=$(bench_time_ms "${BWRAP[@]}" true) || bench_die "bwrap failed"
		[ ${#PD_CMD[@]} -gt 0 ] && { pd=$(bench_time_ms "${PD_CMD[@]}" true) || pd=""; }
		[ -n "$pd" ] && none=$(bench_time_ms "${PD_CMD[@]:0:5}" --workspace none -- true 2>/dev/null)
	fi
	bench_row "bwrap --unshare-all ... true" "$bw" ms
	if [ -n "$pd" ]; then
		bench_row "paddock run --rm --backend ns -- true" "$pd" ms "$bw" bwrap "target <= 2x"
		if [ -n "$none" ]; then
			bench_row "paddock run --rm --backend ns --workspace none -- true" "$none" ms "$bw" bwrap
		fi
		bench_row "srt -- true (sandbox-runtime)" "$srt" ms "$pd" paddock "target >= 20x"
	else
		bench_row "paddock run --rm --backend ns -- true" - ms "" - "$NA"
		bench_row "srt -- true (sandbox-runtime)" "$srt" ms "$bw" bwrap
	fi
}

# paddock's own peak RSS: poll VmHWM of the paddock process while a box sleeps
paddock_own_hwm() {
	local pid v samples=() r
	for ((r = 0; r < RSS_REPEATS; r++)); do
		"${PD_CMD[@]}" sleep 1 </dev/null >/dev/null 2>&1 &
		pid=$!
		v=$(bench_poll_hwm_kb "$pid" 0.01)
		wait "$pid" || return 1
		[ -n "$v" ] && samples+=("$v")
	done
	[ ${#samples[@]} -gt 0 ] && printf '%s\n' "${samples[@]}" | bench_median
}

# the detached supervisor of a persistent box: VmHWM after `create` and one `exec -- true`
detached_hwm() {
	local r name st pid v samples=()
	for ((r = 0; r < RSS_REPEATS; r++)); do
		name=bench-rss-$$-$r
		"$PADDOCK" create --workspace none "$name" >/dev/null 2>&1 || return 1
		"$PADDOCK" exec "$name" -- true </dev/null >/dev/null 2>&1
		st="$PADDOCK_HOME/boxes/$name/state.json"
		pid=$(sed -n 's/.*"supervisor_pid":[[:space:]]*\([0-9]*\).*/\1/p' "$st" 2>/dev/null)
		v=$([ -n "$pid" ] && bench_vmhwm_kb "$pid")
		"$PADDOCK" rm -f "$name" >/dev/null 2>&1
		[ -n "$v" ] && samples+=("$v")
	done
	[ ${#samples[@]} -gt 0 ] && printf '%s\n' "${samples[@]}" | bench_median
}

peak_rss() {
	local bw srt pd own
	bw=$(bench_peak_rss_median_kb "$RSS_REPEATS" "${BWRAP[@]}" true) || bw=-
	srt=$(bench_peak_rss_median_kb "$RSS_REPEATS" "${SRT_CMD[@]}" true) || srt=-
	bench_row "peak RSS: bwrap ... true (GNU time %M)" "$bw" KiB
	bench_row "peak RSS: srt -- true (GNU time %M)" "$srt" KiB
	if [ ${#PD_CMD[@]} -gt 0 ]; then
		pd=$(bench_peak_rss_median_kb "$RSS_REPEATS" "${PD_CMD[@]}" true) || pd=-
		own=$(paddock_own_hwm) || own=-
		bench_row "peak RSS: paddock run --rm -- true (GNU time %M)" "$pd" KiB "$bw" bwrap \
			"incl. reaped children"
		bench_row "peak RSS: paddock process alone (VmHWM)" "$own" KiB "" "-" "target <= 4096 KiB"
		own=$(detached_hwm) || own=-
		bench_row "peak RSS: detached supervisor, create + exec true (VmHWM)" "$own" KiB "" "-" \
			"target <= 4096 KiB"
	else
		bench_row "peak RSS: paddock supervisor" - KiB "" - "$NA"
	fi
}

concurrent() {
	local bw srt pd
	bw=$(bench_parallel_median_ms "$PAR_N" "$PAR_REPEATS" "${BWRAP[@]}" sleep 0) || bw=-
	bench_row "$PAR_N x bwrap ... sleep 0, concurrent (wall)" "$bw" ms
	if [ "${BENCH_SKIP_SRT_PAR:-0}" = 0 ]; then
		# srt is flaky at this load on 2 cores: its `which rg`/`which socat` checks have a
		# 1 s timeout and its socat bridges 5 short retries, so a few copies fail; count them
		bench_parallel_failures >/dev/null
		srt=$(BENCH_PAR_TOLERATE=1 bench_parallel_median_ms "$PAR_N" 3 "${SRT_CMD[@]}" sleep 0) || srt=-
		bench_row "$PAR_N x srt -- sleep 0, concurrent (wall)" "$srt" ms "$bw" bwrap \
			"3 repeats, $(bench_parallel_failures) of $((PAR_N * 3)) copies failed"
	fi
	if [ ${#PD_CMD[@]} -gt 0 ]; then
		pd=$(bench_parallel_median_ms "$PAR_N" "$PAR_REPEATS" "${PD_CMD[@]}" sleep 0) || pd=-
		bench_row "$PAR_N x paddock run --rm -- sleep 0, concurrent (wall)" "$pd" ms "$bw" bwrap
	else
		bench_row "$PAR_N x paddock run --rm -- sleep 0, concurrent (wall)" - ms "" - "$NA"
	fi
}

time_startup
peak_rss
concurrent
