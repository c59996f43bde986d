#!/bin/bash
# selfcheck.sh — proves the probe can fail: runs each paddock-probe subcommand on the HOST,
# unconfined, where the attack must SUCCEED (exit 1). A probe that said "blocked" here
# would also say it inside a box whatever the box did, and its escape test would be worth
# nothing. Needs root. Attacks that would change the host run in throwaway namespaces
# (unshare: private mounts, own UTS and PID namespace, so /proc/1 is ours), as an
# unprivileged uid (setpriv) or under small rlimits (prlimit); nothing touches the host's
# own PID 1, hostname, mounts or disks.
#
#   PD_PROBE=build/tests/probe/paddock-probe bash tests/escape/selfcheck.sh
#
# Exceptions (checked the other way round, see docs/escape-tests.md):
#   x32 / kmod / kexec / sysrq / ioport / vsock  expect 0 when this kernel lacks the
#                       feature (ENOSYS, no file), 1 otherwise
#   alg                 expect 1 when python can open an AF_ALG socket here, 0 otherwise;
#                       alg --filtered always 1 (no filter here)
#   daemon              returns 0 by design; the check is that the daemon IS alive on the host
#   fork-bomb, memory-hog, disk-fill  expect 1 without a limit and 0 under a small rlimit
#   kill-all            runs in its own PID namespace with a canary it must kill
#   stop-spawns         returns 0; the check is that it stopped a non-dumpable process
set -u
P=${PD_PROBE:?set PD_PROBE to the paddock-probe binary}
P=$(realpath "$P")
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${ESC_PY:-/usr/bin/python3}
[ "$(id -u)" = 0 ] || { echo "selfcheck.sh: run as root" >&2; exit 2; }

pass=0 failed=0
W=$(mktemp -d /tmp/pdselfcheck.XXXXXX)
chmod 755 "$W"
LPID=
cleanup() {
	[ -n "$LPID" ] && kill "$LPID" 2>/dev/null
	pkill_marker
	rm -rf "$W"
}
trap cleanup EXIT

# expect NAME WANT CMD...: runs CMD, compares its exit status with WANT
expect() {
	local name=$1 want=$2 rc=0 out
	shift 2
	out=$("$@" 2>&1 </dev/null) || rc=$?
	if [ "$rc" = "$want" ]; then
		pass=$((pass + 1))
		printf 'ok   %-22s exit %s\n' "$name" "$rc"
	else
		failed=$((failed + 1))
		printf 'FAIL %-22s exit %s, want %s\n' "$name" "$rc" "$want"
		printf '%s\n' "$out" | sed 's/^/    | /' | tail -n 25
	fi
	[ -n "${SELFCHECK_VERBOSE:-}" ] && printf '%s\n' "$out" | sed 's/^/    . /'
	return 0
}

# a throwaway PID+mount+UTS+IPC namespace whose PID 1 is a shell (so /proc/1 and the
# parent are processes of ours, never the host's init)
iso() { unshare --fork --pid --mount-proc --mount --propagation private --uts --ipc -- "$@"; }
iso_sh() { iso /bin/sh -c "$1; exit \$?" sh; }
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$@"; }
kconfig() { zcat /proc/config.gz 2>/dev/null | grep -q "^$1=y"; }
feature_want() { if kconfig "$1"; then echo 1; else echo 0; fi; }

MARKER=pdself-$$
pkill_marker() {
	local p
	for p in /proc/[0-9]*; do
		[ "$(cat "$p/comm" 2>/dev/null)" = "$MARKER" ] && kill -9 "${p#/proc/}" 2>/dev/null
	done
	return 0
}

