/* test-landlock.c — Landlock access masks per ABI and the writable directory list, plus a
 * real restriction in a child process when the kernel has Landlock. */
#include <fcntl.h>
#include <linux/landlock.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "runtime/ns/ns_landlock.h"

#define READS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_EXECUTE)

static void test_masks(void **state)
{
	(void)state;
	assert_int_equal(ns_landlock_fs_handled(0), 0);
	assert_int_equal(ns_landlock_fs_handled(-1), 0);
	uint64_t prev = 0;
	for (int abi = 1; abi <= 8; abi++) {
		uint64_t m = ns_landlock_fs_handled(abi);
		assert_true((m & prev) == prev);      /* only grows */
		assert_int_equal(m & READS, 0);       /* reads and exec are never handled */
		assert_true(m & LANDLOCK_ACCESS_FS_WRITE_FILE);
		assert_true(m & LANDLOCK_ACCESS_FS_MAKE_REG);
		assert_true(m & LANDLOCK_ACCESS_FS_REMOVE_FILE);
		assert_true((ns_landlock_fs_file_rights(abi) & ~m) == 0);
		assert_true(ns_landlock_fs_file_rights(abi) & LANDLOCK_ACCESS_FS_WRITE_FILE);
		assert_false(ns_landlock_fs_file_rights(abi) & LANDLOCK_ACCESS_FS_MAKE_DIR);
		prev = m;
	}
	assert_int_equal(ns_landlock_fs_handled(1), (1ULL << 13) - 1 - READS);
	assert_true(ns_landlock_fs_handled(2) & (1ULL << 13));   /* REFER */
	assert_true(ns_landlock_fs_handled(3) & (1ULL << 14));   /* TRUNCATE */
	assert_false(ns_landlock_fs_handled(4) & (1ULL << 15));
	assert_true(ns_landlock_fs_handled(5) & (1ULL << 15));   /* IOCTL_DEV */
	assert_int_equal(ns_landlock_scoped(5), 0);
	assert_int_equal(ns_landlock_scoped(6), 3);
}

static void test_writable_dirs(void **state)
{
	(void)state;
	const char *const *d = ns_landlock_writable_dirs();
	size_t n = 0;
	for (; d[n]; n++) {
		assert_true(d[n][0] == '/' && d[n][1] != '\0');
		assert_false(startswith(d[n], "/proc") || startswith(d[n], "/sys"));
	}
	assert_int_equal(n, 12);
}

/* A plan as the runtime builds it, restricting writes to a temporary directory. */
static void test_apply(void **state)
{
	(void)state;
	int abi = ns_landlock_abi();
	if (abi < 1)
		skip();
	char dir[] = "/tmp/ns-landlock-XXXXXX";
	assert_non_null(mkdtemp(dir));
	struct box_bind b = {.host = dir, .box = dir, .readonly = false};
	struct ns_plan p = {.landlock_abi = abi, .ll_handled_fs = ns_landlock_fs_handled(abi),
			    .ll_scoped = ns_landlock_scoped(abi), .binds = &b, .n_binds = 1};
	pid_t pid = fork();
	if (pid == 0) {
		struct ns_report rep;
		char path[64];
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || ns_landlock_apply(&p, &rep) < 0)
			_exit(10);
		snprintf(path, sizeof(path), "%s/ok", dir);
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			_exit(11);
		close(fd);
		/* outside every allowed directory: denied */
		fd = open("/ns-landlock-test-denied", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
		_exit(fd < 0 && errno == EACCES ? 0 : 12);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char path[64];
	snprintf(path, sizeof(path), "%s/ok", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(access("/ns-landlock-test-denied", F_OK), -1);
}

static void test_injected(void **state)
{
	(void)state;
	struct ns_plan p = {.landlock_abi = 1, .fail_mask = 1u << NS_LAYER_LANDLOCK};
	struct ns_report rep;
	assert_int_equal(ns_landlock_apply(&p, &rep), -1);
	assert_int_equal(rep.layer, NS_LAYER_LANDLOCK);
	assert_int_equal(rep.code, EPERM);
	p = (struct ns_plan){.landlock_abi = 0};
	assert_int_equal(ns_landlock_apply(&p, &rep), -1);
	assert_int_equal(rep.code, EOPNOTSUPP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_masks),
		cmocka_unit_test(test_writable_dirs),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_injected),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
