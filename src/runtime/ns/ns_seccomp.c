/* ns_seccomp.c — the seccomp rule table and its compilation. */
#include <fcntl.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "runtime/ns/ns_seccomp.h"
#include "util/fdio.h"

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define U32 UINT64_C(0xffffffff)
#define ALWAYS(name, act, why) {name, 0, act, NS_SC_ALWAYS, 0, {{0, 0, 0}, {0, 0, 0}}, why, 0}
/* a syscall newer than the libseccomp the build has (Debian 12's 2.5.4 knows up to Linux 6.0):
 * by its x86-64 number, which the kernel never reuses */
#define ALWAYS_NR(name, nr, act, why) {name, nr, act, NS_SC_ALWAYS, 0, {{0, 0, 0}, {0, 0, 0}}, why, 0}
#define ARG1(name, act, i, m, v, why) {name, 0, act, NS_SC_ARGS, 1, {{i, m, v}, {0, 0, 0}}, why, 0}
#define ARG2(name, act, i, m, v, j, n, w, why) {name, 0, act, NS_SC_ARGS, 2, {{i, m, v}, {j, n, w}}, why, 0}
/* Boxes with a writable bind: the mode argument `i` of syscall `name` (number nr, or 0: by
 * name) may not carry set-id bits. One rule per bit: a masked comparison tests one value. */
#define SETID(name, nr, i, why) \
	{name, nr, NS_SC_EPERM, NS_SC_ARGS, 1, {{i, S_ISUID, S_ISUID}, {0, 0, 0}}, why, NS_SC_WRITABLE_BIND}, \
	{name, nr, NS_SC_EPERM, NS_SC_ARGS, 1, {{i, S_ISGID, S_ISGID}, {0, 0, 0}}, why, NS_SC_WRITABLE_BIND}
#define CLONE_NS(flag, why) ARG1("clone", NS_SC_EPERM, 0, flag, flag, why)

