/* test-fdio.c — whole-file reads of files whose size the kernel does not report. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "util/fdio.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_sysctl),
		cmocka_unit_test(test_too_big),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
