/* test-blob.c — the embedded paddock-init: an ELF, handed out as a sealed, executable memfd. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "guest/blob.h"

static void test_data(void **state)
{
	size_t len;
	const unsigned char *p = guest_init_data(&len);
	assert_true(len > 4096);
	assert_memory_equal(p, "\177ELF", 4);
}

static void test_memfd_sealed(void **state)
{
	pd_err err = {0};
	size_t len;
	const unsigned char *p = guest_init_data(&len);
	_cleanup_close_ int fd = guest_init_memfd(&err);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal((size_t)st.st_size, len);
	assert_int_equal(fcntl(fd, F_GET_SEALS),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
	_cleanup_free_ unsigned char *back = xmalloc(len);
	assert_int_equal(pread(fd, back, len, 0), (ssize_t)len);
	assert_memory_equal(back, p, len);
	/* the seals hold */
	assert_int_equal(pwrite(fd, "x", 1, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 1), -1);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, 0), -1);
}

static void test_memfd_executes(void **state)
{
	/* started by hand (no contract in its environment) it refuses with status 1 */
	_cleanup_close_ int fd = guest_init_memfd(NULL);
	assert_true(fd >= 0);
	pid_t pid = fork();
	if (pid == 0) {
		int nul = open("/dev/null", O_WRONLY);
		dup2(nul, STDERR_FILENO);
		char *argv[] = {"paddock-init", NULL}, *envp[] = {NULL};
		syscall(SYS_execveat, fd, "", argv, envp, AT_EMPTY_PATH);
		_exit(99);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_data),
		cmocka_unit_test(test_memfd_sealed),
		cmocka_unit_test(test_memfd_executes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
