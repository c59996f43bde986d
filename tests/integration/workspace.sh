#!/bin/bash
# tests/integration/workspace.sh — the project copied in, reviewed with diff, applied safely.
. "$(dirname "$0")/../lib.sh"
REG=$(cd "$(dirname "$0")/../registry" && pwd)

mkproj() {
	P=$PADDOCK_HOME/proj
	mkdir -p "$P/src"
	echo hello >"$P/a.txt"
	echo 'int main(void) { return 0; }' >"$P/src/m.c"
	echo 'SECRET=hunter2' >"$P/.env"
	echo '-----BEGIN KEY-----' >"$P/server.pem"
	printf 'node_modules/\n' >"$P/.paddockignore"
	mkdir -p "$P/node_modules/x" && echo big >"$P/node_modules/x/i.js"
	chmod -R a+rwX "$P"
}

t_copy_in_leaves_out_secrets_and_ignored() {
	mkproj
	local out
	out=$(cd "$P" && pd_run -- sh -c 'pwd; ls -A /workspace | sort | tr "\n" " "')
	assert_contains "$out" "/workspace"
	assert_contains "$out" "a.txt"
	assert_contains "$out" "src"
	assert_not_contains "$out" ".env"
	assert_not_contains "$out" "server.pem"
	assert_not_contains "$out" "node_modules"
	# and the user is told what was left out
	local err
	err=$(cd "$P" && pd_run -- true 2>&1 >/dev/null)
	assert_contains "$err" "not copied in: .env (excluded by default (secrets))"
	assert_contains "$err" "not copied in: server.pem"
	assert_contains "$err" "not copied in: node_modules (excluded by .paddockignore)"
}
# the copy is also at the project's host path (a link to /workspace) when the box has root
t_project_is_at_its_host_path_too() {
	pd_root_available || { echo "skip: no root user in this caller's boxes"; exit 77; }
	mkproj
	local out
	out=$(cd "$P" && pd_run -- sh -c "readlink '$P'; cat '$P/a.txt'; cd '$P' && ls src")
	assert_eq "$out" "/workspace
$(cat "$P/a.txt")
m.c"
}
t_box_writes_only_its_copy() {
	mkproj
	(cd "$P" && pd_run -- sh -c 'echo box >>a.txt; rm src/m.c; echo x >new.txt')
	assert_eq "$(cat "$P/a.txt")" "hello"
	[ -e "$P/src/m.c" ] && [ ! -e "$P/new.txt" ]
}
t_diff_and_apply() {
	mkproj
	(cd "$P" && pd create ws1 >/dev/null)
	pd exec ws1 -- sh -c 'echo more >>a.txt; echo new >b.txt; rm src/m.c; chmod +x b.txt'
	local stat
	stat=$(pd diff --stat ws1)
	assert_contains "$stat" "M a.txt"
	assert_contains "$stat" "A b.txt"
	assert_contains "$stat" "D src/m.c"
	# options may follow the name too
	assert_contains "$(pd diff ws1 --stat)" "M a.txt"
	pd diff --json ws1 | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d["changes"])==3, d'
	pd apply ws1
	assert_eq "$(cat "$P/a.txt")" "$(printf 'hello\nmore')"
	assert_eq "$(cat "$P/b.txt")" "new"
	[ -x "$P/b.txt" ] || fail "mode not applied"
	[ ! -e "$P/src/m.c" ] || fail "deletion not applied"
	# a second apply finds everything already there
	pd apply --fresh ws1 | grep -q "0 conflicts"
	pd rm -f ws1
}
# the agent goes on after an apply: the next apply (no diff between) takes a new snapshot and
# applies the new change, not "already applied" from the last one's snapshot and not a
# conflict over the file the last apply wrote; diff shows only what came after; a host edit
# after the apply is still a conflict, and so across a stop and start
t_apply_again_after_more_work() {
	mkproj
	(cd "$P" && pd create ws9 >/dev/null)
	pd exec ws9 -- sh -c 'echo v1 >a.txt; echo new >b.txt'
	pd apply ws9 >/dev/null
	assert_eq "$(cat "$P/a.txt")" "v1"
	assert_contains "$(pd diff --stat ws9)" " 0 paths changed"
	pd exec ws9 -- sh -c 'echo v2 >a.txt; rm b.txt'
	local stat out
	stat=$(pd diff --stat ws9)
	assert_contains "$stat" "M a.txt"
	assert_contains "$stat" "D b.txt"
	assert_not_contains "$stat" "src/m.c"
	pd exec ws9 -- sh -c 'echo v3 >a.txt'
	out=$(pd apply --fresh ws9) || fail "second apply: $out"
	assert_contains "$out" "2 applied"
	assert_eq "$(cat "$P/a.txt")" "v3"
	[ ! -e "$P/b.txt" ] || fail "the deletion after the first apply was not applied"
	pd exec ws9 -- sh -c 'echo v4 >a.txt'
	out=$(pd apply ws9) || fail "third apply: $out"
	assert_contains "$out" "1 applied"
	assert_eq "$(cat "$P/a.txt")" "v4"
	pd stop ws9 >/dev/null && pd start ws9 >/dev/null
	pd exec ws9 -- sh -c 'echo v5 >a.txt'
	echo "host edit" >"$P/a.txt"
	assert_status 1 pd apply ws9
	assert_eq "$(cat "$P/a.txt")" "host edit"
	pd rm -f ws9
}