static const struct ns_sc_rule rules[] = {
	/* kernel interfaces with a long record of escalations that agents do not need */
	ALWAYS("io_uring_setup", NS_SC_EPERM, "io_uring: large attack surface; its operations bypass syscall filtering"),
	ALWAYS("io_uring_enter", NS_SC_EPERM, "io_uring (see io_uring_setup)"),
	ALWAYS("io_uring_register", NS_SC_EPERM, "io_uring (see io_uring_setup)"),
	ALWAYS("bpf", NS_SC_EPERM, "loading BPF programs: verifier bugs are a classic escalation path"),
	ALWAYS("perf_event_open", NS_SC_EPERM, "performance counters: side channels on the host and frequent kernel bugs"),
	ALWAYS("userfaultfd", NS_SC_EPERM, "stalls the kernel at chosen page faults: a standard exploitation primitive"),
	ALWAYS("keyctl", NS_SC_EPERM, "kernel keyrings are not namespaced: the host user's keys would be reachable"),
	ALWAYS("add_key", NS_SC_EPERM, "kernel keyrings (see keyctl)"),
	ALWAYS("request_key", NS_SC_EPERM, "kernel keyrings (see keyctl)"),
	ALWAYS("kexec_load", NS_SC_EPERM, "replacing the running kernel"),
	ALWAYS("kexec_file_load", NS_SC_EPERM, "replacing the running kernel"),
	ALWAYS("init_module", NS_SC_EPERM, "loading kernel modules"),
	ALWAYS("finit_module", NS_SC_EPERM, "loading kernel modules"),
	ALWAYS("delete_module", NS_SC_EPERM, "unloading kernel modules"),
	/* the box's mount table is final once paddock built it */
	ALWAYS("mount", NS_SC_EPERM, "the mount table is fixed: no remounting read-only binds writable"),
	ALWAYS("umount2", NS_SC_EPERM, "the mount table is fixed: no uncovering masked /proc files"),
	ALWAYS("pivot_root", NS_SC_EPERM, "the root is fixed"),
	ALWAYS("chroot", NS_SC_EPERM, "the root is fixed"),
	ALWAYS("open_tree", NS_SC_EPERM, "new mount API (see mount)"),
	ALWAYS_NR("open_tree_attr", 467, NS_SC_EPERM, "new mount API: open_tree and mount_setattr in one (Linux 6.15)"),
	ALWAYS("move_mount", NS_SC_EPERM, "new mount API (see mount)"),
	ALWAYS("fsopen", NS_SC_EPERM, "new mount API: filesystem superblock parsers are attack surface"),
	ALWAYS("fsconfig", NS_SC_EPERM, "new mount API (see fsopen)"),
	ALWAYS("fsmount", NS_SC_EPERM, "new mount API (see fsopen)"),
	ALWAYS("fspick", NS_SC_EPERM, "new mount API (see mount)"),
	ALWAYS("mount_setattr", NS_SC_EPERM, "new mount API: changing mount flags (see mount)"),
	/* no new namespaces (each new user namespace hands out a full capability set over new
	 * kernel objects), no joining of others */
	ALWAYS("unshare", NS_SC_EPERM, "no new namespaces"),
	ALWAYS("setns", NS_SC_EPERM, "no joining other namespaces"),
	CLONE_NS(CLONE_NEWUSER, "clone into a new user namespace"),
	CLONE_NS(CLONE_NEWNS, "clone into a new mount namespace"),
	CLONE_NS(CLONE_NEWPID, "clone into a new pid namespace"),
	CLONE_NS(CLONE_NEWNET, "clone into a new network namespace"),
	CLONE_NS(CLONE_NEWIPC, "clone into a new IPC namespace"),
	CLONE_NS(CLONE_NEWUTS, "clone into a new UTS namespace"),
	CLONE_NS(CLONE_NEWCGROUP, "clone into a new cgroup namespace"),
	ALWAYS("clone3", NS_SC_ENOSYS, "its flags live in memory seccomp cannot read; ENOSYS makes libc fall back to clone"),
	/* terminals: typing into another session's input */
	ARG1("ioctl", NS_SC_EPERM, 1, U32, TIOCSTI, "TIOCSTI pushes input into a terminal another process reads"),
	ARG1("ioctl", NS_SC_EPERM, 1, U32, TIOCLINUX, "TIOCLINUX can paste the console selection as input"),
	{"personality", 0, NS_SC_EPERM, NS_SC_PERSONALITY, 0, {{0, 0, 0}, {0, 0, 0}},
	 "only PER_LINUX, PER_LINUX32, UNAME26 and the query: READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, "
	 "MMAP_PAGE_ZERO... undo hardening", 0},
	/* sockets that reach below or beside the box's network namespace */
	ARG1("socket", NS_SC_EPERM, 0, U32, AF_PACKET, "raw link-layer access"),
	ARG2("socket", NS_SC_EPERM, 0, U32, AF_INET, 1, 0xf, SOCK_RAW, "raw IPv4: packet forging"),
	ARG2("socket", NS_SC_EPERM, 0, U32, AF_INET6, 1, 0xf, SOCK_RAW, "raw IPv6: packet forging"),
	ARG1("socket", NS_SC_EPERM, 0, U32, AF_VSOCK, "vsock is not confined by the network namespace: it reaches the hypervisor host"),
	/* the kernel crypto API: EAFNOSUPPORT is what a kernel built without AF_ALG answers, a
	 * case its users (libkcapi, cryptsetup, OpenSSL's afalg engine) already meet and handle
	 * (user-space crypto, or the feature reported unavailable); EPERM would be new to them.
	 * AF_KEY needs no rule: pfkey_create() checks CAP_NET_ADMIN, which no box's bounding set
	 * holds (ns_caps_keep, ns_caps_keep_build). */
	ARG1("socket", NS_SC_EAFNOSUPPORT, 0, U32, AF_ALG, "AF_ALG: user input into kernel crypto code, a record of memory corruption (CVE-2017-17806, CVE-2019-8912)"),
	/* host-global state, privileged in any case */
	ALWAYS("acct", NS_SC_EPERM, "process accounting is host-wide"),
	ALWAYS("swapon", NS_SC_EPERM, "swap is host-wide"),
	ALWAYS("swapoff", NS_SC_EPERM, "swap is host-wide"),
	ALWAYS("reboot", NS_SC_EPERM, "rebooting (in a pid namespace it would only end the box; paddock does that)"),
	ALWAYS("settimeofday", NS_SC_EPERM, "the clock is host-wide"),
	ALWAYS("clock_settime", NS_SC_EPERM, "the clock is host-wide"),
	ALWAYS("clock_adjtime", NS_SC_EPERM, "the clock is host-wide"),
	ALWAYS("adjtimex", NS_SC_EPERM, "the clock is host-wide"),
	ALWAYS("syslog", NS_SC_EPERM, "the kernel log leaks host information and addresses"),
	ALWAYS("lookup_dcookie", NS_SC_EPERM, "profiling interface, host-wide"),
	ALWAYS("quotactl", NS_SC_EPERM, "disk quotas are host-wide"),
	ALWAYS("quotactl_fd", NS_SC_EPERM, "disk quotas are host-wide"),
	ALWAYS("nfsservctl", NS_SC_EPERM, "the kernel NFS server is host-wide"),
	ALWAYS("vhangup", NS_SC_EPERM, "hangs up the controlling terminal of others"),
	ALWAYS("iopl", NS_SC_EPERM, "raw I/O port access"),
	ALWAYS("ioperm", NS_SC_EPERM, "raw I/O port access"),
	ALWAYS("name_to_handle_at", NS_SC_EPERM, "file handles can reach files outside the box's root (shocker)"),
	ALWAYS("open_by_handle_at", NS_SC_EPERM, "file handles can reach files outside the box's root (shocker)"),
	ALWAYS("uselib", NS_SC_EPERM, "obsolete a.out loader"),
	/* Boxes with a writable bind: no setuid or setgid file. In a box of host root the agent
	 * writes an idmapped bind as root on disk, and root's files there are the agent's, so a
	 * set-id bit it set would give the host a setuid-root program; in any box a set-id file
	 * planted in a host directory is a trap for whoever runs it there. Boxes without one keep
	 * the bits (image builds: dpkg installs setuid programs into the box's own layer). */
	SETID("chmod", 0, 1, "set-id bits on a file a writable bind may hold (see above)"),
	SETID("fchmod", 0, 1, "set-id bits on a file a writable bind may hold"),
	SETID("fchmodat", 0, 2, "set-id bits on a file a writable bind may hold"),
	SETID("fchmodat2", 452, 2, "set-id bits on a file a writable bind may hold (Linux 6.6)"),
	SETID("open", 0, 2, "a file created with set-id bits"),
	SETID("openat", 0, 3, "a file created with set-id bits"),
	SETID("creat", 0, 1, "a file created with set-id bits"),
	SETID("mknod", 0, 1, "a regular file made with set-id bits"),
	SETID("mknodat", 0, 2, "a regular file made with set-id bits"),
	{"openat2", 0, NS_SC_ENOSYS, NS_SC_ALWAYS, 0, {{0, 0, 0}, {0, 0, 0}},
	 "its mode is in memory seccomp cannot read; ENOSYS makes callers fall back to openat", NS_SC_WRITABLE_BIND},
	/* allowed on purpose: ptrace, process_vm_readv/writev and kcmp only reach processes of the
	 * box's own pid namespace, with the kernel's usual ptrace checks (and seccomp has been
	 * re-checked after ptrace changes since Linux 4.8); debuggers and strace work. */
};

