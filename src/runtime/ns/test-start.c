/* test-start.c — integration test: real boxes around a stub init (and around paddock-init
 * when it is built), as root or as an ordinary user. Asserts what the box looks like from
 * inside, that each layer's failure refuses the start and leaves nothing behind, and that
 * kill reaches every process. Needs user namespaces, Landlock and a usable cgroup. */
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "runtime/ns/ns.h"
#include "runtime/ns/ns_cgroup.h"
#include "runtime/ns/ns_idmap.h"
#include "runtime/ns/ns_probe.h"
#include "util/fdio.h"
#ifdef NS_TEST_REAL_INIT
#include "proto/proto.h"
#endif

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

static int stub_fd = -1;
static bool root_ok;         /* boxes of this caller have a root user */
static char skip_reason[1024];

static int load_stub(void)
{
	_cleanup_free_ char *data = NULL;
	size_t len;
	if (read_file_at(AT_FDCWD, NS_STUB_INIT, 64u << 20, &data, &len) < 0)
		return -1;
	int fd = memfd_create("ns-stub-init", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd < 0)
		fd = memfd_create("ns-stub-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || fd_write_all(fd, data, len) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return -1;
	return fd;
}

static struct box_config config(const char *name)
{
	return (struct box_config){.name = (char *)name, .memory = 512u << 20, .pids = 256, .disk = 64u << 20};
}

/* The box a test has running, stopped by the teardown when an assertion fails. */
static struct box_handle live_box;
static bool live;

static int start(const struct box_config *cfg, struct box_handle *h, pd_err *err)
{
	*err = (pd_err){0};
	int r = ns_start_with_init(cfg, stub_fd, h, err);
	if (r == 0 && !live) {
		live_box = *h;
		live = true;
	}
	return r;
}

/* Sends one command to the stub and returns its answer (without the final ".\n"). */
static char *ask(struct box_handle *h, const char *cmd)
{
	size_t cap = 1 << 16, len = 0;
	char *buf = xmalloc(cap);
	assert_int_equal(fd_write_all(h->ctl_fd, cmd, strlen(cmd)), 0);
	assert_int_equal(fd_write_all(h->ctl_fd, "\n", 1), 0);
	for (;;) {
		struct pollfd p = {.fd = h->ctl_fd, .events = POLLIN};
		assert_int_equal(poll(&p, 1, 20000), 1);
		if (len + 4096 > cap)
			buf = xrealloc(buf, cap *= 2);
		ssize_t n = read(h->ctl_fd, buf + len, 4096);
		assert_true(n > 0);
		len += (size_t)n;
		buf[len] = '\0';
		if ((len == 2 && streq(buf, ".\n")) || (len > 2 && streq(buf + len - 3, "\n.\n"))) {
			buf[len - 2] = '\0';
			return buf;
		}
	}
}

/* Starts a box that must start. */
static void must_start(const struct box_config *cfg, struct box_handle *h)
{
	pd_err err;
	if (start(cfg, h, &err) < 0)
		fail_msg("start %s: %s", cfg->name, err.msg);
}

static void expect(struct box_handle *h, const char *cmd, const char *want)
{
	_cleanup_free_ char *got = ask(h, cmd);
	if (!streq(got, want))
		fail_msg("%s: got \"%s\", want \"%s\"", cmd, got, want);
}

static void expect_has(struct box_handle *h, const char *cmd, const char *want)
{
	_cleanup_free_ char *got = ask(h, cmd);
	if (!strstr(got, want))
		fail_msg("%s: \"%s\" lacks \"%s\"", cmd, got, want);
}

static void expect_lacks(struct box_handle *h, const char *cmd, const char *bad)
{
	_cleanup_free_ char *got = ask(h, cmd);
	if (strstr(got, bad))
		fail_msg("%s: \"%s\" has \"%s\"", cmd, got, bad);
}

static void stop(struct box_handle *h)
{
	siginfo_t si;
	if (live && live_box.pid == h->pid)
		live = false;
	runtime_ns.kill(h);
	runtime_ns.kill(h); /* safe twice */
	assert_int_equal(waitid((idtype_t)P_PIDFD, (id_t)h->pidfd, &si, WEXITED), 0);
	runtime_ns.cleanup(h);
	assert_int_equal(h->pidfd, -1);
	assert_null(h->priv);
	close(h->ctl_fd);
}

/* The box cgroup directory (for the memory controller on v1) of box `name`, or NULL. */
static char *box_cgroup(const char *name, const char *file)
{
	struct ns_cgroup *cg = NULL;
	if (ns_cgroup_locate(false, &cg, NULL) < 0)
		return NULL;
	char *p = xasprintf("%s/box-%s%s%s", cg->dirs[0] ? cg->dirs[0] : cg->dirs[NS_CG_PIDS], name, file ? "/" : "", file ? file : "");
	ns_cgroup_free(cg);
	return p;
}

/* Asserts the value of a limit knob of box `name` (file names per cgroup version). */
static void assert_knob(const char *name, enum ns_cg_ctrl c, const char *v1_file, const char *v2_file, const char *want_v1,
			const char *want_v2)
{
	struct ns_cgroup *cg = NULL;
	_cleanup_free_ char *text = NULL;
	assert_int_equal(ns_cgroup_locate(true, &cg, NULL), 0);
	bool v2 = cg->version == 2;
	_cleanup_free_ char *path = xasprintf("%s/box-%s/%s", cg->dirs[v2 ? 0 : c], name, v2 ? v2_file : v1_file);
	ns_cgroup_free(cg);
	assert_int_equal(read_file_at(AT_FDCWD, path, 4096, &text, NULL), 0);
	assert_string_equal(text, v2 ? want_v2 : want_v1);
}

static void assert_no_trace(const char *name)
{
	_cleanup_free_ char *dir = box_cgroup(name, NULL);
	assert_non_null(dir);
	assert_int_equal(access(dir, F_OK), -1);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void test_basic(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-basic");
	struct box_handle h;
	cfg.cpus_milli = 500;
	must_start(&cfg, &h);
	assert_true(h.pid > 0 && h.pidfd >= 0 && h.ctl_fd >= 0 && h.priv);
	assert_true(fcntl(h.ctl_fd, F_GETFD) & FD_CLOEXEC);
	if (root_ok)
		expect(&h, "id", "uid 0 gid 0 groups 0 pid 1 ppid 0\n");
	else
		expect_has(&h, "id", "uid 1000 gid 1000 ");
	_cleanup_free_ char *env = ask(&h, "env");
	_cleanup_free_ char *want_env = xasprintf("PADDOCK_CTL_FD=3\nPADDOCK_AGENT_UID=1000\nPADDOCK_AGENT_GID=1000\n"
						  "PADDOCK_ROOT_OK=%d\nPADDOCK_HOSTNAME=pd-basic\n", root_ok);
	assert_string_equal(env, want_env);
	expect(&h, "fds", "0\n1\n2\n3\n4\n");
	expect_has(&h, "cat /proc/self/status", "NoNewPrivs:\t1\nSeccomp:\t2\n");
	expect_has(&h, "cat /proc/self/status", "CapInh:\t0000000000000000\n");
	expect_has(&h, "cat /proc/self/status", root_ok ? "CapEff:\t00000000000001e1\n" : "CapEff:\t0000000000000000\n");
	expect_has(&h, "cat /proc/self/status", "CapBnd:\t00000000000001e1\nCapAmb:\t0000000000000000\n");
	expect(&h, "cat /etc/hostname", "pd-basic\n");
	expect(&h, "sh hostname", "pd-basic\nexit 0\n");
	expect_has(&h, "cat /etc/passwd", "agent:x:1000:1000:agent:/home/agent:");
	expect(&h, "ls /home", "agent\n");
	expect_has(&h, "cat /proc/self/cgroup", "::/\n");
	expect_lacks(&h, "cat /proc/self/cgroup", "paddock");
	expect_lacks(&h, "cat /proc/self/mountinfo", "oldroot");
	expect_has(&h, "cat /proc/self/mountinfo", " /usr rw,nosuid,nodev");
	expect_has(&h, "sh ls /usr/bin/sh && echo ok", "ok\nexit 0\n");
	expect(&h, "sh tr '\\0' ' ' < /proc/1/cmdline", "paddock-init exit 0\n");
	expect(&h, "ls /sys", "");
	expect_lacks(&h, "ls /", "oldroot");
	_cleanup_free_ char *top = ask(&h, "ls /");
	static const char *const never[] = {"boot", "mnt", "media", "snap", "lower", "upper", "work", "box", "farm", "old_root"};
	for (size_t i = 0; i < ARRAY_SIZE(never); i++) {
		_cleanup_free_ char *line = xasprintf("\n%s\n", never[i]);
		_cleanup_free_ char *all = xasprintf("\n%s", top);
		assert_null(strstr(all, line));
	}
	/* limits on the host side */
	assert_knob("pd-basic", NS_CG_MEMORY, "memory.limit_in_bytes", "memory.max", "536870912\n", "536870912\n");
	assert_knob("pd-basic", NS_CG_PIDS, "pids.max", "pids.max", "256\n", "256\n");
	assert_knob("pd-basic", NS_CG_CPU, "cpu.cfs_quota_us", "cpu.max", "50000\n", "50000 100000\n");
	_cleanup_free_ char *procs = box_cgroup("pd-basic", "cgroup.procs");
	_cleanup_free_ char *list = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, procs, 65536, &list, NULL), 0);
	_cleanup_free_ char *pid = xasprintf("%d\n", (int)h.pid);
	assert_non_null(strstr(list, pid));
	stop(&h);
	assert_no_trace("pd-basic");
}

