#!/bin/bash
# bench/workspace.sh — issue 3: copy-in, `diff --stat` after 1% of the files changed, and
# `apply` of those 500 files, against `tar -C src -cf - . | tar -C dst -xf -`, in one run.
#
#   PADDOCK=build/src/cli/paddock bench/workspace.sh
#
# The tree: bench/gen-tree.py, 50,000 files / 1 GiB, deterministic, generated once under
# $BENCH_WORK/ws (kept between runs; BENCH_WS_FILES / BENCH_WS_BYTES make it smaller for
# a quick try). The 1% change is every file whose index ends in 00 (500 files): a line
# appended. All timings run with a warm page cache and without fsync on the tar side.
#
# Rows:
#   tar | tar of the whole tree (anchor for copy-in; median of BENCH_WS_RUNS, default 5),
#     into $BENCH_WORK's filesystem and (reference) into tmpfs: on this machine's ext4
#     virtual disk the write side dominates, so say which one paddock's copy lands on
#   diff -rq of the pristine and the changed tree (reference: a tool that reads both trees)
#   tar | tar of the 500 changed files onto a copy (reference for apply)
#   paddock-init:tar -c | paddock-init:tar -x into tmpfs (the box's own tar; vs tar|tar tmpfs)
#   paddock run --rm -w TREE --workspace copy -- true       (copy-in; target <= 1.5x tar|tar)
#   paddock diff NAME --stat after the 1% change              (target <= 1 s; median of
#                                                              BENCH_WS_DIFF_RUNS, default 3)
#   paddock apply NAME of the 500 changed files               (target <= 0.5 s; BENCH_WS_APPLY_REPEATS
#                                                              fresh boxes, default 3, each
#                                                              after an untimed diff; the
#                                                              host tree must then equal the
#                                                              changed reference tree)
# The paddock rows run only if $PADDOCK has `diff` and `apply` and `--workspace copy`;
# otherwise they say "paddock side not available yet".
set -u
. "$(dirname "$0")/lib.sh"

FILES=${BENCH_WS_FILES:-50000}
BYTES=${BENCH_WS_BYTES:-1073741824}
WS_RUNS=${BENCH_WS_RUNS:-5}
DISK_MB=${BENCH_WS_DISK_MB:-$(((BYTES * 2 >> 20) + 512))}
DISK=${DISK_MB}M
# an ns box's disk lives in its memory and is capped to fit it (ns_disk_cap: the memory less
# /dev/shm's quarter and a reserve of up to 512 MiB), so the box gets twice the disk
MEMORY=$((DISK_MB * 2))M
APPLY_REPEATS=${BENCH_WS_APPLY_REPEATS:-3}
DIFF_RUNS=${BENCH_WS_DIFF_RUNS:-3}
WS="$BENCH_WORK/ws"
SRC="$WS/src-$FILES-$BYTES"
CHANGED="$WS/changed-$FILES-$BYTES"
BOX=pdbench-ws
TARTAR_TMPFS=-
NA="paddock side not available yet"
CHANGE_FIND=(-type f -name 'f???00.*')

# the 1% change, as a shell snippet run in DIR ($1) — on the host or inside the box
CHANGE_SH='cd "$1" && find . -type f -name "f???00.*" | sort | while IFS= read -r f; do echo "changed by the agent" >>"$f"; done'

fs_of() { stat -f -c %T "$1"; }

make_trees() {
	if [ ! -f "$SRC/.complete" ]; then
		bench_log "generating $FILES files / $BYTES bytes in $SRC (once)"
		rm -rf "$SRC" && mkdir -p "$SRC"
		python3 "$BENCH_DIR/gen-tree.py" "$SRC" --files "$FILES" --bytes "$BYTES" ||
			bench_die "tree generation failed"
		: >"$SRC/.complete"
	fi
	if [ ! -f "$CHANGED/.complete" ]; then
		rm -rf "$CHANGED" && cp -a "$SRC" "$CHANGED" && rm -f "$CHANGED/.complete"
		bash -c "$CHANGE_SH" sh "$CHANGED"
		: >"$CHANGED/.complete"
	fi
	local n
	n=$(find "$SRC" "${CHANGE_FIND[@]}" | wc -l)
	bench_log "tree: $(find "$SRC" -type f ! -name .complete | wc -l) files, $(find "$SRC" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }') bytes; $n files change"
}

