/* test-seccomp.c — the rule table, the personality expansion, and the compiled filter's
 * behaviour in a child process. */
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <netinet/in.h>
#include <cmocka.h>

#include "runtime/ns/ns_seccomp.h"

static void test_table(void **state)
{
	(void)state;
	size_t n;
	const struct ns_sc_rule *r = ns_seccomp_rules(&n);
	assert_true(n > 50);
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(r[i].syscall);
		/* by name, or by a number of its own that libseccomp does not know under another name */
		assert_true(r[i].nr > 0 ? nr == __NR_SCMP_ERROR || nr == r[i].nr : nr != __NR_SCMP_ERROR);
		if (r[i].nr > 0) { /* a newer libseccomp may know the number: then by this name */
			char *known = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, r[i].nr);
			assert_true(!known || streq(known, r[i].syscall));
			free(known);
		}
		assert_true(strlen(r[i].reason) > 5);
		assert_true(r[i].n_args <= 2);
		assert_true(r[i].match != NS_SC_ARGS || r[i].n_args > 0);
		for (unsigned a = 0; a < r[i].n_args; a++) {
			assert_true(r[i].args[a].index < 6);
			assert_int_equal(r[i].args[a].value & ~r[i].args[a].mask, 0);
		}
		assert_false(streq(r[i].syscall, "execveat") || streq(r[i].syscall, "execve"));
		assert_false(streq(r[i].syscall, "ptrace"));
		assert_true(r[i].when < NS_SC_N_PROGRAMS);
	}
}

static const struct ns_sc_rule *rule_for(const char *name)
{
	size_t n;
	const struct ns_sc_rule *r = ns_seccomp_rules(&n);
	for (size_t i = 0; i < n; i++)
		if (streq(r[i].syscall, name))
			return &r[i];
	return NULL;
}

/* Every syscall that makes, moves or changes a mount, old API and new, down to the newest
 * kernel's: a mount the box could make or change would undo its read-only binds. */
static void test_mount_api_complete(void **state)
{
	(void)state;
	static const char *const all[] = {
		"mount", "umount2", "pivot_root", "chroot", "open_tree", "open_tree_attr", "move_mount",
		"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
	};
	for (size_t i = 0; i < ARRAY_SIZE(all); i++) {
		const struct ns_sc_rule *r = rule_for(all[i]);
		assert_non_null(r);
		assert_int_equal(r->match, NS_SC_ALWAYS);
		assert_int_equal(r->action, NS_SC_EPERM);
	}
	assert_int_equal(rule_for("open_tree_attr")->nr, 467);
}

/* Every call that sets a file's mode, or creates a file with one, refuses the set-id bits in
 * boxes with a writable bind, one rule per bit on the mode argument; openat2 (its mode is in
 * memory) is ENOSYS there. Boxes without one keep every bit (image builds). */
static void test_setid_rules_complete(void **state)
{
	(void)state;
	static const struct { const char *name; unsigned mode_arg; } all[] = {
		{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"open", 2},
		{"openat", 3}, {"creat", 1}, {"mknod", 1}, {"mknodat", 2},
	};
	size_t n;
	const struct ns_sc_rule *r = ns_seccomp_rules(&n);
	for (size_t k = 0; k < ARRAY_SIZE(all); k++) {
		unsigned bits = 0;
		for (size_t i = 0; i < n; i++) {
			if (!streq(r[i].syscall, all[k].name))
				continue;
			assert_int_equal(r[i].when, NS_SC_WRITABLE_BIND);
			assert_int_equal(r[i].action, NS_SC_EPERM);
			assert_int_equal(r[i].n_args, 1);
			assert_int_equal(r[i].args[0].index, all[k].mode_arg);
			assert_int_equal(r[i].args[0].mask, r[i].args[0].value);
			bits |= (unsigned)r[i].args[0].mask;
		}
		assert_int_equal(bits, S_ISUID | S_ISGID);
	}
	assert_int_equal(rule_for("fchmodat2")->nr, 452);
	assert_int_equal(rule_for("openat2")->action, NS_SC_ENOSYS);
	assert_int_equal(rule_for("openat2")->when, NS_SC_WRITABLE_BIND);
}

