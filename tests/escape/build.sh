#!/bin/bash
# tests/escape/build.sh — profile image builds. A profile's installCommands are untrusted (a
# package's postinstall script is anyone's code) and run as a root that keeps Docker's
# default capabilities inside its user namespace, with the box's upper layer on a host
# directory that paddock later reads, turns into a layer and removes. Each test attacks one
# of those steps and asserts it was blocked and nothing on the host changed:
#   - the install commands run the probe: host files, the image store, /proc, mounts,
#     devices, kernel interfaces, host sockets, a daemon outliving the build;
#   - the layer they leave holds symlinks to host paths (absolute, relative, to directories,
#     to /), a FIFO, setuid/setgid copies of the probe, a hard link: the capture, the build
#     directory's removal and the image tree never follow them, the store holds no host
#     content, and a box made from the image (ns, or vm from its disk) reaches nothing;
#   - PADDOCK_ROOT_CAPS, the runtime's word for a build box, is inert in any other box.
# Builds always run on ns; on the vm backend the hostile image is run on vm.
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/build.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"
REG=$(cd "$(dirname "${BASH_SOURCE[0]}")/../registry" && pwd)

need_root_inside() {
	pd_root_available || { echo "skip: building needs uid 0 inside the box (no /etc/subuid range for $(id -un))"; exit 77; }
}

# a base image: static busybox as /bin/sh and the probe as /probe
mk_probe_base() {
	file -L /bin/busybox | grep -q "statically linked" || fail "the test needs a static /bin/busybox"
	python3 "$REG/mkimage.py" layout "$PADDOCK_HOME/pb" --add-file /bin/busybox:/bin/busybox \
		--symlink bin/sh:busybox --add-file "$PD_PROBE:/probe"
	pd image import --name local/probe:1 "$PADDOCK_HOME/pb" >/dev/null 2>&1
}

# profile NAME LAUNCH_JSON CMD...: a user profile on the probe base whose installCommands are
# the CMDs (JSON-quoted here)
profile() {
	local name=$1 launch=$2
	shift 2
	export XDG_CONFIG_HOME=$PADDOCK_HOME/config
	mkdir -p "$XDG_CONFIG_HOME/paddock/agents"
	python3 - "$name" "$launch" "$@" >"$XDG_CONFIG_HOME/paddock/agents/$name.json" <<'EOF'
import json, sys
print(json.dumps({"displayName": sys.argv[1], "baseImage": "local/probe:1",
                  "installCommands": sys.argv[3:], "launchCommand": json.loads(sys.argv[2])}, indent=1))
EOF
}

# the rootfs tree of the profile's image
image_tree() {
	pd image inspect "$(pd image ls | awk -v n="paddock/$1:" 'index($1, n) {print $1}')" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["rootfs"])'
}

