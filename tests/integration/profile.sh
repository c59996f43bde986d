#!/bin/bash
# tests/integration/profile.sh — `paddock run PROFILE`: a profile in the sandboxy format (every
# key) builds its image from a local base (install commands in a build box, captured as a
# layer: files, deletions), reuses it, reconnects to PROFILE-DIRNAME, forwards the environment,
# binds mounts (a missing one skipped with a note), applies allowedHosts as the box's policy;
# `image update` rebuilds; an image older than 7 days is pointed out; a failing install shows
# its output and leaves nothing. The npm end-to-end test builds the real built-ins (pi, claude,
# codex) against the npm registry.
. "$(dirname "$0")/../lib.sh"
REG=$(cd "$(dirname "$0")/../registry" && pwd)

# a base with a shell: static busybox as /bin/sh, plus mkimage.py's two layers (etc/hello, ...).
# These boxes run with --workspace none (the npm test below runs the default copy on Debian).
mk_base() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/bb" --add-file /bin/busybox:/bin/busybox --symlink bin/sh:busybox
	pd image import --name local/bb:1 "$PADDOCK_HOME/bb" >/dev/null 2>&1
}

# building runs the install commands as the box's root: callers without uid 0 inside boxes skip
need_root_inside() {
	pd_root_available || { echo "skip: building needs uid 0 inside the box (no /etc/subuid range for $(id -un))"; exit 77; }
}

# profile NAME JSON: a user profile file
profile() {
	export XDG_CONFIG_HOME=$PADDOCK_HOME/config
	mkdir -p "$XDG_CONFIG_HOME/paddock/agents"
	printf '%s\n' "$2" >"$XDG_CONFIG_HOME/paddock/agents/$1.json"
}