# an empty project skips tar in the box; the box still gets a writable /workspace, and what
# it adds comes back through diff and apply
t_empty_project_round_trip() {
	local E=$PADDOCK_HOME/empty
	mkdir -p "$E" && chmod 0755 "$E"
	(cd "$E" && pd create wse >/dev/null)
	pd exec wse -- sh -c 'test -w /workspace && test -z "$(ls -A /workspace)" && mkdir /workspace/d && echo n >/workspace/d/n.txt'
	assert_contains "$(pd diff --stat wse)" "A d/n.txt"
	pd apply wse >/dev/null
	assert_eq "$(cat "$E/d/n.txt")" "n"
	pd rm -f wse
}
t_apply_dry_run_writes_nothing() {
	mkproj
	(cd "$P" && pd create ws2 >/dev/null)
	# and says what the real run does, also where a file becomes a directory with entries
	pd exec ws2 -- sh -c 'echo x >dry.txt && rm a.txt && mkdir a.txt && echo in >a.txt/in'
	local dry real
	dry=$(pd apply --dry-run ws2 2>/dev/null)
	[ ! -e "$P/dry.txt" ] || fail "dry run wrote a file"
	[ -f "$P/a.txt" ] || fail "dry run changed a.txt"
	real=$(pd apply ws2 2>/dev/null)
	# the same lines, worded as what would be done
	assert_contains "$dry" "dry run, nothing written: "
	assert_not_contains "$dry" "applied "
	dry=${dry//would apply   /applied       }
	dry=${dry//dry run, nothing written: /}
	assert_eq "${dry//would be applied/applied}" "$real"
	assert_eq "$(cat "$P/a.txt/in")" "in"
	pd rm -f ws2
}
t_conflict_is_not_overwritten() {
	mkproj
	(cd "$P" && pd create ws3 >/dev/null)
	pd exec ws3 -- sh -c 'echo box >a.txt'
	echo "host edit" >"$P/a.txt"
	assert_status 1 pd apply ws3
	assert_eq "$(cat "$P/a.txt")" "host edit"
	pd apply --force --fresh ws3 >/dev/null
	assert_eq "$(cat "$P/a.txt")" "box"
	# a mode changed on the host (chmod 600 of a private file, its content as copied in) is a
	# change too: a conflict, not silently overwritten
	local out
	pd exec ws3 -- sh -c 'echo "int main(void) { return 1; }" >src/m.c'
	chmod 600 "$P/src/m.c"
	out=$(pd apply --fresh ws3 2>&1) && fail "apply over a host chmod exited 0"
	assert_contains "$out" "conflict"
	assert_eq "$(stat -c %a "$P/src/m.c")" "600"
	assert_eq "$(cat "$P/src/m.c")" 'int main(void) { return 0; }'
	pd rm -f ws3
}
t_host_executing_paths_need_consent() {
	mkproj
	mkdir -p "$P/.git/hooks" && chmod -R a+rwX "$P/.git"
	(cd "$P" && pd create ws4 >/dev/null)
	pd exec ws4 -- sh -c 'printf "#!/bin/sh\necho pwned\n" >.git/hooks/post-checkout; echo "use flake" >.envrc; mkdir -p .vscode; echo "{}" >.vscode/tasks.json'
	assert_contains "$(pd diff --stat ws4)" "host-executing"
	assert_status 1 pd apply ws4
	[ ! -e "$P/.git/hooks/post-checkout" ] && [ ! -e "$P/.envrc" ] && [ ! -e "$P/.vscode/tasks.json" ] || fail "an exec path was written"
	pd apply --fresh --allow-exec-paths .envrc ws4 >/dev/null || true
	[ -e "$P/.envrc" ] || fail ".envrc not applied when allowed"
	[ ! -e "$P/.git/hooks/post-checkout" ] || fail "hook written without consent"
	pd rm -f ws4
}
# The box cannot make the host's files writable by group or others: a 0666 file arrives as
# 0644 under umask 022, a 0777 script as 0755; diff shows the mode apply writes
t_apply_does_not_widen_write_permission() {
	mkproj
	(cd "$P" && pd create wsmd >/dev/null)
	pd exec wsmd -- sh -c 'echo x >new.txt; chmod 666 new.txt; printf "#!/bin/sh\n" >run.sh; chmod 777 run.sh; chmod 666 a.txt'
	(umask 022; pd apply wsmd >/dev/null 2>&1) || true
	assert_eq "$(stat -c %a "$P/new.txt") $(stat -c %a "$P/run.sh")" "644 755"
	assert_eq "$(stat -c %a "$P/a.txt")" "$(stat -c %a "$P/src/m.c")" "a.txt kept its host mode"
	pd rm -f wsmd
}
# git runs hooks from core.hooksPath when the host's configuration sets one: a directory of the
# project named there is .git/hooks for apply's purposes (as are .husky/ and .githooks/)
t_hooks_path_inside_the_project_needs_consent() {
	mkproj
	git -C "$P" init -q && git -C "$P" config core.hooksPath tools/hooks && chmod -R a+rwX "$P/.git"
	(cd "$P" && pd create wshp >/dev/null)
	pd exec wshp -- sh -c 'mkdir -p tools/hooks .husky && printf "#!/bin/sh\necho pwned\n" >tools/hooks/pre-commit
		printf "npm test\n" >.husky/pre-commit; echo ok >tools/notes.txt'
	local out
	out=$(pd diff --stat wshp)
	assert_contains "$out" "host-executing"
	out=$(pd apply wshp 2>&1) && fail "apply with unconsented hooks exited 0"
	[ ! -e "$P/tools/hooks/pre-commit" ] || fail "a core.hooksPath hook was written: $out"
	[ ! -e "$P/.husky/pre-commit" ] || fail "a husky hook was written: $out"
	assert_eq "$(cat "$P/tools/notes.txt")" "ok"
	pd apply --fresh --allow-exec-paths tools/hooks wshp >/dev/null 2>&1 || true
	[ -e "$P/tools/hooks/pre-commit" ] || fail "the hook named with --allow-exec-paths was not applied"
	pd rm -f wshp
}
# The project's .paddockignore decides which host secrets stay out of every box: a box that
# re-includes .env there must not get it applied, or the next box would receive the key.
t_a_box_cannot_widen_the_ignore_rules() {
	mkproj
	echo 'API_KEY=hostsecret' >"$P/.env"
	printf 'node_modules/\n' >"$P/.paddockignore"
	(cd "$P" && pd create wsig2 >/dev/null)
	pd exec wsig2 -- sh -c 'echo "!.env" >>.paddockignore'
	assert_contains "$(pd diff --stat wsig2)" "copy-in exclusions"
	assert_status 1 pd apply wsig2
	assert_eq "$(cat "$P/.paddockignore")" "node_modules/"
	(cd "$P" && pd create wsig3 >/dev/null)
	assert_status 1 pd exec wsig3 -- test -e .env
	pd rm -f wsig2 wsig3 >/dev/null
}
# A name the host will not take (a control character) is never applied, and never passed
# over in silence: apply and cp list it as refused and end with status 1 — also when apply
# uses the snapshot a diff took earlier. A kept entry's note does not say "left out".
t_names_left_out_are_reported_as_refused() {
	mkproj
	(cd "$P" && pd create wscc >/dev/null)
	pd exec wscc -- sh -c 'printf x >"$(printf "tab\tname.c")"; echo ok >plain.c; echo s >suid.sh; chmod 4755 suid.sh
		mkdir -p /tmp/o && echo a >/tmp/o/a && printf x >"/tmp/o/$(printf "nl\nx")"'
	local out st=0
	out=$(pd diff --stat wscc 2>&1)
	assert_contains "$out" 'tab\x09name.c: control character in name: left out'
	assert_contains "$out" "suid.sh: setuid/setgid/sticky bits removed"
	assert_not_contains "$out" "bits removed: left out"
	out=$(pd apply wscc 2>&1) || st=$?
	assert_eq "$st" 1
	assert_contains "$out" 'refused          tab\x09name.c'
	assert_contains "$out" "1 refused"
	assert_eq "$(cat "$P/plain.c")" "ok"
	mkdir -p "$PADDOCK_HOME/cpdst"
	st=0
	out=$(pd cp wscc:/tmp/o "$PADDOCK_HOME/cpdst" 2>&1) || st=$?
	assert_eq "$st" 1
	assert_contains "$out" 'refused          o/nl\x0ax'
	assert_eq "$(cat "$PADDOCK_HOME/cpdst/o/a")" "a"
	pd rm -f wscc >/dev/null
}

# Applies to one project run one at a time (the second waits and says so): at once they took
# each other's temp files for an interrupted apply's and removed them mid-write.
t_concurrent_applies_wait_for_each_other() {
	mkproj
	(cd "$P" && pd create wscon >/dev/null)
	pd exec wscon -- sh -c 'for i in $(seq 300); do echo $i >c$i; done'
	pd diff --stat wscon >/dev/null
	local i out=$PADDOCK_HOME/applies
	mkdir -p "$out"
	for i in 1 2 3; do ("$PADDOCK" apply wscon >"$out/$i" 2>&1; echo "rc=$?" >>"$out/$i") & done
	wait
	for i in 1 2 3; do
		assert_contains "$(cat "$out/$i")" "rc=0"
		assert_contains "$(cat "$out/$i")" "0 conflicts, 0 skipped, 0 refused, 0 failed"
	done
	assert_eq "$(cat "$P/c300")" "300"
	pd rm -f wscon >/dev/null
}

# A sparse file in the box stays sparse in the host's staging directory: 300 MiB that hold
# a few KiB cost the host's disk a few KiB, not 300 MiB, and apply still writes it whole
t_sparse_files_stay_sparse_in_staging() {
	mkproj
	(cd "$P" && pd create wssp >/dev/null)
	pd exec wssp -- sh -c 'truncate -s 300M sparse.bin && printf end | dd of=sparse.bin bs=1 seek=314572797 conv=notrunc 2>/dev/null'
	assert_contains "$(pd diff --stat wssp)" "A sparse.bin"
	local kb
	kb=$(du -sk "$PADDOCK_HOME/boxes/wssp/staging" | cut -f1)
	[ "$kb" -lt 10240 ] || fail "staging holds $kb KiB for a sparse file"
	pd apply wssp sparse.bin >/dev/null
	assert_eq "$(stat -c %s "$P/sparse.bin")" 314572800
	assert_eq "$(tail -c 3 "$P/sparse.bin")" "end"
	rm -f "$P/sparse.bin"
	pd rm -f wssp >/dev/null
}

t_escaping_symlink_and_specials_refused() {
	mkproj
	(cd "$P" && pd create ws5 >/dev/null)
	pd exec ws5 -- sh -c 'ln -s /etc/passwd abs; ln -s ../../../../etc/shadow rel; mkfifo fifo; ln -s src inside'
	pd apply ws5 >/dev/null || true
	[ ! -e "$P/abs" ] && [ ! -L "$P/abs" ] || fail "absolute symlink applied"
	[ ! -L "$P/rel" ] || fail "escaping symlink applied"
	[ ! -e "$P/fifo" ] || fail "fifo applied"
	[ -L "$P/inside" ] || fail "inside symlink not applied"
	pd rm -f ws5
}
t_workspace_survives_stop_and_start() {
	mkproj
	(cd "$P" && pd create ws6 >/dev/null)
	pd exec ws6 -- sh -c 'echo kept >kept.txt'
	pd stop ws6
	pd start ws6
	assert_eq "$(pd exec ws6 -- cat kept.txt)" "kept"
	assert_contains "$(pd diff --stat ws6)" "A kept.txt"
	pd rm -f ws6
}
t_terminal_escapes_are_shown_escaped() {
	mkproj
	(cd "$P" && pd create ws7 >/dev/null)
	pd exec ws7 -- sh -c 'printf "a\033]0;pwned\007b\033[2J\n" >esc.txt'
	local out
	out=$(pd diff ws7)
	case "$out" in *$'\033'*) fail "raw ESC reached the terminal";; esac
	assert_contains "$out" "esc.txt"
	# a name paddock's own tar complains about (unreadable: "cannot open NAME") reaches the
	# terminal through that tar's stderr: escaped there too, on diff and on stop
	pd exec ws7 -- sh -c 'n=$(printf "evil\033]0;pwned\007\033[2J"); echo x >"$n"; chmod 000 "$n"'
	out=$(pd diff ws7 2>&1)
	case "$out" in *$'\033'*|*$'\007'*) fail "raw ESC from a box file name reached the terminal (diff): $out";; esac
	assert_contains "$out" 'evil\x1b]0;pwned'
	out=$(pd stop ws7 2>&1) || true
	case "$out" in *$'\033'*|*$'\007'*) fail "raw ESC from a box file name reached the terminal (stop): $out";; esac
	pd rm -f ws7
}
t_cp_in_and_out() {
	mkproj
	(cd "$P" && pd create ws8 >/dev/null)
	local h=$PADDOCK_HOME/h
	mkdir -p "$h/dir/sub" "$h/out"
	echo one >"$h/file.txt"
	echo two >"$h/dir/sub/f"
	chmod -R a+rwX "$h"
	pd cp "$h/file.txt" ws8:/tmp/in
	pd cp "$h/dir" ws8:/tmp/in
	# a directory lands as DIR/NAME (as a file does, and as copying out does)
	assert_eq "$(pd exec ws8 -- cat /tmp/in/file.txt /tmp/in/dir/sub/f)" "$(printf 'one\ntwo')"
	assert_eq "$(pd exec ws8 -- sh -c 'ls /tmp/in | tr "\n" " "')" "dir file.txt "
	pd cp "$h/dir/" ws8:/tmp/in2/
	assert_eq "$(pd exec ws8 -- cat /tmp/in2/dir/sub/f)" "two"
	# what cannot be copied in is a usage error, said before the box is asked anything
	ln -sf file.txt "$h/link.txt"
	assert_status 2 pd cp "$h/link.txt" ws8:/tmp
	assert_status 2 pd cp "$h/nosuch" ws8:/tmp
	pd exec ws8 -- sh -c 'mkdir -p /tmp/o/d; echo three >/tmp/o/d/x; ln -s /etc/passwd /tmp/o/d/evil'
	pd cp ws8:/tmp/o/d "$h/out" >/dev/null || true
	assert_eq "$(cat "$h/out/d/x")" "three"
	[ ! -L "$h/out/d/evil" ] || fail "an escaping symlink came out"
	# an existing host file is a conflict unless -f
	pd exec ws8 -- sh -c 'echo changed >/tmp/o/d/x'
	assert_status 1 pd cp ws8:/tmp/o/d "$h/out"
	# said as what it is, with the way over it (it said "changed since copy-in": cp has none)
	local out
	out=$(pd cp ws8:/tmp/o/d "$h/out") || true
	assert_contains "$out" "d/x (added): a host entry is in the way (--force replaces it)"
	assert_eq "$(cat "$h/out/d/x")" "three"
	pd cp -f ws8:/tmp/o/d "$h/out" >/dev/null || true
	assert_eq "$(cat "$h/out/d/x")" "changed"
	assert_status 2 pd cp "$h/file.txt" "$h/out"
	pd rm -f ws8
}
# a copy in that fails says so once, with the side that failed: the box's tar (which says why
# itself) or the host's read; never the other side's broken pipe as the cause ("cannot read
# DIR: ... Write error" when the box could not write) nor a second "cannot copy" after it
t_cp_in_failure_is_said_once_by_the_side_that_failed() {
	pd create --workspace none wscf >/dev/null
	local h=$PADDOCK_HOME/h out
	mkdir -p "$h/dir/sub"
	head -c 2000000 /dev/urandom >"$h/dir/sub/big"
	head -c 2000000 /dev/urandom >"$h/big"
	chmod -R a+rwX "$h"
	pd exec wscf -- sh -c 'echo x >/tmp/afile'
	local src
	for src in "$h/dir" "$h/big"; do
		out=$(pd cp "$src" wscf:/tmp/afile 2>&1) && fail "copied into a file: $out"
		assert_status 125 pd cp "$src" wscf:/tmp/afile
		assert_contains "$out" "Not a directory"
		assert_not_contains "$out" "cannot read $src"
		assert_not_contains "$out" "Write error"
		assert_eq "$(printf '%s\n' "$out" | grep -c '^paddock:')" 1 "one message of paddock's own: $out"
		assert_contains "$out" "sandbox 'wscf'"
	done
	if [ "$(id -u)" != 0 ]; then
		# a host file this user cannot read: the host side's failure, not the box's
		chmod 000 "$h/dir/sub/big"
		out=$(pd cp "$h/dir" wscf:/tmp 2>&1) && fail "copied an unreadable file: $out"
		assert_contains "$out" "cannot open sub/big: Permission denied"
		assert_eq "$(printf '%s\n' "$out" | grep -c '^paddock:')" 1 "one message of paddock's own: $out"
	fi
	pd rm -f wscf >/dev/null
}
# An image with no tar at all (a static busybox, no applet links): every tar stream of the
# workspace is paddock-init's own, so copy-in, diff, apply, cp both ways and a stop/start
# (the workspace saved and restored) work as on a full Debian image, on every backend.
t_workspace_round_trip_in_an_image_without_tar() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox \
		--symlink bin/sh:busybox >/dev/null
	pd image import --name local/notar:1 "$PADDOCK_HOME/bb" >/dev/null
	mkproj
	mkdir -p "$P/deep/er" && echo old >"$P/deep/er/f" && ln -s a.txt "$P/link" && chmod 640 "$P/a.txt"
	(cd "$P" && pd create --image local/notar:1 wsnt >/dev/null 2>&1) || fail "create from an image without tar failed"
	local bb="/bin/busybox"
	assert_status 1 pd exec wsnt -- $bb sh -c '[ -e /bin/tar ] || [ -e /usr/bin/tar ] || [ -e /sbin/tar ] || exit 1'
	assert_eq "$(pd exec wsnt -- $bb sh -c 'cat deep/er/f; readlink link; stat -c %a a.txt')" "$(printf 'old\na.txt\n640')"
	pd exec wsnt -- $bb sh -c 'echo new >deep/er/f && echo added >b.txt && rm a.txt && mkdir n && echo q >n/q'
	local out
	out=$(pd diff --stat wsnt)
	assert_contains "$out" "M deep/er/f"
	assert_contains "$out" "A b.txt"
	assert_contains "$out" "D a.txt"
	assert_contains "$out" "A n/q"
	local h=$PADDOCK_HOME/h
	mkdir -p "$h/out" && echo in >"$h/in.txt" && chmod -R a+rwX "$h"
	pd cp "$h/in.txt" wsnt:/tmp/x/y
	assert_eq "$(pd exec wsnt -- $bb cat /tmp/x/y/in.txt)" "in"
	pd cp wsnt:/workspace/n "$h/out" >/dev/null
	assert_eq "$(cat "$h/out/n/q")" "q"
	pd stop wsnt >/dev/null
	pd start wsnt >/dev/null
	assert_eq "$(pd exec wsnt -- $bb cat deep/er/f b.txt)" "$(printf 'new\nadded')"
	pd apply wsnt >/dev/null
	assert_eq "$(cat "$P/deep/er/f" "$P/b.txt" "$P/n/q")" "$(printf 'new\nadded\nq')"
	[ ! -e "$P/a.txt" ] || fail "apply left a.txt the box deleted"
	pd rm -f wsnt >/dev/null
}
# What the box cannot read back is refused, never taken for deleted: a copied directory the
# agent made unreadable (chmod 000) keeps its host files through diff and apply; a private
# (0700) directory the agent made is read like any other (on ns the scan takes its owner's
# filesystem ids for it).
t_unreadable_directories_are_refused_not_deleted() {
	mkproj
	mkdir -p "$P/locked/sub" "$P/half" && echo keep >"$P/locked/sub/file" && echo keep >"$P/half/f" &&
		chmod -R a+rwX "$P/locked" "$P/half"
	(cd "$P" && pd create wsun >/dev/null)
	# 000: not readable; 644: readable but not searchable (its entries cannot be looked up)
	pd exec wsun -- sh -c 'mkdir -m 700 priv && echo s >priv/secret && chmod 700 src && chmod 000 locked && chmod 644 half'
	local out
	out=$(pd diff --stat wsun)
	assert_contains "$out" "A priv/secret"
	assert_contains "$out" "refused: not readable inside the box"
	assert_not_contains "$out" "D locked"
	assert_not_contains "$out" "D half"
	assert_not_contains "$out" "D src"
	# a stop that cannot save all of it keeps the box running (ns; a vm box's stays on its
	# disk, there is nothing to save); once readable, it saves
	pd exec wsun -- sh -c 'echo mine >mine.txt'
	if [ "$PD_BACKEND" = ns ]; then
		out=$(pd stop wsun 2>&1) && fail "stop saved a workspace it could not read whole"
		assert_contains "$out" "keeps running"
	fi
	pd exec wsun -- chmod 755 locked half
	pd stop wsun >/dev/null
	pd start wsun >/dev/null
	assert_eq "$(pd exec wsun -- cat mine.txt priv/secret locked/sub/file)" "$(printf 'mine\ns\nkeep')"
	pd exec wsun -- chmod 000 locked
	pd apply wsun >/dev/null || true
	assert_eq "$(cat "$P/locked/sub/file" "$P/half/f")" "$(printf 'keep\nkeep')"
	assert_eq "$(cat "$P/src/m.c")" 'int main(void) { return 0; }'
	assert_eq "$(cat "$P/priv/secret")" "s"
	pd rm -f wsun >/dev/null
}
# A stop whose workspace cannot be saved (here: a path longer than a tar stream may carry)
# leaves the box running, so nothing is lost; --force stops it anyway and says what is lost.
# Ignore rules keep new entries out of the way back, never what the copy-in gave the box: a
# rule added later (by the user on the host, or applied from the box) does not turn a copied
# tree into deletions.
t_ignore_rules_added_later_never_delete_copied_files() {
	mkproj
	(cd "$P" && pd create wsig >/dev/null)
	printf 'node_modules/\nsrc/\n*.txt\n' >"$P/.paddockignore"
	pd exec wsig -- sh -c 'echo more >>a.txt && echo new >src/new.c && echo x >new.txt'
	local out
	out=$(pd diff --stat wsig)
	assert_contains "$out" "M a.txt"
	assert_not_contains "$out" "D src"
	assert_not_contains "$out" "new.c"
	assert_not_contains "$out" "new.txt"
	pd apply wsig >/dev/null || true
	assert_eq "$(cat "$P/src/m.c")" 'int main(void) { return 0; }'
	assert_eq "$(tail -1 "$P/a.txt")" "more"
	pd rm -f wsig >/dev/null
}