anchors() {
	local dst="$WS/dst"
	TARTAR=$(BENCH_RUNS=$WS_RUNS BENCH_WARMUP=1 BENCH_PREPARE="rm -rf '$dst' && mkdir -p '$dst'" \
		bench_time_sh_ms "tar -C '$SRC' -cf - . | tar -C '$dst' -xf -") ||
		bench_die "tar | tar failed"
	bench_row "tar -C src -cf - . | tar -C dst -xf - ($FILES files, dst on $(fs_of "$WS"))" "$TARTAR" ms
	local shm=/dev/shm/paddock-bench-dst t
	if [ "${BENCH_WS_TMPFS:-1}" = 1 ] && [ -d /dev/shm ]; then
		t=$(BENCH_RUNS=$WS_RUNS BENCH_WARMUP=1 BENCH_PREPARE="rm -rf '$shm' && mkdir -p '$shm'" \
			bench_time_sh_ms "tar -C '$SRC' -cf - . | tar -C '$shm' -xf -") || t=-
		rm -rf "$shm"
		bench_row "tar | tar, dst on tmpfs (/dev/shm)" "$t" ms "$TARTAR" "tar|tar $(fs_of "$WS")"
		TARTAR_TMPFS=$t
	fi
	local d
	d=$(BENCH_RUNS=3 BENCH_WARMUP=0 bench_time_sh_ms "diff -rq '$SRC' '$CHANGED' >/dev/null; [ \$? = 1 ]") || d=-
	bench_row "diff -rq pristine changed (reference for diff --stat)" "$d" ms
	# the 500 changed files written over a copy of the pristine tree
	local list="$WS/changed.list"
	(cd "$CHANGED" && find . "${CHANGE_FIND[@]}" | sort) >"$list"
	rm -rf "$dst" && cp -a "$SRC" "$dst"
	d=$(BENCH_RUNS=5 BENCH_WARMUP=1 bench_time_sh_ms "tar -C '$CHANGED' -cf - -T '$list' | tar -C '$dst' -xf -") || d=-
	bench_row "tar | tar of the $(wc -l <"$list") changed files (reference for apply)" "$d" ms
	rm -rf "$dst"
}

# paddock-init's tar built-in (the box's end of every workspace stream on vm, of diff's fetch,
# cp and saved workspaces on every backend) against GNU tar, both into tmpfs: the static
# binary beside $PADDOCK's build (BENCH_INIT to name another)
init_tar() {
	local init=${BENCH_INIT:-$(dirname "${PADDOCK:-.}")/../guest/paddock-init} shm=/dev/shm/paddock-bench-dst t
	if [ ! -x "$init" ] || ! "$init" paddock-init:tar -c "$WS/probe" >/dev/null 2>&1 || [ ! -d /dev/shm ]; then
		bench_row "paddock-init:tar -c | paddock-init:tar -x, dst on tmpfs" - ms "" - "no paddock-init with the tar built-in at $init"
		return 0
	fi
	t=$(BENCH_RUNS=$WS_RUNS BENCH_WARMUP=1 BENCH_PREPARE="rm -rf '$shm' && mkdir -p '$shm'" \
		bench_time_sh_ms "'$init' paddock-init:tar -c '$SRC' | '$init' paddock-init:tar -x '$shm'") || t=-
	rm -rf "$shm"
	bench_row "paddock-init:tar -c | paddock-init:tar -x, dst on tmpfs" "$t" ms "$TARTAR_TMPFS" "tar|tar tmpfs" \
		"the box's own tar (no GNU tar needed in an image)"
}

paddock_ready() {
	bench_paddock_works ns && bench_paddock_has diff && bench_paddock_has apply &&
		mkdir -p "$WS/probe" && "$PADDOCK" run --rm --backend ns -w "$WS/probe" \
		--workspace copy -- true </dev/null >/dev/null 2>&1
}

