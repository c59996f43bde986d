#!/bin/bash
# tests/escape/fs.sh — filesystem escapes: host files, writes outside the box, read-only
# binds, /proc/PID/root and the parent chain, leaked fds, overwriting binaries, mounts,
# pivot_root, chroot, device nodes. Each test asserts the attack is blocked and the host
# unchanged (canary hashes, processes, listener log).
#   PADDOCK=build/src/cli/paddock PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/fs.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/escape-lib.sh"

t_read_host_home_canary() {
	esc_begin
	esc_blocked_both -- read-host-file "$ESC_HOME_CANARY" "$ESC_TOKEN"
	esc_host_unchanged
}

t_read_host_tmp_var_shm_run_canaries() {
	esc_begin
	local f
	for f in "$ESC_DIR/canary" $ESC_VARTMP_CANARY $ESC_SHM_CANARY $ESC_RUN_CANARY; do
		esc_blocked_both -- read-host-file "$f" "$ESC_TOKEN"
	done
	esc_host_unchanged
}

# /etc/shadow: a box may have its own; reading the host's (its first line as token) may not
t_read_etc_shadow() {
	esc_begin
	local tok
	tok=$(esc_first_line /etc/shadow)
	if [ -n "$tok" ]; then
		esc_blocked_both -- read-host-file /etc/shadow "$tok"
	else
		# the test user cannot read it on the host: the box's agent must not either
		esc_blocked -- read-host-file /etc/shadow
	fi
	esc_host_unchanged
}