static bool intended(uint64_t v)
{
	uint32_t lo = (uint32_t)v;
	return (lo & ~NS_PERSONALITY_ALLOWED_BITS) != 0 && lo != 0xffffffffu;
}

static void test_personality_expansion(void **state)
{
	(void)state;
	struct ns_sc_arg a[NS_PERSONALITY_MAX_RULES];
	size_t n = ns_seccomp_personality_rules(a);
	assert_true(n > 0 && n <= NS_PERSONALITY_MAX_RULES);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(a[i].mask >> 32, 0); /* only the low 32 bits, as the kernel reads them */
	const uint64_t allowed[] = {0, 8, 0x20000, 0x20008, 0xffffffff, UINT64_C(0x100000000), UINT64_C(0xffffffff00000008),
				    UINT64_C(0x1ffffffff)};
	const uint64_t denied[] = {0x0040000 /* ADDR_NO_RANDOMIZE */, 0x0400000 /* READ_IMPLIES_EXEC */,
				   0x0100000 /* MMAP_PAGE_ZERO */, 0x80000000, 1, 0xfffffff7, 0xfffdffff, 0xfffdfff7,
				   0x7fffffff, 0xfffffffe, UINT64_C(0x100040000), UINT64_C(0xffffffff00040008)};
	for (size_t i = 0; i < ARRAY_SIZE(allowed); i++)
		assert_false(ns_seccomp_personality_denied(allowed[i]));
	for (size_t i = 0; i < ARRAY_SIZE(denied); i++)
		assert_true(ns_seccomp_personality_denied(denied[i]));
	/* every single bit and every pair of bits, with and without the allowed ones */
	for (int b = 0; b < 32; b++)
		for (int c = 0; c < 32; c++)
			for (uint64_t extra = 0; extra <= 0x20008; extra += 0x20008) {
				uint64_t v = (UINT64_C(1) << b) | (UINT64_C(1) << c) | extra;
				assert_int_equal(ns_seccomp_personality_denied(v), intended(v));
				assert_int_equal(ns_seccomp_personality_denied(~v & 0xffffffff), intended(~v & 0xffffffff));
			}
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		assert_int_equal(ns_seccomp_personality_denied(x), intended(x));
	}
}

static void test_build(void **state)
{
	(void)state;
	unsigned last_len = 0;
	for (unsigned f = 0; f < NS_SC_N_PROGRAMS; f++) {
		struct sock_fprog prog = {0};
		pd_err err = {0};
		assert_int_equal(ns_seccomp_build(f, &prog, &err), 0);
		assert_true(prog.len > 10 && prog.len < 4096);
		assert_non_null(prog.filter);
		/* each program compiled at build time is the table as it is now */
		struct sock_fprog built;
		ns_seccomp_program(f, &built);
		assert_int_equal(built.len, prog.len);
		assert_memory_equal(built.filter, prog.filter, prog.len * sizeof(struct sock_filter));
		assert_true(prog.len > last_len); /* the writable-bind rules are there, and only there */
		last_len = prog.len;
		ns_seccomp_free(&prog);
		assert_null(prog.filter);
	}
	ns_seccomp_free(NULL);
}

#define CHECK(n, cond) do { if (!(cond)) _exit(n); } while (0)
#define DENIED(n, call, e) do { errno = 0; long _r = (call); CHECK(n, _r == -1 && errno == (e)); } while (0)

static void load_flags(unsigned flags)
{
	struct sock_fprog prog;
	/* the program paddock loads, compiled at build time */
	ns_seccomp_program(flags, &prog);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		_exit(99);
}

static void load(void)
{
	load_flags(0);
}