TOKEN=pdtok-self-$RANDOM$RANDOM
printf 'canary %s\n' "$TOKEN" >"$W/canary"
mkdir "$W/dir" && printf 'x\n' >"$W/dir/canary"
cp "$P" "$W/probe-copy"
cp "$P" "$W/suid-probe"
chmod 755 "$W"/*
chmod 04755 "$W/suid-probe"

# --- filesystem
expect read-host-file 1 "$P" read-host-file "$W/canary" "$TOKEN"
expect write-outside 1 "$P" write-outside "$W/new-file"
expect ro-bind 1 "$P" ro-bind "$W/dir"
expect setid-bind 1 "$P" setid-bind "$W/dir"
expect proc1-root 1 iso "$P" proc1-root "$W/canary" "$TOKEN"
expect proc-ppid 1 iso_sh "PD_HOST_SECRET=$TOKEN; export PD_HOST_SECRET; '$P' proc-ppid '$TOKEN' '$W/canary' '$TOKEN'"
expect env-leak 1 env PD_HOST_SECRET="$TOKEN" "$P" env-leak "$TOKEN"
expect leaked-fds 1 /bin/sh -c "exec '$P' leaked-fds 7<'$W'"
# running binaries are ETXTBSY even here: the escape shown is the after-exec re-open
expect overwrite-exe 1 iso "$W/probe-copy" overwrite-exe
expect mount 1 iso "$P" mount
expect pivot-root 1 iso "$P" pivot-root
expect chroot 1 "$P" chroot
expect mknod 1 "$P" mknod "$W"
expect dev-access 1 "$P" dev-access
expect open-by-handle 1 "$P" open-by-handle
expect mount-scan 1 "$P" mount-scan "$W/canary" "$TOKEN"
expect cwd 1 /bin/sh -c "cd '$W' && exec '$P' cwd '$TOKEN'"
shm=$(ipcmk -M 4096 | awk '{print $NF}')
shmkey=$(ipcs -m | awk -v id="$shm" '$2 == id {print $1}')
expect sysv-ipc 1 "$P" sysv-ipc "$shmkey"
ipcrm -m "$shm"
# --- privileges
expect setuid-binary-su 1 as_nobody "$P" setuid-binary /usr/bin/su
expect setuid-binary-self 1 as_nobody "$P" setuid-binary "$W/suid-probe"
expect setuid-binary-scan 1 as_nobody "$P" setuid-binary
expect confinement 1 "$P" confinement
expect proc-sys-write 1 iso "$P" proc-sys-write
expect limit-knobs 1 iso "$P" limit-knobs
expect sysrq "$(feature_want CONFIG_MAGIC_SYSRQ)" "$P" sysrq
expect cgroup-release-agent 1 iso "$P" cgroup-release-agent
# --- terminals: script gives the probe a controlling tty (TIOCSTI types a space into it)
expect tiocsti 1 script -qec "$P tiocsti" /dev/null
expect tioclinux 1 "$P" tioclinux
# --- namespaces and kernel surface
expect userns 1 "$P" userns
expect clone3-ns 1 "$P" clone3-ns
expect setns 1 iso_sh "'$P' setns"
expect ns-distinct 1 "$P" ns-distinct "user=$(stat -Lc %i /proc/self/ns/user)" "mnt=$(stat -Lc %i /proc/self/ns/mnt)"
expect syslog 1 "$P" syslog
expect clock-set 1 "$P" clock-set
expect ioport "$(feature_want CONFIG_X86_IOPL_IOPERM)" "$P" ioport
expect reboot 1 iso "$P" reboot
expect vsock "$(feature_want CONFIG_VSOCKETS)" "$P" vsock
# AF_ALG may be built in or a module (loaded on the first socket()): asked of the kernel
# itself, by another program than the probe
if "$PY" -c 'import socket; socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)' 2>/dev/null; then alg=1; else alg=0; fi
expect alg "$alg" "$P" alg
expect alg-filtered 1 "$P" alg --filtered
expect bpf 1 "$P" bpf
expect perf 1 "$P" perf
expect userfaultfd 1 "$P" userfaultfd
expect keyctl 1 "$P" keyctl
expect io-uring 1 "$P" io-uring
expect ptrace 1 iso_sh "'$P' ptrace"
expect kill-all 1 iso_sh "sleep 60 & '$P' kill-all \$!"
expect personality 1 "$P" personality
expect x32 "$(feature_want CONFIG_X86_X32_ABI)" "$P" x32
# IA32 emulation can be built in and still off at run time (ia32_emulation=off, or a
# hypervisor mode without it: "32-bit emulation disabled" or "IA-32 emulation off" in the kernel log)
ia32=$(feature_want CONFIG_IA32_EMULATION)
if grep -qE 'ia32_emulation=(0|off|false|n)' /proc/cmdline || dmesg 2>/dev/null | grep -qiE '32-bit emulation disabled|IA-32 emulation off'; then ia32=0; fi
expect int80 "$ia32" "$P" int80
expect kmod "$(feature_want CONFIG_MODULES)" "$P" kmod
if kconfig CONFIG_KEXEC || kconfig CONFIG_KEXEC_FILE; then kx=1; else kx=0; fi
expect kexec "$kx" "$P" kexec
# --- network: a listener on every host address
mkdir "$W/net"
"$PY" "$HERE/listener.py" --dir "$W/net" &
LPID=$!
for _ in $(seq 100); do [ -e "$W/net/ready" ] && break; sleep 0.05; done
read -r port abstract path <"$W/net/ready"
port=${port#port=} abstract=${abstract#abstract=} path=${path#path=}
expect host-loopback 1 "$P" host-loopback "$port"
expect abstract-unix 1 "$P" abstract-unix "@$abstract"
expect unix-socket 1 "$P" unix-socket "$path"
expect udp-send 1 "$P" udp-send 127.0.0.1 "$port"
expect raw-socket 1 "$P" raw-socket
expect proxy-listener 1 unshare --net sh -c "ip link set lo up && ip addr add 198.19.0.2/32 dev lo && exec '$P' proxy-listener 198.19.0.2 3128"
# --- resources: unlimited the attack completes (1); under a small limit it is stopped (0)
expect fork-bomb-nolimit 1 as_nobody "$P" fork-bomb 20
expect fork-bomb-limited 0 as_nobody prlimit --nproc=30 "$P" fork-bomb 1000
expect memory-hog-nolimit 1 "$P" memory-hog 32
expect memory-hog-limited 0 prlimit --as=$((96 << 20)) "$P" memory-hog 256
expect disk-fill-nolimit 1 "$P" disk-fill "$W" 8
expect disk-fill-limited 0 prlimit --fsize=$((4 << 20)) "$P" disk-fill "$W" 64
# --- daemon: the probe returns 0; detection = the daemon is found alive on the host
expect daemon 0 "$P" daemon "$MARKER"
found=0
for _ in $(seq 20); do
	for p in /proc/[0-9]*; do [ "$(cat "$p/comm" 2>/dev/null)" = "$MARKER" ] && found=1; done
	[ $found = 1 ] && break
	sleep 0.05
done
if [ $found = 1 ]; then
	pass=$((pass + 1)); echo "ok   daemon-detected        a process named $MARKER is alive"
else
	failed=$((failed + 1)); echo "FAIL daemon-detected        no process named $MARKER found"
fi
pkill_marker
# --- stop-spawns: returns 0; detection = it stopped the one process of its uid whose
# /proc/PID/exe it could not read (made non-dumpable here, as a session's child is before
# its execve())
out=$(as_nobody "$PY" -c '
import ctypes, os, subprocess, sys, time
pid = os.fork()
if pid == 0:
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
    time.sleep(30)
    os._exit(0)
time.sleep(0.3)
r = subprocess.run([sys.argv[1], "stop-spawns", "5"], capture_output=True, text=True)
print(r.stdout.strip(), "expected", pid)
os.kill(pid, 9)
' "$P" 2>&1)
if [[ "$out" =~ stopped\ ([0-9]+).*expected\ ([0-9]+) ]] && [ "${BASH_REMATCH[1]}" = "${BASH_REMATCH[2]}" ]; then
	pass=$((pass + 1)); echo "ok   stop-spawns            stopped the non-dumpable process"
else
	failed=$((failed + 1)); echo "FAIL stop-spawns            $out"
fi

echo "selfcheck: $pass passed, $failed failed"
[ "$failed" = 0 ]