# the host view carries a minimal /etc, never the host's: a canary in host /etc (host root
# only) and the host's private keys stay out
t_read_host_etc_canary_and_keys() {
	esc_begin
	local f tok
	if [ -w /etc ]; then
		f=/etc/pdcanary-$(_esc_rand)
		esc_canary_file "$f"
		esc_blocked_both -- read-host-file "$f" "$ESC_TOKEN"
	fi
	for f in /etc/ssh/ssh_host_*_key /etc/ssl/private/*.key /etc/ssl/private/*.pem; do
		if [ ! -f "$f" ] || [ ! -r "$f" ]; then continue; fi
		tok=$(sed -n 2p "$f") # key material, unique to this host
		if [ -n "$tok" ]; then esc_blocked_both -- read-host-file "$f" "$tok"; fi
	done
	esc_host_unchanged
}

# the agent user cannot write into the read-only host view (/usr, /etc)
t_write_outside_host_view() {
	esc_begin
	local n d
	n=pdpwn-$(_esc_rand)
	for d in /usr/bin /etc /usr/lib /; do
		esc_blocked -- write-outside "${d%/}/$n"
	done
	esc_blocked -- write-outside /etc/passwd
	for d in /usr/bin /etc /usr/lib; do
		[ ! -e "$d/$n" ] || fail "host file $d/$n was created by the box"
	done
	[ ! -e "/$n" ] || fail "host file /$n was created by the box"
	esc_host_unchanged
}

# root in the box may write its own overlay (DESIGN: writes never touch the lower layers):
# success or refusal are both fine, the host must not change
t_write_outside_root_contained() {
	esc_begin
	local n d
	n=pdpwn-$(_esc_rand)
	for d in /usr/bin /etc /usr/lib; do
		esc_probe_run --user root -- write-outside "$d/$n"
		case $ESC_RC in 0 | 1) ;; *) fail "probe failed (exit $ESC_RC)" ;; esac
		[ ! -e "$d/$n" ] || fail "host file $d/$n was created by the box"
	done
	esc_probe_run --user root -- write-outside /etc/passwd
	esc_host_unchanged
}

# -v HOST:BOX:ro — write, truncate, chmod, chown, utimes, xattr, create, link, rename,
# unlink, and a re-open through /proc/self/fd: all refused, host dir unchanged
t_ro_bind_modify() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	esc_begin
	local d=$ESC_DIR/robind before
	mkdir "$d" && printf 'ro canary %s\n' "$ESC_TOKEN" >"$d/canary" && chmod 0644 "$d/canary"
	esc_watch "$d/canary"
	before=$(stat -c '%n %u %g %a %s %Y' "$d" "$d"/*; ls -la "$d")
	esc_blocked_both -v "$d:/mnt/ro:ro" -- ro-bind /mnt/ro
	assert_eq "$(stat -c '%n %u %g %a %s %Y' "$d" "$d"/*; ls -la "$d")" "$before" "read-only bind changed"
	getfattr -d "$d/canary" 2>/dev/null | grep -q paddock_probe && fail "xattr was set on the host file"
	esc_host_unchanged
}

# a writable bind is a host directory: no file the box makes there may be setuid or setgid
# (in a box of host root the agent writes it as root on disk through the idmapped bind), by
# chmod, fchmod(at/at2), or creating one with the bits (open, openat, creat, mknod, openat2);
# through -v and --workspace rw, as agent and root
t_setid_file_on_writable_bind() {
	pd_only ns "host volumes (-v); a vm guest shares no host path (vm.sh: volumes_are_refused)"
	esc_begin
	local d=$ESC_DIR/rwbind u
	mkdir "$d" && chmod 0777 "$d"
	for u in $ESC_USERS; do
		mkdir "$d/v-$u" "$d/w-$u" && chmod 0777 "$d/v-$u" "$d/w-$u"
		esc_blocked --user "$u" -v "$d:/mnt/rw" -- setid-bind "/mnt/rw/v-$u"
		(cd "$d/w-$u" && esc_blocked --user "$u" --workspace rw -- setid-bind /workspace)
		[ -e "$d/v-$u/pd-setid-chmod" ] || fail "the probe made no file in the bind as $u"
	done
	assert_eq "$(find "$d" -perm /6000)" "" "a set-id file reached the host"
	esc_host_unchanged
}

t_proc1_root() {
	esc_begin
	esc_blocked_both -- proc1-root "$ESC_HOME_CANARY" "$ESC_TOKEN"
	esc_blocked_both -- proc1-root "$ESC_DIR/canary" "$ESC_TOKEN"
	esc_host_unchanged
}

t_proc_ppid_environ_and_root() {
	esc_begin
	esc_blocked_both -- proc-ppid "$ESC_TOKEN" "$ESC_HOME_CANARY" "$ESC_TOKEN"
	esc_host_unchanged
}

# PD_HOST_SECRET is in the CLI's environment (esc_begin): the box must not inherit it
t_env_leak() {
	esc_begin
	esc_blocked_both -- env-leak "$ESC_TOKEN"
	esc_host_unchanged
}

# fds the CLI inherited (a host dir, a host file, a writable log) must not reach the box
t_leaked_fds() {
	esc_begin
	esc_blocked_both -- leaked-fds 3<"$ESC_DIR" 4<"$ESC_HOME_CANARY" 7>>"$ESC_DIR/leak" 9<"$HOME"
	esc_host_unchanged
}

# the probe's own binary (a :ro bind of the host file), PID 1 (paddock-init), host binaries
t_overwrite_exe() {
	pd_only ns "the probe binary is a host file bound into the box; a vm guest gets its own copy, and its system files are its own disk (vm.sh: root_wipes_its_disk_base_and_next_box_unchanged)"
	esc_begin
	local libc
	libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6 2>/dev/null || true)
	esc_watch /usr/bin/env
	[ -n "$libc" ] && esc_watch "$libc"
	esc_blocked -- overwrite-exe /.probe/paddock-probe /usr/bin/env ${libc:+"$libc"}
	# root may copy host-view files up into its overlay; only its own binaries are tried
	esc_blocked --user root -- overwrite-exe /.probe/paddock-probe
	esc_host_unchanged
}

# no mount in the box exposes a host tree that holds the canaries (a bind of the host's /,
# of /root or /home, of /tmp)
t_mount_scan() {
	esc_begin
	esc_blocked_both -- mount-scan "$ESC_HOME_CANARY" "$ESC_TOKEN"
	esc_blocked_both -- mount-scan "$ESC_DIR/canary" "$ESC_TOKEN"
	esc_host_unchanged
}

# "shocker": open_by_handle_at of the ext4 root inode behind the host-view mounts
t_open_by_handle() { esc_simple open-by-handle; }

# the CLI runs in a host dir holding a canary: the box must not start there (a host cwd
# inherited across the pivot is a way out by ".."). With --workspace none nothing of the
# cwd may be visible; the default (copy) mode copies the project on purpose, and its
# exclusions are tested in tests/integration/workspace.sh.
t_cwd_of_cli() {
	esc_begin
	(cd "$ESC_DIR" && esc_blocked_both --workspace none -- cwd "$ESC_TOKEN")
	esc_host_unchanged
}

# (the host's mount table is shared with whatever else runs: only the probe's own scratch
# mounts, which would show up on the host if the box's mounts propagated, are looked for)
t_mount() {
	esc_begin
	esc_blocked_both -- mount
	esc_host_unchanged
	if grep -q 'pdprobe\.' /proc/self/mountinfo; then
		fail "a mount made in the box appeared on the host: $(grep 'pdprobe\.' /proc/self/mountinfo)"
	fi
}

t_pivot_root() { esc_simple pivot-root; }

t_chroot() { esc_simple chroot; }

t_mknod() { esc_simple mknod; }

t_dev_access() {
	esc_vm_guest_root "the guest's devtmpfs is the guest's own devices"
	esc_simple dev-access
}

# vm templates (docs/vm-templates.md): a fresh box is restored from a snapshot of a booted
# guest. Root in one restored box plants a token in its root filesystem, page cache and
# memory, then wipes its disk: the template's files on the host stay byte for byte, and the
# next box restored from the same template sees none of it.
t_vm_root_cannot_taint_the_template_of_later_boxes() {
	pd_only vm "templates of booted guests"
	esc_begin
	local f out
	# (PADDOCK_DEBUG is part of a template's key: every run has it, for "restored by vm")
	export PADDOCK_VM_TEMPLATE_DIR=$ESC_DIR/templates PADDOCK_DEBUG=1
	pd_run -- true >/dev/null 2>&1
	for _ in $(seq 600); do compgen -G "$PADDOCK_VM_TEMPLATE_DIR/*.state" >/dev/null && break; sleep 0.5; done
	compgen -G "$PADDOCK_VM_TEMPLATE_DIR/*.state" >/dev/null || { fail "no template was built"; return 1; }
	for f in "$PADDOCK_VM_TEMPLATE_DIR"/*.state "$PADDOCK_VM_TEMPLATE_DIR"/*.qcow2; do esc_watch "$f"; done
	pd_run --user root -- sh -c "echo $ESC_TOKEN >/etc/pd-planted; echo $ESC_TOKEN >/dev/shm/pd-planted
		sync; dd if=/dev/zero of=/dev/vda bs=1M count=64 conv=fsync 2>/dev/null; sync" >/dev/null 2>&1 || true
	out=$(pd_run --user root -- sh -c 'cat /etc/pd-planted /dev/shm/pd-planted; cat /etc/os-release' 2>&1)
	assert_contains "$out" "restored by vm"
	assert_not_contains "$out" "$ESC_TOKEN"
	assert_contains "$out" "Debian"
	esc_host_unchanged
}

run_tests