static void test_confinement(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-confine");
	struct box_handle h;
	must_start(&cfg, &h);
	/* seccomp */
	expect(&h, "probe mount", "errno 1\n");
	expect(&h, "probe unshare", "errno 1\n");
	expect(&h, "probe clone-newuser", "errno 1\n");
	expect(&h, "probe clone3", "errno 38\n");
	expect(&h, "probe io_uring", "errno 1\n");
	expect(&h, "probe bpf", "errno 1\n");
	expect(&h, "probe tiocsti", "errno 1\n");
	expect(&h, "probe af_packet", "errno 1\n");
	expect(&h, "probe chroot", "errno 1\n");
	expect(&h, "probe umount-proc-mask", "errno 1\n");
	expect(&h, "probe x32", "signal 31\n");
	_cleanup_free_ char *i386 = ask(&h, "probe i386"); /* 11: no IA32 emulation in the kernel */
	assert_true(streq(i386, "signal 31\n") || streq(i386, "signal 11\n"));
	/* no CAP_SYS_ADMIN over the UTS namespace */
	expect(&h, "probe sethostname", "errno 1\n");
	/* Landlock: writable places work, the rest is denied */
	expect(&h, "write /tmp/a", "ok 2\n");
	expect(&h, "write /var/tmp/a", "ok 2\n");
	expect(&h, "write /etc/paddock-test", "ok 2\n");
	expect(&h, "write /usr/paddock-test", "ok 2\n");
	expect(&h, "write /paddock-test", "errno 13\n");
	expect(&h, "mkdir /paddock-test", "errno 13\n");
	expect(&h, "write /sys/x", "errno 13\n");
	_cleanup_free_ char *sysctl = ask(&h, "write /proc/sys/kernel/hostname");
	assert_true(streq(sysctl, "errno 13\n") || streq(sysctl, "errno 30\n"));
	_cleanup_free_ char *sysrq = ask(&h, "write /proc/sysrq-trigger"); /* absent without MAGIC_SYSRQ */
	assert_true(streq(sysrq, "errno 13\n") || streq(sysrq, "errno 30\n") || streq(sysrq, "errno 2\n"));
	_cleanup_free_ char *chm = ask(&h, "chmod /dev/null");
	assert_true(streq(chm, "errno 1\n") || streq(chm, "errno 30\n"));
	_cleanup_free_ char *kcore = ask(&h, "cat /proc/kcore"); /* masked, or absent */
	assert_true(streq(kcore, "") || streq(kcore, "error 2\n"));
	expect(&h, "cat /proc/keys", "");
	expect(&h, "ls /proc/acpi", "");
	expect(&h, "sh echo hi > /dev/null && head -c 4 /dev/zero | od -An -tx1", " 00 00 00 00\nexit 0\n");
	if (root_ok) {
		expect(&h, "agent-sh id -u && echo hi > ~agent/x && cat /home/agent/x", "1000\nhi\nexit 0\n");
		expect(&h, "agent-sh echo no > /root/x", "sh: 1: cannot create /root/x: Permission denied\nexit 2\n");
	}
	/* nothing reached the host */
	assert_int_equal(access("/usr/paddock-test", F_OK), -1);
	assert_int_equal(access("/etc/paddock-test", F_OK), -1);
	assert_int_equal(access("/paddock-test", F_OK), -1);
	/* rlimits */
	struct rlimit nofile;
	getrlimit(RLIMIT_NOFILE, &nofile);
	unsigned long long nf = nofile.rlim_max < 65536 ? nofile.rlim_max : 65536;
	_cleanup_free_ char *want = xasprintf("core 0 0\nnofile %llu %llu\nnproc 256 256\nfsize %llu %llu\n", nf, nf,
					      (unsigned long long)(64u << 20), (unsigned long long)(64u << 20));
	expect(&h, "rlimits", want);
	stop(&h);
	assert_no_trace("pd-confine");
}