/* Runs in a child with the filter loaded; exits with the number of the first failed check. */
static _noreturn_ void behave(void)
{
	load();
	DENIED(1, syscall(SYS_bpf, 0, NULL, 0), EPERM);
	DENIED(2, syscall(SYS_io_uring_setup, 1, NULL), EPERM);
	DENIED(3, syscall(SYS_unshare, 0), EPERM);
	DENIED(4, syscall(SYS_setns, -1, 0), EPERM);
	DENIED(5, syscall(SYS_clone3, NULL, 0), ENOSYS);
	long c = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (c == 0)
		_exit(0);
	CHECK(6, c == -1 && errno == EPERM);
	c = syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0);
	if (c == 0)
		_exit(0);
	CHECK(7, c == -1 && errno == EPERM);
	pid_t f = fork();
	if (f == 0)
		_exit(0);
	CHECK(8, f > 0 && waitpid(f, NULL, 0) == f);
	char ch = 'x';
	DENIED(9, syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, &ch), EPERM);
	DENIED(10, syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | (1UL << 32), &ch), EPERM);
	DENIED(11, syscall(SYS_ioctl, 0, 0x541CUL | (0xabcUL << 40), &ch), EPERM);
	CHECK(12, syscall(SYS_personality, 0xffffffffUL) >= 0);
	DENIED(13, syscall(SYS_personality, 0x0040000UL), EPERM);
	DENIED(14, syscall(SYS_personality, 0x0400000UL | (1UL << 40)), EPERM);
	CHECK(15, syscall(SYS_personality, 0UL) >= 0);
	DENIED(16, socket(AF_PACKET, SOCK_RAW, 0), EPERM);
	DENIED(17, socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMP), EPERM);
	DENIED(18, socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6), EPERM);
	DENIED(19, syscall(SYS_socket, (unsigned long)AF_PACKET | (1UL << 32), SOCK_RAW, 0), EPERM);
	DENIED(20, socket(40 /* AF_VSOCK */, SOCK_STREAM, 0), EPERM);
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CHECK(21, s >= 0);
	close(s);
	DENIED(22, syscall(SYS_mount, "none", "/", "tmpfs", 0, NULL), EPERM);
	DENIED(23, syscall(SYS_keyctl, 0, 0, 0, 0, 0), EPERM);
	DENIED(24, syscall(SYS_syslog, 3, NULL, 0), EPERM);
	DENIED(25, syscall(SYS_open_by_handle_at, -1, NULL, 0), EPERM);
	DENIED(26, syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0), EPERM);
	DENIED(27, syscall(SYS_userfaultfd, 0), EPERM);
	DENIED(28, syscall(SYS_fsopen, "tmpfs", 0), EPERM);
	DENIED(29, syscall(SYS_mount_setattr, -1, "", 0, NULL, 0), EPERM);
	CHECK(30, getpid() > 0);
	DENIED(31, syscall(467 /* open_tree_attr */, -1, "", 0, NULL, 0), EPERM);
	/* AF_ALG fails as if the kernel had no such family. Type 15 is past SOCK_MAX: a kernel
	 * (with or without AF_ALG) answers EINVAL before it looks the family up, so EAFNOSUPPORT
	 * here comes from the filter even on a host built without the crypto API. */
	DENIED(32, socket(38 /* AF_ALG */, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), EAFNOSUPPORT);
	DENIED(33, socket(38 /* AF_ALG */, 15, 0), EAFNOSUPPORT);
	DENIED(34, syscall(SYS_socket, 38UL | (1UL << 32), 15, 0), EAFNOSUPPORT);
	_exit(0);
}

