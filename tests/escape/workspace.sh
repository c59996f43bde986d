#!/bin/bash
# tests/escape/workspace.sh — copy-out attacks: the box prepares something hostile in its copy
# of the project, then `diff` and `apply` run on the host; each test asserts the attack was
# refused and that host canaries outside the project are byte-for-byte unchanged.
. "$(dirname "$0")/../lib.sh"
REG=$(cd "$(dirname "${BASH_SOURCE[0]}")/../registry" && pwd)

setup_proj() {
	P=$PADDOCK_HOME/proj
	C=$PADDOCK_HOME/canary
	mkdir -p "$P/sub" "$C"
	echo "project" >"$P/a.txt"
	echo "canary $$" >"$C/secret"
	chmod -R a+rwX "$P" "$C"
	CANARY_SUM=$(cd "$C" && find . -type f -exec sha256sum {} + | sort | sha256sum)
	(cd "$P" && pd create --workspace copy wsx >/dev/null)
}
canary_unchanged() {
	[ "$(cd "$C" && find . -type f -exec sha256sum {} + | sort | sha256sum)" = "$CANARY_SUM" ] ||
		fail "a host canary outside the project changed"
	[ -z "$(find "$C" -newer "$P/a.txt" -print -quit 2>/dev/null | grep -v "^$C$")" ] || true
}
done_proj() { pd rm -f wsx >/dev/null; }