static void test_disk_fill(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-fill");
	struct box_handle h;
	cfg.disk = 16u << 20;
	must_start(&cfg, &h);
	_cleanup_free_ char *got = ask(&h, "fill /tmp/big");
	long long bytes = 0;
	int e = 0;
	assert_int_equal(sscanf(got, "bytes %lld errno %d", &bytes, &e), 2);
	assert_true(bytes <= (16 << 20));
	assert_true(e == ENOSPC || e == EFBIG);
	free(got);
	got = ask(&h, "fill /usr/big"); /* the overlay upper is on the same tmpfs */
	assert_int_equal(sscanf(got, "bytes %lld errno %d", &bytes, &e), 2);
	assert_true(bytes <= (16 << 20) && (e == ENOSPC || e == EFBIG));
	stop(&h);
}

static void test_limits_enforced(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-limits");
	struct box_handle h;
	cfg.memory = 128u << 20;
	cfg.pids = 32;
	must_start(&cfg, &h);
	/* tail keeps the whole "line" in memory: the memory cgroup kills it */
	expect_has(&h, "sh head -c 300M /dev/zero | tail -n 1 | wc -c", "Killed");
	expect_has(&h, "sh i=0; while [ $i -lt 64 ]; do sleep 5 & i=$((i+1)); done", "Cannot fork");
	stop(&h);
}