# every file of the image store holds no TOKEN, gzip-compressed blobs included
store_has_no() {
	local f hits
	hits=$(grep -rlaF -- "$1" "$PADDOCK_HOME/images" | grep -vF -- "$2" || true)
	[ -z "$hits" ] || fail "host content reached the image store: $hits"
	for f in "$PADDOCK_HOME"/images/blobs/sha256/*; do
		if gzip -t "$f" 2>/dev/null && zcat "$f" | grep -qaF -- "$1"; then
			fail "host content reached the blob $f"
		fi
	done
}

# The install commands are the probe. The build must succeed (every attempt blocked: a probe
# that reports an escape fails its command, and the build with it), the host stay unchanged.
# Left out, because a build's root may do them by design inside its own box: chroot (has
# CAP_SYS_CHROOT), confinement (has capabilities), setuid-binary (is uid 0 already); and
# overwrite-exe tries paddock-init and the parent only (--not-self): the probe is the image's
# own file, which the build's root may rewrite in its own layer.
t_build_install_commands_are_confined() {
	pd_only ns "install commands always run in an ns build box; vm runs the image (below)"
	need_root_inside
	esc_begin
	mk_probe_base
	local store_canary marker out rc=0
	store_canary=$PADDOCK_HOME/images/pdcanary-$(_esc_rand)
	esc_canary_file "$store_canary"
	marker=pdbuild-$(_esc_rand)
	ESC_MARKERS+=("$marker")
	profile evil '["/probe"]' \
		"/probe read-host-file $ESC_HOME_CANARY $ESC_TOKEN" \
		"/probe read-host-file $ESC_DIR/canary $ESC_TOKEN" \
		"/probe read-host-file $store_canary $ESC_TOKEN" \
		"/probe mount-scan $store_canary $ESC_TOKEN" \
		"/probe mount-scan $ESC_HOME_CANARY $ESC_TOKEN" \
		"/probe proc1-root $ESC_DIR/canary $ESC_TOKEN" \
		"/probe proc-ppid $ESC_TOKEN $ESC_DIR/canary $ESC_TOKEN" \
		"/probe env-leak $ESC_TOKEN" \
		"/probe leaked-fds" \
		"/probe overwrite-exe --not-self" \
		"/probe mount" "/probe pivot-root" "/probe mknod" "/probe dev-access" \
		"/probe proc-sys-write" "/probe sysrq" "/probe cgroup-release-agent" \
		"/probe userns" "/probe clone3-ns" "/probe setns" "/probe ptrace" \
		"/probe kill-all $ESC_CANARY_PID" \
		"/probe host-loopback $ESC_PORT" "/probe udp-send 127.0.0.1 $ESC_PORT" \
		"/probe unix-socket $ESC_UNIX" "/probe abstract-unix $ESC_ABSTRACT" "/probe raw-socket" \
		"/probe kmod" "/probe kexec" "/probe open-by-handle" "/probe bpf" "/probe perf" \
		"/probe keyctl" "/probe io-uring" "/probe userfaultfd" "/probe syslog" "/probe clock-set" \
		"/probe ioport" "/probe reboot" "/probe vsock" "/probe alg --filtered" "/probe tiocsti --no-tty-ok" \
		"/probe daemon $marker"
	out=$(pd image update evil 2>&1) || rc=$?
	printf '%s\n[exit %s]\n' "$out" "$rc"
	assert_eq "$rc" 0 "every install-command probe blocked"
	assert_not_contains "$out" "ESCAPED"
	assert_contains "$out" "[43/43] /probe daemon"
	sleep 1 # (a daemon that escaped the box's pid namespace would still be running now)
	esc_host_unchanged
	assert_eq "$(ls "$PADDOCK_HOME/images/tmp" | grep -v '\.lock$' || true)" "" "no build directory left"
}

# What the install commands leave behind is captured as a layer, the build directory removed,
# the layer applied to a tree (and on vm written to a disk). None of those steps follows the
# symlinks an install command planted, and nothing of the host reaches the store or a box.
t_build_layer_hostile_entries_stay_inert() {
	need_root_inside
	esc_begin
	# a store directory someone made open to all: paddock closes it (setuid files, below)
	mkdir -m 0755 "$PADDOCK_HOME/images"
	mk_probe_base
	local home_dir tree f
	home_dir=$(dirname "$ESC_HOME_CANARY")
	# /opt/reads TOKEN (a script): the probe reads the host canaries through every planted link
	profile hostile '["/bin/sh", "-c", "exec \"$@\"", "sh"]' \
		"ln -s $ESC_HOME_CANARY /opt/abs && ln -s ../../../../../../../../..$ESC_DIR/canary /opt/rel" \
		"ln -s $ESC_DIR /opt/dirlink && ln -s / /opt/rootlink && mkdir /opt/d && ln -s $home_dir /opt/d/home" \
		"mkdir -p /var/lib && ln -s $ESC_DIR /var/lib/hostdir && ln -s $home_dir /root/hosthome" \
		"mkfifo /opt/fifo && ln /etc/hello /opt/hardlink" \
		"cp /probe /opt/suid && chmod 4755 /opt/suid && cp /probe /opt/sgid && chmod 2755 /opt/sgid" \
		"/probe mknod /opt" \
		"echo 'rc=0; for p in /opt/abs /opt/rel /opt/dirlink/canary /opt/d/home/$(basename "$ESC_HOME_CANARY") /var/lib/hostdir/canary /root/hosthome/$(basename "$ESC_HOME_CANARY"); do /probe read-host-file \$p \$1 || { r=\$?; [ \$r -gt \$rc ] && rc=\$r; }; done; exit \$rc' >/opt/reads"
	pd image update hostile
	# the build directory's removal did not follow /opt/dirlink into the host's $ESC_DIR
	esc_host_unchanged
	[ -d "$ESC_DIR" ] || fail "the host directory behind /opt/dirlink was removed"
	# the tree holds the symlinks as symlinks, no device node, and no host content anywhere
	tree=$(image_tree hostile)
	for f in opt/abs opt/rel opt/dirlink opt/rootlink opt/d/home var/lib/hostdir root/hosthome; do
		[ -L "$tree/$f" ] || fail "/$f is not a symlink in the image tree: $(stat -c %F "$tree/$f" 2>&1)"
	done
	assert_eq "$(readlink "$tree/opt/abs")" "$ESC_HOME_CANARY"
	assert_eq "$(find "$tree" \( -type b -o -type c \) -print | head -3)" "" "no device node in the tree"
	store_has_no "$ESC_TOKEN" "$ESC_DIR"
	# host root's trees keep an image's setuid bits (like docker's /var/lib/docker): the store
	# is closed to every other host user, so none of them can run one
	assert_eq "$(stat -c %a "$PADDOCK_HOME/images")" "700" "the image store is the owner's only"
	if [ "$(id -u)" = 0 ]; then
		[ -u "$tree/opt/suid" ] || fail "the privileged tree lost the setuid bit"
	else
		[ ! -u "$tree/opt/suid" ] && [ ! -g "$tree/opt/sgid" ] || fail "an ordinary user's tree holds a setuid/setgid file"
	fi
	# a box made from the image: every planted link resolves inside the box, the setuid and
	# setgid copies gain nothing
	local u
	for u in agent root; do
		_esc_judge_run "$u" -T --workspace none hostile -- /bin/sh /opt/reads "$ESC_TOKEN"
	done
	_esc_judge_run agent -T --workspace none hostile -- /probe setuid-binary /opt/suid /opt/sgid
	esc_host_unchanged
}

# _esc_judge_run USER RUNARGS...: `paddock run --rm --user USER RUNARGS` (a profile run whose
# launch command is the probe), judged like esc_blocked
_esc_judge_run() {
	local u=$1 rc=0 out
	shift
	out=$(timeout -k 10 "${ESC_TIMEOUT:-300}" "$PADDOCK" run --rm --user "$u" "$@" </dev/null 2>&1) || rc=$?
	printf '$ paddock run --rm --user %s %s\n%s\n[exit %s]\n' "$u" "$*" "$out" "$rc"
	_esc_judge "$rc" "$out" "$*"
}

# PADDOCK_ROOT_CAPS=1 is how the runtime tells a build box's init to leave root its
# capabilities. Given by a user (-e on run or exec, a profile's environment) it must do
# nothing: root in any other box still has no capability at all.
t_root_caps_variable_is_inert_outside_builds() {
	pd_only ns "on vm root is the guest kernel's own root (the guest is the boundary)"
	need_root_inside
	esc_begin
	esc_blocked --user root -e PADDOCK_ROOT_CAPS=1 -- confinement
	PADDOCK_ROOT_CAPS=1 esc_blocked --user root -e PADDOCK_ROOT_CAPS -- confinement
	# exec into a running box with the variable
	local name=caps-$$
	pd create --name "$name" --workspace none -v "$PD_PROBE:/.probe/paddock-probe:ro" >/dev/null
	local rc=0 out
	out=$(pd exec --user root -e PADDOCK_ROOT_CAPS=1 "$name" -- /.probe/paddock-probe confinement 2>&1) || rc=$?
	printf '%s\n[exit %s]\n' "$out" "$rc"
	_esc_judge "$rc" "$out" "exec -e PADDOCK_ROOT_CAPS=1 confinement"
	pd rm -f "$name" >/dev/null
	# a profile that sets it for its runs (and has nothing to install: runs on its base)
	mk_probe_base
	profile capsprof '["/probe", "confinement"]'
	python3 - "$XDG_CONFIG_HOME/paddock/agents/capsprof.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1])); p["environmentVariables"] = ["PADDOCK_ROOT_CAPS=1"]
json.dump(p, open(sys.argv[1], "w"))
EOF
	_esc_judge_run root -T --workspace none capsprof
	esc_host_unchanged
}

run_tests