# A project of exactly one file (besides what copy-in leaves out) reaches the box, and a diff
# of the untouched box is empty — on vm it once arrived empty and apply deleted the file.
t_a_one_file_project_is_copied_in() {
	mkdir -p "$PADDOCK_HOME/one"
	echo only >"$PADDOCK_HOME/one/only.txt"
	echo 'SECRET=1' >"$PADDOCK_HOME/one/.env"
	(cd "$PADDOCK_HOME/one" && pd create ws1 >/dev/null)
	assert_eq "$(pd exec ws1 -- cat /workspace/only.txt)" "only"
	assert_contains "$(pd diff --stat ws1)" "0 paths changed"
	pd apply ws1 >/dev/null 2>&1 || true
	assert_eq "$(cat "$PADDOCK_HOME/one/only.txt")" "only"
	pd rm -f ws1 >/dev/null
}

# A -v at or under the project's places in the box would take the copy-in's writes into that
# host directory: refused as a usage error, nothing written; home is never copied wholesale.
t_binds_over_the_workspace_are_refused() {
	mkproj
	mkdir -p "$PADDOCK_HOME/hostdir"
	local b
	for b in /workspace /workspace/cache "$P" "$P/src" "$(dirname "$P")"; do
		(cd "$P" && assert_status 2 pd run --rm -v "$PADDOCK_HOME/hostdir:$b" -- true)
	done
	assert_eq "$(ls -A "$PADDOCK_HOME/hostdir")" "" "nothing written into the host directory"
	(cd "$P" && HOME=$P assert_status 2 pd run --rm -w "$P" -- true)
	# nor any directory above a home (everyone's, or the caller's by its passwd entry)
	assert_status 2 pd run --rm -w /home -- true
	local pwhome
	pwhome=$(getent passwd "$(id -u)" | cut -d: -f6)
	if [ -d "$pwhome" ] && [ "$pwhome" != / ]; then
		(cd "$pwhome" && HOME=/nonexistent assert_status 2 pd run --rm -w "$pwhome" -- true)
	fi
	# nor, for root, another person's home (root can read them all)
	if [ "$(id -u)" = 0 ]; then
		local user=${PD_TEST_USER:-pdtest} other
		id "$user" >/dev/null 2>&1 || useradd -m -s /bin/bash "$user"
		other=$(getent passwd "$user" | cut -d: -f6)
		mkdir -p "$other"
		(cd "$P" && HOME=/nonexistent SUDO_USER= assert_status 2 pd run --rm -w "$other" -- true)
	fi
	# (on vm every -v is refused: a guest shares no host directory)
	[ "$PD_BACKEND" != ns ] || (cd "$P" && assert_status 0 pd run --rm -v "$PADDOCK_HOME/hostdir:/data" -- true)
}