static void test_daemon_killed(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-daemon");
	struct box_handle h;
	must_start(&cfg, &h);
	expect_has(&h, "daemon", "daemon ");
	_cleanup_free_ char *procs = box_cgroup("pd-daemon", "cgroup.procs");
	_cleanup_free_ char *list = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, procs, 65536, &list, NULL), 0);
	int n = 0;
	pid_t pids[8];
	for (char *save = NULL, *l = strtok_r(list, "\n", &save); l && n < 8; l = strtok_r(NULL, "\n", &save))
		pids[n++] = atoi(l);
	assert_true(n >= 2);
	stop(&h);
	for (int i = 0; i < n; i++)
		assert_true(kill(pids[i], 0) < 0 && errno == ESRCH);
	assert_no_trace("pd-daemon");
}

static void test_binds(void **state)
{
	(void)state;
	char rw[] = "/tmp/ns-rw-XXXXXX", ro[] = "/tmp/ns-ro-XXXXXX";
	assert_non_null(mkdtemp(rw));
	assert_non_null(mkdtemp(ro));
	assert_int_equal(chmod(rw, 0777), 0);
	assert_int_equal(chmod(ro, 0755), 0);
	_cleanup_free_ char *hello = xasprintf("%s/hello", ro);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, hello, "hello\n", 6, 0644), 0);
	struct box_bind binds[] = {{rw, "/workspace/rw", false}, {ro, "/data/ro", true}};
	struct box_config cfg = config("pd-binds");
	struct box_handle h;
	cfg.binds = binds;
	cfg.n_binds = 2;
	must_start(&cfg, &h);
	expect(&h, "cat /data/ro/hello", "hello\n");
	expect(&h, "write /data/ro/x", "errno 30\n");
	expect_has(&h, "cat /proc/self/mountinfo", " /data/ro ro,nosuid,nodev");
	if (geteuid() == 0) /* host root's writable bind is the parent's idmapped tree */
		expect_has(&h, "cat /proc/self/mountinfo", ",idmapped - ");
	expect(&h, root_ok ? "agent-sh echo made > /workspace/rw/new" : "sh echo made > /workspace/rw/new", "exit 0\n");
	_cleanup_free_ char *made = xasprintf("%s/new", rw);
	struct stat st;
	assert_int_equal(stat(made, &st), 0);
	/* the caller's: an ordinary user's agent is the user, root's writes through an idmapped bind */
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_gid, getegid());
	stop(&h);
	unlink(made);
	unlink(hello);
	rmdir(rw);
	rmdir(ro);
}