const struct ns_sc_rule *ns_seccomp_rules(size_t *ret_n)
{
	*ret_n = ARRAY_SIZE(rules);
	return rules;
}

/* Denied personality values are those whose low 32 bits have a forbidden bit, except the
 * all-ones query. As single masked comparisons:
 *  - for the forbidden bits taken in a cycle b0..bk, "b_i set and b_i+1 clear": matches every
 *    value with some forbidden bit set and some forbidden bit clear;
 *  - "all forbidden bits set and allowed bit a clear", for each allowed bit a: the rest.
 * A value with every bit set matches neither: the query stays allowed. */
size_t ns_seccomp_personality_rules(struct ns_sc_arg ret[NS_PERSONALITY_MAX_RULES])
{
	uint32_t bad = ~NS_PERSONALITY_ALLOWED_BITS;
	unsigned bits[32], nb = 0;
	size_t n = 0;
	for (unsigned b = 0; b < 32; b++)
		if (bad & (1u << b))
			bits[nb++] = b;
	for (unsigned i = 0; i < nb; i++) {
		uint64_t set = UINT64_C(1) << bits[i], clear = UINT64_C(1) << bits[(i + 1) % nb];
		ret[n++] = (struct ns_sc_arg){0, set | clear, set};
	}
	for (unsigned b = 0; b < 32; b++)
		if (NS_PERSONALITY_ALLOWED_BITS & (1u << b))
			ret[n++] = (struct ns_sc_arg){0, bad | (UINT64_C(1) << b), bad};
	return n;
}