# A stop killed while it saves the workspace leaves the box running and no writer behind; its
# temp file goes at the next start, and the next stop saves in full.
t_a_stop_killed_while_saving_leaves_nothing_running() {
	pd_only ns "only an ns box's stop saves its workspace"
	mkproj
	(cd "$P" && pd create --memory 2G wskill >/dev/null)
	pd exec wskill -- sh -c 'head -c 400M /dev/urandom >big.bin'
	"$PADDOCK" stop wskill >/dev/null 2>&1 &
	local pid=$! tmp=$PADDOCK_HOME/boxes/wskill/workspace.tar.tmp
	for _ in $(seq 200); do [ -s "$tmp" ] && break; sleep 0.01; done
	kill -KILL $pid
	wait $pid 2>/dev/null || true
	sleep 0.5
	local size1 size2
	size1=$(stat -c %s "$tmp" 2>/dev/null || echo 0)
	sleep 0.5
	size2=$(stat -c %s "$tmp" 2>/dev/null || echo 0)
	assert_eq "$size2" "$size1" "the killed stop's writer went on writing"
	pd stop wskill >/dev/null
	[ ! -e "$tmp" ] || fail "the temp file outlived a full save"
	pd start wskill
	assert_eq "$(pd exec wskill -- stat -c %s big.bin)" "419430400"
	pd rm -f wskill >/dev/null
}