static void test_bind_symlink_refused(void **state)
{
	(void)state;
	char dir[] = "/tmp/ns-link-XXXXXX";
	assert_non_null(mkdtemp(dir));
	_cleanup_free_ char *link = xasprintf("%s/l", dir);
	assert_int_equal(symlink("/etc", link), 0);
	struct box_bind b = {link, "/data/x", true};
	struct box_config cfg = config("pd-link");
	struct box_handle h;
	pd_err err;
	cfg.binds = &b;
	cfg.n_binds = 1;
	assert_true(start(&cfg, &h, &err) < 0);
	assert_true(startswith(err.msg, "mount layer: bind source"));
	assert_no_trace("pd-link");
	b.host = dir;
	b.box = "/proc/x";
	assert_int_equal(start(&cfg, &h, &err), -EINVAL);
	unlink(link);
	rmdir(dir);
}

static void test_fail_layers(void **state)
{
	(void)state;
	static const char *const layers[] = {"cgroup", "userns", "namespaces", "mount", "pivot", "fds",
					     "nnp", "rlimit", "caps", "landlock", "seccomp"};
	setenv("PADDOCK_TESTING", "1", 1);
	for (size_t i = 0; i < ARRAY_SIZE(layers); i++) {
		struct box_config cfg = config("pd-fail");
		struct box_handle h = {0};
		pd_err err;
		cfg.test_fail_layer = layers[i];
		assert_true(start(&cfg, &h, &err) < 0);
		_cleanup_free_ char *prefix = xasprintf("%s layer: ", layers[i]);
		if (!startswith(err.msg, prefix))
			fail_msg("%s: %s", layers[i], err.msg);
		assert_non_null(strstr(err.msg, "refusing to start"));
		assert_int_equal(err.code, EPERM);
		assert_no_trace("pd-fail");
	}
	unsetenv("PADDOCK_TESTING");
	/* without PADDOCK_TESTING=1 the request is ignored */
	struct box_config cfg = config("pd-fail");
	struct box_handle h;
	cfg.test_fail_layer = "landlock";
	must_start(&cfg, &h);
	stop(&h);
}