bool ns_seccomp_personality_denied(uint64_t arg)
{
	struct ns_sc_arg r[NS_PERSONALITY_MAX_RULES];
	size_t n = ns_seccomp_personality_rules(r);
	for (size_t i = 0; i < n; i++)
		if ((arg & r[i].mask) == r[i].value)
			return true;
	return false;
}

static uint32_t action(enum ns_sc_action a)
{
	switch (a) {
	case NS_SC_ENOSYS:
		return SCMP_ACT_ERRNO(ENOSYS);
	case NS_SC_EAFNOSUPPORT:
		return SCMP_ACT_ERRNO(EAFNOSUPPORT);
	case NS_SC_KILL:
		return SCMP_ACT_KILL_PROCESS;
	case NS_SC_EPERM:
	default:
		return SCMP_ACT_ERRNO(EPERM);
	}
}

static int add_rule(scmp_filter_ctx ctx, const struct ns_sc_rule *r, pd_err *err)
{
	int nr = r->nr > 0 ? r->nr : seccomp_syscall_resolve_name(r->syscall);
	struct scmp_arg_cmp cmp[2];
	int rc = 0;
	if (nr == __NR_SCMP_ERROR)
		return pd_error_msg(err, EINVAL, "seccomp: libseccomp does not know syscall %s", r->syscall);
	if (r->match == NS_SC_PERSONALITY) {
		struct ns_sc_arg p[NS_PERSONALITY_MAX_RULES];
		size_t n = ns_seccomp_personality_rules(p);
		for (size_t i = 0; i < n && rc == 0; i++)
			rc = seccomp_rule_add(ctx, action(r->action), nr, 1, SCMP_CMP(0, SCMP_CMP_MASKED_EQ, p[i].mask, p[i].value));
	} else {
		for (unsigned i = 0; i < r->n_args; i++)
			cmp[i] = SCMP_CMP(r->args[i].index, SCMP_CMP_MASKED_EQ, r->args[i].mask, r->args[i].value);
		rc = seccomp_rule_add_array(ctx, action(r->action), nr, r->n_args, cmp);
	}
	return rc < 0 ? pd_error(err, rc, "seccomp: cannot add the rule for %s", r->syscall) : 0;
}

/* Reads the exported BPF back from a memfd into a sock_fprog. */
static int export(scmp_filter_ctx ctx, struct sock_fprog *ret, pd_err *err)
{
	_cleanup_close_ int fd = memfd_create("paddock-seccomp", MFD_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return pd_error(err, errno, "seccomp: cannot create a memfd");
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return pd_error(err, r, "seccomp: cannot export the filter");
	if (fstat(fd, &st) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return pd_error(err, errno, "seccomp: cannot read the compiled filter");
	size_t len = (size_t)st.st_size;
	if (len == 0 || len % sizeof(struct sock_filter) != 0 || len / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return pd_error_msg(err, EINVAL, "seccomp: compiled filter has an invalid size (%zu bytes)", len);
	_cleanup_free_ struct sock_filter *f = xmalloc(len);
	r = fd_read_exact(fd, f, len);
	if (r < 0)
		return pd_error(err, r, "seccomp: cannot read the compiled filter");
	ret->len = (unsigned short)(len / sizeof(struct sock_filter));
	ret->filter = TAKE_PTR(f);
	return 0;
}

int ns_seccomp_build(unsigned flags, struct sock_fprog *ret, pd_err *err)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r = 0;
	if (!ctx)
		return pd_error_msg(err, ENOMEM, "seccomp: cannot initialise libseccomp");
	/* i386 (int 0x80) and x32 entry points are other "architectures": kill */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0)
		r = pd_error_msg(err, EINVAL, "seccomp: cannot set the bad-architecture action");
	for (size_t i = 0; r == 0 && i < ARRAY_SIZE(rules); i++)
		if ((rules[i].when & ~flags) == 0)
			r = add_rule(ctx, &rules[i], err);
	if (r == 0)
		r = export(ctx, ret, err);
	seccomp_release(ctx);
	return r;
}

void ns_seccomp_free(struct sock_fprog *prog)
{
	if (!prog)
		return;
	free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
}