# A copied file the agent moves into an ignored directory reads as deleted, and its new place
# is kept out of the diff: the diff says where it went, so the user does not lose it to apply.
t_a_file_moved_into_an_ignored_directory_is_noted() {
	mkproj
	(cd "$P" && pd create wsmv >/dev/null)
	pd exec wsmv -- sh -c 'mkdir -p node_modules/y && mv src/m.c node_modules/y/'
	local out
	out=$(pd diff --stat wsmv 2>&1)
	assert_contains "$out" "D src/m.c"
	assert_contains "$out" "note: node_modules/y/m.c"
	assert_contains "$out" "'src/m.c', which the box deleted"
	pd rm -f wsmv >/dev/null
}

# A stopped box's work can be reviewed and applied without starting it again: an ns box's
# copy is the tar its stop saved, read like a live box's stream (same ignore rules, same
# notes); a vm box's stays on its disk, which only its guest reads.
t_a_stopped_box_can_be_diffed_and_applied() {
	mkproj
	(cd "$P" && pd create wsstp >/dev/null)
	pd exec wsstp -- sh -c 'echo more >>a.txt && echo new >b.txt && mkdir -p node_modules/y && mv src/m.c node_modules/y/'
	pd stop wsstp
	if [ "$PD_BACKEND" = vm ]; then
		local out
		out=$(pd diff --stat wsstp 2>&1) && fail "diff read a stopped vm box's disk: $out"
		assert_contains "$out" "start it with 'paddock start wsstp'"
		pd rm -f wsstp >/dev/null
		return
	fi
	local out
	out=$(pd diff --stat wsstp 2>&1) || fail "diff of a stopped box failed: $out"
	assert_contains "$out" "M a.txt"
	assert_contains "$out" "A b.txt"
	assert_contains "$out" "D src/m.c"
	assert_contains "$out" "note: node_modules/y/m.c"
	assert_not_contains "$out" "A node_modules"
	pd apply wsstp a.txt b.txt >/dev/null || fail "apply from a stopped box failed"
	assert_eq "$(tail -1 "$P/a.txt")" "more"
	assert_eq "$(cat "$P/b.txt")" "new"
	[ -f "$P/src/m.c" ] || fail "apply of named paths deleted another"
	assert_contains "$(pd ls)" "stopped"
	pd start wsstp
	assert_eq "$(pd exec wsstp -- cat b.txt)" "new"
	pd rm -f wsstp >/dev/null
	# a dead box's saved tar is its last stop's, not its copy: refused
	(cd "$P" && pd create wsdead >/dev/null)
	pd stop wsdead && pd start wsdead
	pd exec wsdead -- sh -c 'echo lost >c.txt'
	kill -9 "$(pd ls --json | python3 -c "import json,sys; print([b for b in json.load(sys.stdin) if b['name']=='wsdead'][0]['supervisor_pid'])")"
	local i
	for i in $(seq 50); do [ "$(pd ls | awk '$1 == "wsdead" { print $2 }')" = dead ] && break; sleep 0.1; done
	out=$(pd diff --stat wsdead 2>&1) && fail "diff read a dead box's stale tar: $out"
	assert_contains "$out" "not running"
	pd rm -f wsdead >/dev/null
}

