/* test-fdio.c — whole-file reads of files whose size the kernel does not report. */
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/fdio.h"
#include "util/error.h"

/* A sysctl file says size 0 and answers any read at a non-zero offset with EOF: the reader
 * must take it in one read (a 1-byte first read once turned cap_last_cap "40" into "4"). */
static void test_proc_sysctl(void **state)
{
	(void)state;
	char want[64] = {0};
	int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		skip();
	ssize_t n = read(fd, want, sizeof(want) - 1);
	close(fd);
	assert_true(n > 1);
	_cleanup_free_ char *got = NULL;
	size_t len = 0;
	assert_int_equal(read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &got, &len), 0);
	assert_int_equal(len, (size_t)n);
	assert_string_equal(got, want);
}

static void test_too_big(void **state)
{
	(void)state;
	_cleanup_free_ char *got = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, "/proc/self/status", 8, &got, NULL), -EFBIG);
	assert_null(got);
}

/* what pd_err_print writes for msg */
static char *printed(const char *msg)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(stderr);
	int saved = dup(2);
	dup2(p[1], 2);
	close(p[1]);
	pd_err e = {.code = EINVAL};
	snprintf(e.msg, sizeof(e.msg), "%s", msg);
	pd_err_print(&e);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	char *buf = NULL;
	size_t len;
	assert_int_equal(read_fd_all(p[0], 4096, &buf, &len), 0);
	close(p[0]);
	return buf;
}

/* names from untrusted places reach the terminal escaped: controls, bidi and line controls,
 * bytes that are not UTF-8; well-formed text passes as it is */
/* rm_rf_at removes a tree but never enters a mount point, the named entry itself included
 * (in a private mount namespace of a child, as root; skipped as an ordinary user) */
static void test_rm_rf_at_stops_at_mounts(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd-rmrf-XXXXXX";
	assert_non_null(mkdtemp(dir));
	pid_t pid = fork();
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			_exit(77);
		_cleanup_free_ char *m = xasprintf("%s/top", dir), *keep = xasprintf("%s/top/keep", dir);
		_cleanup_free_ char *sub = xasprintf("%s/tree/sub", dir), *keep2 = xasprintf("%s/tree/sub/keep", dir);
		_cleanup_free_ char *plain = xasprintf("%s/tree/plain/f", dir);
		if (mkdir_p(m, 0755) < 0 || mkdir_p(sub, 0755) < 0 || mount("t", m, "tmpfs", 0, NULL) < 0 ||
		    mount("t", sub, "tmpfs", 0, NULL) < 0 || write_file_atomic_at(AT_FDCWD, keep, "k", 1, 0644) < 0 ||
		    write_file_atomic_at(AT_FDCWD, keep2, "k", 1, 0644) < 0 || mkdir_p(plain, 0755) < 0)
			_exit(10);
		_cleanup_close_ int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rm_rf_at(d, "top") != -EXDEV || access(keep, F_OK) < 0)
			_exit(11); /* the named entry is a mount point */
		if (rm_rf_at(d, "tree") != -EXDEV || access(keep2, F_OK) < 0)
			_exit(12); /* one below it is */
		_cleanup_free_ char *pl = xasprintf("%s/tree/plain", dir);
		if (access(pl, F_OK) == 0)
			_exit(13); /* the rest of the tree went */
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	rm_rf(dir);
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A FIFO (or a symlink) left where write_file_atomic_at puts its temp file is replaced, not
 * opened: the write neither blocks nor follows it */
static void test_atomic_write_over_planted_tmp(void **state)
{
	(void)state;
	char dir[] = "/tmp/pd-atomic-XXXXXX";
	assert_non_null(mkdtemp(dir));
	pid_t pid = fork();
	if (pid == 0) {
		alarm(5); /* a blocked open is a failure, not a hang */
		_cleanup_free_ char *f = xasprintf("%s/rec.json", dir), *t = xasprintf("%s.tmp.%d", f, (int)getpid());
		_cleanup_free_ char *victim = xasprintf("%s/victim", dir), *buf = NULL;
		if (mkfifo(t, 0600) < 0 || write_file_atomic_at(AT_FDCWD, f, "new", 3, 0644) < 0)
			_exit(10);
		if (read_file_at(AT_FDCWD, f, 64, &buf, NULL) < 0 || !streq(buf, "new") || access(t, F_OK) == 0)
			_exit(11);
		if (write_file_atomic_at(AT_FDCWD, victim, "v", 1, 0644) < 0 || symlink(victim, t) < 0 ||
		    write_file_atomic_at(AT_FDCWD, f, "two", 3, 0644) < 0)
			_exit(12);
		free(buf);
		buf = NULL;
		if (read_file_at(AT_FDCWD, victim, 64, &buf, NULL) < 0 || !streq(buf, "v"))
			_exit(13);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	rm_rf(dir);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_err_print_escapes(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain é ✓", "paddock: plain é ✓\n"},
		{"a\x1b[31mb", "paddock: a\\x1b[31mb\n"},
		{"x\xc2\x9by", "paddock: x\\xc2\\x9by\n"},           /* C1 CSI */
		{"x\xe2\x80\xaey", "paddock: x\\xe2\\x80\\xaey\n"},    /* RLO */
		{"x\xe2\x80\x8fy", "paddock: x\\xe2\\x80\\x8fy\n"},    /* RLM */
		{"x\xe2\x80\xa8y", "paddock: x\\xe2\\x80\\xa8y\n"},    /* LINE SEPARATOR */
		{"x\xd8\x9cy", "paddock: x\\xd8\\x9cy\n"},           /* ALM */
		{"x\x9by", "paddock: x\\x9by\n"},                    /* a lone C1 byte */
		{"x\xe2\x80", "paddock: x\\xe2\\x80\n"},             /* cut short */
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		_cleanup_free_ char *got = printed(cases[i].in);
		assert_string_equal(got, cases[i].out);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_sysctl),
		cmocka_unit_test(test_too_big),
		cmocka_unit_test(test_err_print_escapes),
		cmocka_unit_test(test_rm_rf_at_stops_at_mounts),
		cmocka_unit_test(test_atomic_write_over_planted_tmp),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