static void test_busy_name(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-busy");
	struct box_handle h, h2;
	pd_err err;
	must_start(&cfg, &h);
	assert_true(start(&cfg, &h2, &err) < 0);
	assert_true(startswith(err.msg, "cgroup layer: "));
	assert_non_null(strstr(err.msg, "in use"));
	expect(&h, "probe kill-1", "errno 3\n"); /* nothing but PID 1 in the pid namespace */
	stop(&h);
	assert_int_equal(start(&(struct box_config){.name = "bad/name"}, &h, &err), -EINVAL);
}

#ifdef NS_TEST_REAL_INIT
static void test_real_init(void **state)
{
	(void)state;
	struct box_config cfg = config("pd-real");
	struct box_handle h;
	pd_err err = {0};
	if (runtime_ns.start(&cfg, &h, &err) < 0)
		fail_msg("start: %s", err.msg);
	_cleanup_free_ uint8_t *buf = xmalloc(PROTO_HDR_SIZE + PROTO_MAX_PAYLOAD);
	struct proto_frame f;
	uint16_t major, minor;
	struct pollfd p = {.fd = h.ctl_fd, .events = POLLIN};
	assert_int_equal(poll(&p, 1, 10000), 1);
	assert_int_equal(proto_recv(h.ctl_fd, buf, &f), 0);
	assert_int_equal(proto_decode_hello(&f, &major, &minor), 0);
	assert_int_equal(major, PROTO_VERSION_MAJOR);
	stop(&h);
}
#endif

static int setup_group(void **state)
{
	(void)state;
	struct ns_probe_result pr;
	if (ns_probe(&pr) < 0) {
		snprintf(skip_reason, sizeof(skip_reason), "host lacks a layer (ns 0x%x overlay %d landlock %d seccomp %d cgroup %d: %s)",
			 pr.namespaces, pr.overlay_userns, pr.landlock_abi, pr.seccomp_filter, pr.cgroup_ok, pr.cgroup_error);
		return 0;
	}
	struct ns_idmaps m;
	if (ns_idmaps_for_caller(&m, NULL) < 0) {
		snprintf(skip_reason, sizeof(skip_reason), "no id maps for this caller");
		return 0;
	}
	root_ok = m.root_ok;
	stub_fd = load_stub();
	return stub_fd < 0 ? -1 : 0;
}

static int stop_leftover(void **state)
{
	(void)state;
	if (live) {
		siginfo_t si;
		live = false;
		runtime_ns.kill(&live_box);
		waitid((idtype_t)P_PIDFD, (id_t)live_box.pidfd, &si, WEXITED);
		runtime_ns.cleanup(&live_box);
		close(live_box.ctl_fd);
	}
	return 0;
}

static int skip_if_unsupported(void **state)
{
	(void)state;
	if (skip_reason[0]) {
		print_message("skipped: %s\n", skip_reason);
		skip();
	}
	return 0;
}

/* `test-ns-start --setup-user NAME` (as root) delegates cgroups to NAME, as
 * `paddock system setup --user NAME` will. */
static int setup_user(const char *name)
{
	struct passwd *pw = getpwnam(name);
	pd_err err = {0};
	if (!pw || ns_cgroup_setup_user(pw->pw_uid, pw->pw_gid, &err) < 0) {
		fprintf(stderr, "setup-user %s: %s\n", name, pw ? err.msg : "no such user");
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && streq(argv[1], "--setup-user"))
		return setup_user(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_basic, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_confinement, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_disk_fill, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_limits_enforced, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_daemon_killed, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_binds, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_bind_symlink_refused, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_fail_layers, skip_if_unsupported, stop_leftover),
		cmocka_unit_test_setup_teardown(test_busy_name, skip_if_unsupported, stop_leftover),
#ifdef NS_TEST_REAL_INIT
		cmocka_unit_test_setup_teardown(test_real_init, skip_if_unsupported, stop_leftover),
#endif
	};
	return cmocka_run_group_tests(tests, setup_group, NULL);
}