# diff and apply take paths as a user types them: "./x", "x/", the project's absolute path or
# /workspace's; one that names nothing is a usage error (a diff of it printed nothing, and the
# apply after it applied nothing, both "successfully")
t_paths_are_taken_as_typed() {
	mkproj
	(cd "$P" && pd create wspt >/dev/null)
	pd exec wspt -- sh -c 'echo more >>src/m.c && echo x >a.txt'
	local p
	for p in ./src/m.c src/ "$P/src/m.c" /workspace/src; do
		assert_contains "$(pd diff --stat wspt "$p")" "M src/m.c"
		assert_not_contains "$(pd diff --stat wspt "$p")" "a.txt"
	done
	assert_contains "$(pd diff --stat wspt .)" "a.txt"
	assert_status 2 pd diff wspt nosuch
	assert_status 2 pd diff wspt /etc/passwd
	assert_status 2 pd apply wspt nosuch
	pd diff --stat wspt ./src/ >/dev/null
	pd apply wspt >/dev/null 2>&1
	assert_eq "$(tail -1 "$P/src/m.c")" "more"
	assert_eq "$(cat "$P/a.txt")" "hello"
	pd apply wspt "$P/a.txt" >/dev/null 2>&1
	assert_eq "$(cat "$P/a.txt")" "x"
	pd rm -f wspt >/dev/null
}