static int run(void (*fn)(void))
{
	pid_t pid = fork();
	if (pid == 0)
		fn();
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

static void test_behaviour(void **state)
{
	(void)state;
	int st = run(behave);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static char setid_dir[64];

/* With a writable bind: no set-id bit by any route; other modes as before. */
static _noreturn_ void behave_setid(void)
{
	char f[128], g[128];
	snprintf(f, sizeof(f), "%s/f", setid_dir);
	snprintf(g, sizeof(g), "%s/g", setid_dir);
	load_flags(NS_SC_WRITABLE_BIND);
	int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHECK(1, fd >= 0);
	DENIED(2, chmod(f, 04755), EPERM);
	DENIED(3, chmod(f, 02755), EPERM);
	DENIED(4, fchmod(fd, 06755), EPERM);
	DENIED(5, fchmodat(AT_FDCWD, f, 04755, 0), EPERM);
	DENIED(6, syscall(452 /* fchmodat2 */, AT_FDCWD, f, 02755, 0), EPERM);
	DENIED(7, syscall(SYS_chmod, f, (1UL << 40) | 04755), EPERM);
	CHECK(8, chmod(f, 0755) == 0 && fchmod(fd, 01755) == 0);
	DENIED(9, syscall(SYS_open, g, O_WRONLY | O_CREAT, 04755), EPERM);
	DENIED(10, syscall(SYS_openat, AT_FDCWD, g, O_WRONLY | O_CREAT, 02755), EPERM);
	DENIED(11, syscall(SYS_creat, g, 04755), EPERM);
	DENIED(12, mknod(g, S_IFREG | 04755, 0), EPERM);
	DENIED(13, mknodat(AT_FDCWD, g, S_IFREG | 02755, 0), EPERM);
	struct open_how how = {.flags = O_WRONLY | O_CREAT, .mode = 04755};
	DENIED(14, syscall(SYS_openat2, AT_FDCWD, g, &how, sizeof(how)), ENOSYS);
	CHECK(15, access(g, F_OK) < 0);
	int g_fd = open(g, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
	CHECK(16, g_fd >= 0 && open(f, O_RDONLY | O_CLOEXEC) >= 0);
	struct stat st;
	CHECK(17, stat(f, &st) == 0 && (st.st_mode & (S_ISUID | S_ISGID)) == 0);
	_exit(0);
}

/* Without one (an image build installing setuid programs into its own layer): allowed. */
static _noreturn_ void behave_setid_plain(void)
{
	char f[128];
	snprintf(f, sizeof(f), "%s/p", setid_dir);
	load();
	int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 04755);
	CHECK(1, fd >= 0);
	CHECK(2, chmod(f, 06755) == 0 && fchmod(fd, 04755) == 0);
	_exit(0);
}

static void test_setid_behaviour(void **state)
{
	(void)state;
	snprintf(setid_dir, sizeof(setid_dir), "/tmp/pd-test-seccomp.XXXXXX");
	assert_non_null(mkdtemp(setid_dir));
	int st = run(behave_setid);
	int st_plain = run(behave_setid_plain);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", setid_dir);
	assert_int_equal(system(cmd), 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(WIFEXITED(st_plain));
	assert_int_equal(WEXITSTATUS(st_plain), 0);
}

static _noreturn_ void x32_call(void)
{
	load();
	syscall(0x40000000 | SYS_getpid);
	_exit(0);
}

static _noreturn_ void i386_getpid(bool filtered)
{
	/* the child inherits cmocka's SIGSEGV handler, which would turn the death of a kernel
	 * without IA32 emulation (no int 0x80 entry: SIGSEGV) into an ordinary exit */
	signal(SIGSEGV, SIG_DFL);
	if (filtered)
		load();
	int r;
	__asm__ volatile("int $0x80" : "=a"(r) : "a"(20) : "memory"); /* i386 getpid */
	_exit(0);
}

static _noreturn_ void i386_call(void)
{
	i386_getpid(true);
}

static _noreturn_ void i386_call_unfiltered(void)
{
	i386_getpid(false);
}

static void test_other_archs_killed(void **state)
{
	(void)state;
	int st = run(x32_call);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
	/* a kernel without IA32 emulation has no int 0x80 entry at all (SIGSEGV without any
	 * filter): then there is nothing for the filter to kill; else it must be SIGSYS */
	int bare = run(i386_call_unfiltered);
	bool no_ia32 = WIFSIGNALED(bare) && WTERMSIG(bare) == SIGSEGV;
	st = run(i386_call);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), no_ia32 ? SIGSEGV : SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_mount_api_complete),
		cmocka_unit_test(test_personality_expansion),
		cmocka_unit_test(test_build),
		cmocka_unit_test(test_behaviour),
		cmocka_unit_test(test_setid_rules_complete),
		cmocka_unit_test(test_setid_behaviour),
		cmocka_unit_test(test_other_archs_killed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