paddock_copy_in() {
	local c base
	c=$(BENCH_RUNS=$WS_RUNS BENCH_WARMUP=1 bench_time_ms \
		"$PADDOCK" run --rm --backend ns --disk "$DISK" --memory "$MEMORY" -w "$SRC" --workspace copy -- true) || c=-
	base=$(BENCH_RUNS=$WS_RUNS bench_time_ms "$PADDOCK" run --rm --backend ns --workspace none -- true) || base=-
	# an ns box's tree is a tmpfs: divide by the tar|tar whose destination is one too
	local anchor=$TARTAR aname="tar|tar $(fs_of "$WS")"
	[ "$TARTAR_TMPFS" != - ] && anchor=$TARTAR_TMPFS aname="tar|tar tmpfs"
	bench_row "paddock run --rm -w TREE --workspace copy -- true" "$c" ms "$anchor" "$aname" \
		"target <= 1.5x; $(bench_ratio "$c" "$TARTAR")x tar|tar $(fs_of "$WS"); box alone $base ms"
}

# one fresh box over a fresh host copy: change 1% inside, time diff --stat, time apply
paddock_diff_apply_once() {
	local host="$WS/host" out
	"$PADDOCK" rm -f "$BOX" >/dev/null 2>&1
	rm -rf "$host" && cp -a "$SRC" "$host" && rm -f "$host/.complete"
	# the copy's writeback (1 GiB at this disk's ~65 MB/s) must not run under the timed apply:
	# its fsyncs would queue behind it (875 ms here; 340 ms once the tree is on disk, as a
	# user's project is)
	sync
	# --disk: the box's tmpfs must hold the copy and the changes
	"$PADDOCK" create --backend ns --disk "$DISK" --memory "$MEMORY" -w "$host" --workspace copy "$BOX" >/dev/null || return 1
	"$PADDOCK" exec "$BOX" -- sh -c "$CHANGE_SH" sh /workspace || return 1
	# diff is read-only: time it on the first box only; every apply follows a diff, as the
	# workflow goes (diff, review, apply: the apply applies the snapshot that diff showed)
	if [ "$DIFF_MS" = - ]; then
		DIFF_MS=$(BENCH_RUNS=$DIFF_RUNS BENCH_WARMUP=1 bench_time_ms "$PADDOCK" diff "$BOX" --stat) || DIFF_MS=-
	else
		"$PADDOCK" diff "$BOX" --stat >/dev/null || return 1
	fi
	out=$(bench_once_ms "$PADDOCK" apply "$BOX") || out=-
	APPLY_SAMPLES+=("$out")
	if ! diff -r --exclude=.complete "$host" "$CHANGED" >/dev/null; then
		bench_log "after apply the host tree differs from the expected changed tree"
		APPLY_WRONG=1
	fi
	"$PADDOCK" rm -f "$BOX" >/dev/null 2>&1
	rm -rf "$host"
}

paddock_side() {
	if ! paddock_ready; then
		bench_log "PADDOCK=${PADDOCK:-unset}: $NA"
		bench_row "paddock copy-in (run --rm -w TREE --workspace copy)" - ms "" - "$NA"
		bench_row "paddock diff --stat after 1% changed" - ms "" - "$NA"
		bench_row "paddock apply of 500 changed files" - ms "" - "$NA"
		return 0
	fi
	paddock_copy_in
	local r
	APPLY_SAMPLES=() APPLY_WRONG=0 DIFF_MS=-
	for ((r = 0; r < APPLY_REPEATS; r++)); do
		paddock_diff_apply_once || { bench_log "box setup failed"; break; }
	done
	bench_row "paddock diff NAME --stat after 1% changed" "$DIFF_MS" ms "" "-" "target <= 1000 ms"
	local a=-
	[ ${#APPLY_SAMPLES[@]} -gt 0 ] && a=$(printf '%s\n' "${APPLY_SAMPLES[@]}" | grep -v '^-$' | bench_median)
	bench_row "paddock apply NAME (the $(wc -l <"$WS/changed.list") changed files)" "${a:--}" ms "" "-" \
		"target <= 500 ms; ${#APPLY_SAMPLES[@]} boxes$([ "$APPLY_WRONG" = 1 ] && echo '; RESULT WRONG')"
}

bench_header "workspace (issue 3) — $(bench_machine)"
make_trees
anchors
mkdir -p "$WS/probe"
init_tar
paddock_side