# apply without paths applies what the last diff showed — all of it, or only the paths that
# diff was limited to; a path that names nothing is a usage error, not a silent success
t_apply_takes_what_a_path_limited_diff_showed() {
	mkproj
	(cd "$P" && pd create wspl >/dev/null)
	pd exec wspl -- sh -c 'echo more >>src/m.c && rm a.txt'
	assert_contains "$(pd diff --stat wspl src)" "M src/m.c"
	local out
	out=$(pd apply wspl 2>&1)
	assert_contains "$out" "only those"
	assert_contains "$(tail -1 "$P/src/m.c")" "more"
	[ -e "$P/a.txt" ] || fail "apply deleted a.txt, which the limited diff did not show"
	assert_status 2 pd apply wspl no/such/path
	pd apply --fresh wspl >/dev/null
	[ ! -e "$P/a.txt" ] || fail "apply --fresh left a.txt"
	pd rm -f wspl >/dev/null
}

t_stop_keeps_a_box_running_when_its_work_cannot_be_saved() {
	pd_only ns "a vm box's work stays on its disk: its stop saves nothing"
	mkproj
	(cd "$P" && pd create wsst >/dev/null)
	pd exec wsst -- sh -c 'echo work >w.txt' # (perl: a shell's cd stops at PATH_MAX)
	pd exec wsst -- perl -e 'my $n = "x" x 200; for (1 .. 22) { mkdir $n or die "mkdir: $!"; chdir $n or die "cd: $!" }'
	local out
	out=$(pd stop wsst 2>&1) && fail "stop succeeded with a workspace it could not save"
	assert_contains "$out" "keeps running"
	assert_eq "$(pd exec wsst -- cat w.txt)" "work"
	out=$(pd stop --force wsst 2>&1) || fail "stop --force failed: $out"
	assert_contains "$out" "unsaved work is lost"
	assert_contains "$(pd ls)" "stopped"
	pd rm -f wsst >/dev/null
}
t_apply_branch_takes_commits_without_checkout() {
	local G=$PADDOCK_HOME/g
	mkdir -p "$G" && cd "$G"
	git init -q && git -c user.email=a@b -c user.name=t commit -q --allow-empty -m init
	echo base >f && git add f && git -c user.email=a@b -c user.name=t commit -qm base
	chmod -R a+rwX "$G"
	pd create gb >/dev/null
	pd exec gb -- sh -c 'echo boxed >>f && git -c user.name=a -c user.email=a@b commit -qam "box work" && echo wip >g'
	# a hook the box planted must never run on the host
	pd exec gb -- sh -c 'printf "#!/bin/sh\ntouch /tmp/pd-hook-ran-$$\n" >.git/hooks/reference-transaction; chmod +x .git/hooks/reference-transaction'
	local out
	out=$(pd apply --branch=box-work --uncommitted gb 2>&1)
	assert_not_contains "$out" "is okay"
	assert_eq "$(git log --format=%s -2 box-work | tr '\n' '|')" "paddock: uncommitted changes|box work|"
	# a branch that cannot be fast-forwarded is refused, with git's reason
	git -c user.email=a@b -c user.name=t commit -q --allow-empty -m host-side
	git branch -f box-work HEAD
	out=$(pd apply --branch=box-work gb 2>&1) && fail "a branch was rewritten: $out"
	assert_contains "$out" "only fast-forwarded): "
	assert_contains "$out" "rejected"
	assert_eq "$(cat f)" "base"             # nothing checked out
	assert_eq "$(git status --porcelain)" "" # the work tree is untouched
	[ ! -e .git/hooks/reference-transaction ] || fail "the box's hook reached the host"
	# a branch name git cannot take is a usage error, said before the box is read (it was 125)
	local b
	for b in bad..name -x 'a b' 'a:b'; do
		assert_status 2 pd apply --branch="$b" gb
		assert_contains "$(pd apply --branch="$b" gb 2>&1)" "is not a usable branch name"
	done
	pd rm -f gb
}

run_tests