t_profile_builds_reuses_reconnects_and_updates() {
	need_root_inside
	mk_base
	export HOME=$PADDOCK_HOME/home
	mkdir -p "$HOME/shared"
	echo "from the host" >"$HOME/shared/note"
	profile tp '{
  "displayName": "Test Profile",
  "baseImage": "local/bb:1",
  "installCommands": [
    "/bin/busybox mkdir -p /opt/tp && /bin/busybox printf \"#!/bin/sh\\necho tp-run \\\"\\$@\\\" \\$T_FWD \\$T_SET\\n\" > /opt/tp/run",
    "/bin/busybox rm /etc/hello2 && echo built > /tmp/scratch && /bin/busybox mkdir /app && echo app > /app/marker"
  ],
  "launchCommand": ["/bin/sh", "/opt/tp/run"],
  "environmentVariables": ["T_FWD", "T_SET=fixed", "T_UNSET"],
  "mounts": [
    {"hostPath": "~/shared", "containerPath": "/mnt/shared", "readOnly": true},
    {"hostPath": "~/missing", "containerPath": "/mnt/missing"}
  ],
  "allowedHosts": ["example.com", "*.example.org"]
}'
	mkdir "$PADDOCK_HOME/myproj"
	cd "$PADDOCK_HOME/myproj"
	local out
	assert_contains "$(pd profile ls | grep '^tp ')" "not built"
	out=$(T_FWD=fwd pd run -T --workspace none tp -- a b 2>&1)
	assert_contains "$out" "building the tp image on docker.io/local/bb:1"
	assert_contains "$out" "the build reaches only: example.com example.org *.example.org"
	assert_contains "$out" "[2/2] /bin/busybox rm /etc/hello2"
	assert_contains "$out" "tp-run a b fwd fixed"
	assert_contains "$out" "/missing does not exist; not mounted at /mnt/missing"
	assert_contains "$out" "paddock diff tp-myproj"
	# (run -T tp -- ARGS: the profile's launchCommand + ARGS)
	# the box: PROFILE-DIRNAME, the profile's image (install layer on top of the base, the
	# deletion applied, the build's /tmp left out), the mount, the policy
	assert_eq "$(pd exec tp-myproj -- /bin/busybox cat /mnt/shared/note)" "from the host"
	assert_status 1 pd exec tp-myproj -- /bin/busybox test -e /etc/hello2
	assert_status 1 pd exec tp-myproj -- /bin/busybox test -e /tmp/scratch
	assert_eq "$(pd exec tp-myproj -- /bin/busybox cat /etc/hello)" "hello from layer 1"
	# a new top-level directory: made by the install, and by root in a box of the image
	assert_eq "$(pd exec tp-myproj -- /bin/busybox cat /app/marker)" "app"
	pd exec --user root tp-myproj -- /bin/busybox mkdir /srv2
	# the image carries a compile cache for node agents, writable by every box (its own layer)
	assert_eq "$(pd exec tp-myproj -- /bin/busybox sh -c 'echo $NODE_COMPILE_CACHE; /bin/busybox stat -c %a $NODE_COMPILE_CACHE')" \
		"$(printf '/var/cache/paddock/node-compile-cache\n1777')"
	out=$(pd policy ls --sandbox tp-myproj)
	assert_contains "$out" "allow example.com"
	assert_contains "$out" "allow *.example.org"
	assert_contains "$(pd image ls)" "localhost/paddock/tp:"
	out=$(pd profile ls | grep '^tp ')
	[[ "$out" =~ " built "[0-9]+s" ago" ]] || fail "profile ls does not show the new image: $out"
	# the profile's tree starts as a hard-link clone of the base's (tree_clone.h): base
	# files are shared, not unpacked again; the base's copy of a deleted file is still there
	local tree btree
	tree=$(pd image inspect "$(pd image ls | awk '/paddock\/tp:/{print $1}')" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')
	btree=$(pd image inspect local/bb:1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])')
	assert_eq "$(stat -c %i "$tree/etc/hello")" "$(stat -c %i "$btree/etc/hello")" "base file shared by inode"
	[ -e "$btree/etc/hello2" ] && [ ! -e "$tree/etc/hello2" ] || fail "the deletion reached the base tree"
	# the second run in the same directory reconnects to the same box and reuses the image
	pd exec tp-myproj -- /bin/busybox sh -c 'echo agent-work > /home/agent/work'
	out=$(pd run -T --workspace none tp -- again 2>&1)
	assert_not_contains "$out" "building"
	assert_contains "$out" "reconnecting to tp-myproj"
	assert_not_contains "$out" "apply only to a new box"
	# options that make a box are said to be in vain for the one that exists
	out=$(pd run -T --workspace none --memory 1G -e X=1 tp -- again 2>&1)
	assert_contains "$out" "tp-myproj exists: --memory, -e apply only to a new box"
	assert_contains "$out" "tp-run again"
	assert_eq "$(pd exec tp-myproj -- /bin/busybox cat /home/agent/work)" "agent-work"
	# but a deny is never dropped with a note: refused, with the way to apply it live
	local st=0
	out=$(pd run -T --workspace none --deny up.test tp -- again 2>&1) || st=$?
	assert_eq "$st" 2
	assert_contains "$out" "paddock policy deny up.test --sandbox tp-myproj"
	assert_not_contains "$out" "tp-run again"
	# a stopped box is started again
	pd stop tp-myproj
	out=$(pd run -T --workspace none tp -- third 2>&1)
	assert_contains "$out" "starting tp-myproj again"
	assert_contains "$out" "tp-run third"
	# --rm in another directory: a box of its own, gone afterwards; the image is reused
	mkdir "$PADDOCK_HOME/other" && cd "$PADDOCK_HOME/other"
	out=$(pd run --rm -T --workspace none tp -- once 2>&1)
	assert_contains "$out" "tp-run once"
	assert_not_contains "$out" "building"
	assert_eq "$(pd ls | grep -c tp-other || true)" "0"
	# update rebuilds under the same key with a new digest
	local before after
	before=$(pd image ls --json | python3 -c 'import json,sys; print([i["digest"] for i in json.load(sys.stdin) if "paddock/tp" in i["name"]][0])')
	sleep 1
	out=$(PADDOCK_DEBUG=1 pd image update tp 2>&1)
	assert_contains "$out" "building the tp image"
	# as root the tree takes the build's files by hard link instead of writing them again
	if [ "$(id -u)" = 0 ]; then
		[[ "$out" =~ \(([1-9][0-9]*)\ hard-linked\ from\ the\ build\) ]] ||
			fail "the tree did not link the build's files: $(grep 'unpack:' <<<"$out")"
	fi
	after=$(pd image ls --json | python3 -c 'import json,sys; print([i["digest"] for i in json.load(sys.stdin) if "paddock/tp" in i["name"]][0])')
	assert_ne "$after" "$before" "image update made a new image"
	# the existing box keeps the tree it was made from
	assert_contains "$(pd exec tp-myproj -- /bin/sh /opt/tp/run)" "tp-run"
	# an image older than 7 days is pointed out
	local rec
	rec=$(grep -l '"localhost/paddock/tp:' "$PADDOCK_HOME"/images/records/*.json)
	python3 - "$rec" <<'EOF'
import json, sys, time
p = sys.argv[1]
r = json.load(open(p))
r["created"] = int(time.time()) - 9 * 86400
json.dump(r, open(p, "w"))
EOF
	out=$(pd run --rm -T --workspace none tp -- old 2>&1)
	assert_contains "$out" "the tp image was built 9 days ago; 'paddock image update tp'"
	# changed install commands: a new key, and the image of the old one is forgotten
	sed -i 's/rm \/etc\/hello2/rm -f \/etc\/hello2/' "$XDG_CONFIG_HOME/paddock/agents/tp.json"
	out=$(pd run --rm -T --workspace none tp -- new 2>&1)
	assert_contains "$out" "building the tp image"
	assert_eq "$(pd image ls | grep -c localhost/paddock/tp)" "1"
}

# Install commands run as a root with Docker's default capabilities (confined to the box's
# user namespace): package managers chown and chmod. Boxes made from the image get none.
t_profile_build_root_has_capabilities_runs_have_none() {
	need_root_inside
	mk_base
	profile capt '{"displayName": "C", "baseImage": "local/bb:1",
  "installCommands": ["/bin/busybox grep CapEff /proc/self/status; /bin/busybox touch /opt/owned && /bin/busybox chown 42:42 /opt/owned"],
  "launchCommand": ["/bin/busybox", "sh", "-c", "/bin/busybox grep CapEff /proc/self/status; /bin/busybox stat -c %u /opt/owned"]}'
	# the layer records the chown; an ordinary user's trees ignore owners (docs/images.md),
	# so there the file is the agent's
	local out owner=42
	[ "$(id -u)" = 0 ] || owner=1000
	out=$(pd run --rm -T --workspace none capt 2>&1)
	assert_contains "$out" "CapEff:	00000000a00405fb"
	assert_contains "$out" "$(printf 'CapEff:\t0000000000000000\n%s' $owner)"
	out=$(pd run --rm -T --workspace none --user root capt 2>&1)
	assert_contains "$out" "$(printf 'CapEff:\t0000000000000000\n%s' $owner)"
}

t_profile_failing_install_leaves_nothing() {
	need_root_inside
	mk_base
	profile broken '{"displayName": "B", "baseImage": "local/bb:1",
  "installCommands": ["echo partial > /opt-file; echo visible-install-output; exit 7"],
  "launchCommand": ["/bin/sh"]}'
	local out rc=0
	out=$(pd run --rm -T --workspace none broken 2>&1) || rc=$?
	assert_eq "$rc" "125"
	assert_contains "$out" "visible-install-output"
	assert_contains "$out" "install command 1 of profile broken failed with status 7"
	assert_not_contains "$(pd image ls)" "paddock/broken"
	assert_eq "$(ls "$PADDOCK_HOME/images/tmp" | grep -v '\.lock$' || true)" "" "no build directory left"
	assert_eq "$(ls -A "$PADDOCK_HOME/boxes" 2>/dev/null)" "" "no box left"
}

t_profile_without_root_inside_fails_clearly() {
	pd_root_available && { echo "skip: this caller has uid 0 inside boxes"; exit 77; }
	mk_base
	profile tp '{"displayName": "T", "baseImage": "local/bb:1", "installCommands": ["true"], "launchCommand": ["/bin/sh"]}'
	local out rc=0
	out=$(pd run --rm -T --workspace none tp 2>&1) || rc=$?
	assert_eq "$rc" "125"
	assert_contains "$out" "cannot build the tp image"
	assert_eq "$(ls "$PADDOCK_HOME/images/tmp" | grep -v '\.lock$' || true)" "" "no build directory left"
}

t_profile_names_and_errors() {
	mk_base
	# a profile with nothing to install runs on its base directly
	profile plain '{"displayName": "P", "baseImage": "local/bb:1", "installCommands": [], "launchCommand": ["/bin/busybox", "echo", "plain-run"]}'
	assert_eq "$(pd run --rm -T --workspace none plain 2>/dev/null)" "plain-run"
	assert_contains "$(pd profile ls | grep '^plain ')" "(base image)"
	# `run -- NAME` is always a command; an unknown NAME is a command too
	assert_eq "$(pd run --rm -T --workspace none -- /bin/echo plain)" "plain"
	# a malformed profile: file:line:col and the key path
	profile bad '{"displayName": "B", "baseImage": "local/bb:1",
  "installCommands": [], "launchCommand": "notalist"}'
	local out rc=0
	out=$(pd run --rm -T --workspace none bad 2>&1) || rc=$?
	assert_ne "$rc" "0"
	assert_contains "$out" "bad.json:2:"
	assert_contains "$out" "launchCommand"
	# image update checks every name (and option) before it builds anything
	rc=0
	out=$(pd image update plain no-such-profile 2>&1) || rc=$?
	assert_eq "$rc" "2"
	assert_contains "$out" "unknown profile 'no-such-profile'"
	assert_not_contains "$out" "building"
	rc=0
	out=$(pd image update plain --bogus 2>&1) || rc=$?
	assert_eq "$rc" "2"
	assert_contains "$out" "unknown option '--bogus'"
	# an unknown base image: pulling it fails with the reference named
	profile nobase '{"displayName": "N", "baseImage": "127.0.0.1:1/none:1", "installCommands": ["true"], "launchCommand": ["/bin/sh"]}'
	rc=0
	out=$(pd run --rm -T --workspace none nobase 2>&1) || rc=$?
	assert_eq "$rc" "125"
	assert_contains "$out" "profile nobase: base image 127.0.0.1:1/none:1"
	# a definition that is a link to nothing is said to be that, not an unknown name
	ln -sf /nonexistent "$XDG_CONFIG_HOME/paddock/agents/dangling.json"
	out=$(pd profile show dangling 2>&1) && fail "a dangling profile showed: $out"
	assert_contains "$out" "dangling.json: a symbolic link to a missing file"
	rm -f "$XDG_CONFIG_HOME/paddock/agents/dangling.json"
	# a name no profile can have is a usage error (it was 125), shown escaped
	local n
	for n in ../etc Upper "$(printf 'e\033[31m')"; do
		assert_status 2 pd profile show "$n"
		out=$(pd profile show "$n" 2>&1) || true
		assert_contains "$out" "invalid profile name"
		assert_not_contains "$out" $'\033'
	done
}

# A profile mount at or under the project's place in the box is skipped with a note (the
# copy-in would write the project into the mounted host directory)
t_profile_mount_over_the_workspace_is_skipped() {
	mk_base
	mkdir -p "$PADDOCK_HOME/hostcache"
	profile ov '{"displayName": "O", "baseImage": "local/bb:1", "installCommands": [], "launchCommand": ["/bin/busybox", "true"],
  "mounts": [{"hostPath": "'"$PADDOCK_HOME"'/hostcache", "containerPath": "/workspace/cache"}]}'
	mkdir -p "$PADDOCK_HOME/ovproj"
	echo p >"$PADDOCK_HOME/ovproj/p.txt"
	local out
	out=$(cd "$PADDOCK_HOME/ovproj" && pd run --rm -T ov 2>&1)
	assert_contains "$out" "not mounted at /workspace/cache: it overlaps the project's place in the box"
	assert_eq "$(ls -A "$PADDOCK_HOME/hostcache")" "" "the project was written into the mounted directory"
}

# The built-ins against the real npm registry: `paddock run NAME -- --version` installs
# through the build box's allowlist and prints a version; the second run reuses the image.
# Once per CI run (the root pass): three real installs of ~100 MB each.
t_profile_builtins_install_from_npm() {
	[ "$(id -u)" = 0 ] && [[ "$PADDOCK" != *asan* ]] || { echo "skip: the real npm installs run once, in the root pass"; exit 77; }
	local addr
	addr=$(getent hosts registry.npmjs.org | awk '{print $1; exit}') || true
	[ -n "$addr" ] || { echo "skip: registry.npmjs.org does not resolve on this host"; exit 77; }
	command -v mmdebstrap >/dev/null || fail "mmdebstrap is missing (scripts/install-deps.sh installs it)"
	# the proxy this network routes public names to (pd_resolve_args) re-signs TLS with a CA
	# the host trusts
	local res
	mapfile -t res < <(pd_resolve_args registry.npmjs.org deb.debian.org security.debian.org)
	export PADDOCK_CA_FILE=/etc/ssl/certs/ca-certificates.crt
	# the Debian base from the shared vm cache's mmdebstrap would differ: built here
	pd image build debian:bookworm >/dev/null 2>&1 || fail "image build debian:bookworm failed"
	local p out
	for p in pi claude codex; do
		out=$(pd run --rm -T "${res[@]}" "$p" -- --version 2>"$PADDOCK_HOME/$p.log") ||
			{ tail -n 30 "$PADDOCK_HOME/$p.log"; fail "paddock run $p -- --version failed"; }
		[[ "$out" =~ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "$p printed no version: $out"
		grep -q "building the $p image" "$PADDOCK_HOME/$p.log" || fail "$p was not built"
		out=$(pd run --rm -T "${res[@]}" "$p" -- --version 2>"$PADDOCK_HOME/$p.log2") || fail "second run of $p failed"
		[[ "$out" =~ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "$p printed no version the second time: $out"
		! grep -q "building" "$PADDOCK_HOME/$p.log2" || fail "$p was built again"
	done
	out=$(pd image ls)
	assert_contains "$out" "@earendil-works/pi-coding-agent@"
	assert_contains "$out" "@anthropic-ai/claude-code@"
	assert_contains "$out" "@openai/codex@"
}

# a build killed mid-way leaves its overlay layer behind, owned by the box's ids (for an
# ordinary user its subordinate ids, which it may not remove itself): gc removes it all
# (it failed with "Permission denied" on every later gc and image rm)
t_killed_profile_build_is_swept_by_gc() {
	need_root_inside
	mk_base
	profile slow '{"displayName": "S", "baseImage": "local/bb:1",
		"installCommands": ["mkdir -p /opt/x /root/y /var/log/z && echo hi >/opt/x/f && sleep 4345"],
		"launchCommand": ["/bin/busybox", "true"]}'
	"$PADDOCK" run --rm --workspace none slow >"$PADDOCK_HOME/build.log" 2>&1 &
	local pid=$! i
	for i in $(seq 200); do pgrep -f "sleep 4345" >/dev/null && break; sleep 0.05; done
	kill -KILL $pid
	wait $pid 2>/dev/null || true
	pkill -KILL -f "sleep 4345" 2>/dev/null || true
	for i in $(seq 100); do pgrep -f "sleep 4345" >/dev/null || break; sleep 0.05; done
	ls "$PADDOCK_HOME"/images/tmp/ | grep -q '^build-......$' ||
		fail "the killed build left no layer to sweep: $(ls "$PADDOCK_HOME"/images/tmp/; cat "$PADDOCK_HOME/build.log")"
	pd image gc >/dev/null || fail "image gc failed after a killed build"
	assert_eq "$(ls "$PADDOCK_HOME"/images/tmp/ | grep -c '^build-......$')" "0"
}

run_tests