t_escaping_symlinks_are_refused() {
	setup_proj
	pd exec wsx -- sh -c "ln -s '$C/secret' abs; ln -s ../../../../../../../'$C'/secret rel; ln -s '$C' dirlink"
	pd apply wsx >/dev/null || true
	[ ! -L "$P/abs" ] && [ ! -L "$P/rel" ] && [ ! -L "$P/dirlink" ] || fail "an escaping symlink was created"
	canary_unchanged
	done_proj
}
t_write_through_a_symlinked_directory_is_refused() {
	setup_proj
	# the box replaces sub/ by a symlink to the canary dir and writes a file "into" it
	pd exec wsx -- sh -c "rm -rf sub && ln -s '$C' sub"
	pd exec wsx -- sh -c "mkdir -p x && echo pwned >x/secret"
	pd apply wsx >/dev/null || true
	canary_unchanged
	done_proj
}
t_host_side_symlink_race_during_apply() {
	setup_proj
	pd exec wsx -- sh -c 'for i in $(seq 300); do echo $i >sub/f$i; done'
	pd diff --stat wsx >/dev/null
	# a hostile host process keeps swapping sub/ for a symlink to the canary while apply runs
	( for _ in $(seq 400); do
		mv "$P/sub" "$P/sub.real" 2>/dev/null && ln -sfn "$C" "$P/sub" 2>/dev/null
		rm -f "$P/sub" 2>/dev/null; mv "$P/sub.real" "$P/sub" 2>/dev/null
	  done ) &
	local racer=$!
	pd apply wsx >/dev/null 2>&1 || true
	wait $racer || true # the racer's own last mv may fail; only the canary matters
	[ -z "$(ls "$C" | grep '^f[0-9]')" ] || fail "apply wrote through a swapped-in symlink"
	canary_unchanged
	done_proj
}
t_special_files_and_setuid_are_neutralised() {
	setup_proj
	pd exec wsx -- sh -c 'mkfifo fifo; python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.bind(\"sock\")"; echo x >suid; chmod 4755 suid; chmod 2755 sub'
	pd apply wsx >/dev/null || true
	[ ! -e "$P/fifo" ] && [ ! -e "$P/sock" ] || fail "a special file reached the host"
	if [ -e "$P/suid" ]; then
		[ "$(stat -c %a "$P/suid")" = 755 ] || fail "setuid bit reached the host: $(stat -c %a "$P/suid")"
	fi
	canary_unchanged
	done_proj
}
t_control_characters_in_names_never_reach_the_host() {
	setup_proj
	pd exec wsx -- sh -c 'echo a >"$(printf "nl\nname")"; echo b >"$(printf "esc\033]0;x\007")"; echo c >"$(printf "bidi\342\200\256txt")"'
	local out
	out=$(pd diff wsx 2>&1)
	case "$out" in *$'\033'*|*$'\342\200\256'*) fail "raw control bytes reached the terminal";; esac
	pd apply wsx >/dev/null 2>&1 || true
	[ -z "$(ls "$P" | grep -c "$(printf '\033')" | grep -v '^0$')" ] || fail "an ESC name was created"
	[ "$(find "$P" -name "$(printf 'nl\nname')" | wc -l)" = 0 ] || fail "a newline name was created"
	canary_unchanged
	done_proj
}
t_size_bomb_sparse_file_is_refused() {
	setup_proj
	# the box's RLIMIT_FSIZE (its --disk) may already stop this inside; either way nothing of
	# it may reach the host
	pd exec wsx -- sh -c 'truncate -s 100G huge.img' 2>/dev/null || true
	local before
	before=$(df --output=avail "$P" | tail -1)
	pd diff --stat wsx >/dev/null 2>&1 || true
	pd apply --fresh wsx >/dev/null 2>&1 || true
	[ ! -e "$P/huge.img" ] || [ "$(stat -c %s "$P/huge.img")" -lt 1000000000 ] || fail "a 100 GB file was written"
	local after
	after=$(df --output=avail "$P" | tail -1)
	[ $((before - after)) -lt 1048576 ] || fail "the host disk lost more than 1 GiB"
	canary_unchanged
	done_proj
}
t_deep_directories_are_refused() {
	setup_proj
	pd exec wsx -- sh -c 'd=deep; for i in $(seq 2000); do d=$d/d; done; mkdir -p "$d" 2>/dev/null || python3 -c "
import os
p=\"deep\"
for i in range(2000):
    p=os.path.join(p,\"d\")
os.makedirs(p, exist_ok=True)"; echo x >a2.txt'
	pd apply wsx >/dev/null 2>&1 || true
	local depth
	depth=$(find "$P" -type d 2>/dev/null | awk -F/ '{print NF}' | sort -n | tail -1)
	[ "${depth:-0}" -lt 400 ] || fail "a 2000-deep tree reached the host (depth $depth)"
	canary_unchanged
	done_proj
}
t_git_hooks_and_fsmonitor_are_not_applied() {
	setup_proj
	mkdir -p "$P/.git/hooks" && echo "[core]" >"$P/.git/config" && chmod -R a+rwX "$P/.git"
	pd exec wsx -- sh -c 'printf "#!/bin/sh\ntouch /tmp/pwned\n" >.git/hooks/post-checkout; chmod +x .git/hooks/post-checkout; printf "[core]\n\tfsmonitor = /tmp/x\n" >.git/config; printf "* filter=evil\n" >.gitattributes'
	pd apply wsx >/dev/null 2>&1 || true
	[ ! -e "$P/.git/hooks/post-checkout" ] || fail "a git hook was written"
	assert_eq "$(cat "$P/.git/config")" "[core]"
	[ ! -e "$P/.gitattributes" ] || fail "a filter line was written"
	canary_unchanged
	done_proj
}

# A git directory under another name, disguised the ways git still accepts (HEAD a symlink,
# objects a symlink, a commondir instead of objects): its config and hooks are the host's to
# run (git status in it runs core.fsmonitor), so apply skips them like .git's.
t_disguised_git_directories_are_not_applied() {
	setup_proj
	pd exec wsx -- sh -c '
		mk() { mkdir -p "$1/refs/heads" "$1/hooks"; printf "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = touch '"$C"'/pwned-$1; false\n" >"$1/config"; printf "#!/bin/sh\ntouch '"$C"'/hook-$1\n" >"$1/hooks/post-checkout"; chmod +x "$1/hooks/post-checkout"; }
		mk e1 && mkdir e1/objects && ln -s refs/heads/main e1/HEAD
		mk e2 && mkdir realobj && ln -s ../realobj e2/objects && echo "ref: refs/heads/main" >e2/HEAD
		mk e3 && echo "ref: refs/heads/main" >e3/HEAD && echo ../e1 >e3/commondir'
	pd apply wsx >/dev/null 2>&1 || true
	local e
	for e in e1 e2 e3; do
		[ ! -e "$P/$e/config" ] || fail "$e/config was written"
		[ ! -e "$P/$e/hooks/post-checkout" ] || fail "$e/hooks/post-checkout was written"
		if command -v git >/dev/null && [ -d "$P/$e" ]; then
			(cd "$P/$e" && git status >/dev/null 2>&1) || true
		fi
	done
	[ -z "$(ls "$C" | grep -v '^secret$')" ] || fail "git ran the box's code on the host: $(ls "$C")"
	canary_unchanged
	done_proj
}

# copy-in attack from an image: its /workspace already holds symlinks where the project has a
# directory and a file (sub -> /etc, a.txt -> /etc/passwd); the copy replaces them (as tar -x
# would) and writes nothing through them — on ns the supervisor writes the copy itself
# The box hides parts of its copy from paddock's reader (unreadable, unsearchable, and a
# readable-but-unsearchable directory) hoping they pass for deletions: apply must refuse
# them and leave every host file of the project as it was.
t_hidden_directories_cannot_make_apply_delete_host_files() {
	setup_proj
	mkdir -p "$P/hide0/x" "$P/hide644/y" && echo keep >"$P/hide0/x/f" && echo keep >"$P/hide644/y/g"
	chmod -R a+rwX "$P"
	pd rm -f wsx >/dev/null
	(cd "$P" && pd create --workspace copy wsx >/dev/null)
	pd exec wsx -- sh -c 'chmod 000 hide0 && chmod 644 hide644'
	local out
	out=$(pd apply --fresh wsx 2>&1) || true
	assert_not_contains "$out" "(deleted)"
	assert_eq "$(cat "$P/hide0/x/f" "$P/hide644/y/g")" "$(printf 'keep\nkeep')"
	canary_unchanged
	done_proj
}

t_image_workspace_symlinks_do_not_redirect_the_copy() {
	# (vm: the guest's copy-in is GNU tar from the image, which a busybox image lacks)
	pd_only ns "the supervisor's direct copy into an image box's /workspace"
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/wsimg" --add-file /bin/busybox:/bin/busybox \
		--symlink bin/sh:busybox --symlink workspace/sub:/etc --symlink workspace/a.txt:/etc/passwd
	pd image import --name local/wsimg:1 "$PADDOCK_HOME/wsimg" >/dev/null 2>&1
	local P=$PADDOCK_HOME/proj2 out
	mkdir -p "$P/sub" && echo project >"$P/a.txt" && echo planted >"$P/sub/x" && chmod -R a+rwX "$P"
	out=$(cd "$P" && pd_run -T --image local/wsimg:1 -- /bin/busybox sh -c \
		'test -d /workspace/sub && test ! -L /workspace/sub && echo dir-ok; cat /workspace/a.txt /workspace/sub/x; test -e /etc/x && echo LEAKED; [ "$(/bin/busybox head -c 7 /etc/passwd)" = project ] && echo LEAKED; true' 2>&1)
	assert_contains "$out" "dir-ok"
	assert_contains "$out" "project"
	assert_contains "$out" "planted"
	assert_not_contains "$out" "LEAKED"
}

run_tests
