/* test-vm-console.c — sanitised console tails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "util/fdio.h"

#include "runtime/vm/vm_console.h"

static void check(const char *in, unsigned lines, size_t bytes, const char *want)
{
	char *out = vm_console_tail(in, strlen(in), lines, bytes);
	assert_string_equal(out, want);
	free(out);
}

static void test_tail(void **state)
{
	check("a\nb\nc\nd\n", 2, 100, "c\nd");
	check("a\nb\n", 5, 100, "a\nb");
	check("one line", 3, 100, "one line");
	check("", 3, 100, "");
	check("\n\n\n", 3, 100, "");
	check("abcdefghij", 3, 4, "ghij"); /* byte cap */
	check("x\r\ny\r\n", 5, 100, "x\ny");
}

static void test_sanitise(void **state)
{
	/* escape sequences, bells, high bytes never reach a terminal */
	check("ok\n\x1b]0;pwned\x07\x1b[2J\xff\xfe end\n", 5, 100, "ok\n?]0;pwned??[2J?? end");
	check("tab\there", 1, 100, "tab?here");
}

static void test_explain(void **state)
{
	const char *log = "[ 1.0] boot\npaddock-init: vmboot: cannot mount ext4 on /newroot: Invalid argument\n"
			  "[ 1.1] noise\n[ 1.2] Kernel panic - not syncing: Attempted to kill init!\n[ 1.3] RIP: 0033\n";
	char *out = vm_console_explain(log, strlen(log), 5, 1000);
	assert_string_equal(out, "paddock-init: vmboot: cannot mount ext4 on /newroot: Invalid argument\n"
				 "[ 1.2] Kernel panic - not syncing: Attempted to kill init!");
	free(out);
	out = vm_console_explain("a\nb\n", 4, 1, 100); /* nothing explains: the tail */
	assert_string_equal(out, "b");
	free(out);
	const char *esc = "x paddock-init: \x1b[31m";
	out = vm_console_explain(esc, strlen(esc), 1, 100); /* no final newline, sanitised */
	assert_string_equal(out, "x paddock-init: ?[31m");
	free(out);
}

static size_t file_size(const char *dir, const char *name)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	return stat(p, &st) == 0 ? (size_t)st.st_size : 0;
}

/* A flood through the copying thread: the two files never hold more than the cap, the newest
 * bytes are kept, and reading them back is sanitised. */
static void test_flood_is_capped(void **state)
{
	char dir[] = "/tmp/pd-vmcon.XXXXXX";
	assert_non_null(mkdtemp(dir));
	int sp[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
	pthread_t t;
	assert_int_equal(vm_console_start(sp[0], dir, &t, NULL), 0);
	char buf[4096];
	memset(buf, 'x', sizeof(buf));
	buf[sizeof(buf) - 1] = '\n';
	size_t total = 8 * VM_CONSOLE_CAP;
	for (size_t n = 0; n < total; n += sizeof(buf))
		assert_int_equal(fd_write_all(sp[1], buf, sizeof(buf)), 0);
	const char tail[] = "last line \x1b[2J\n";
	assert_int_equal(fd_write_all(sp[1], tail, strlen(tail)), 0);
	close(sp[1]);
	vm_console_join(t);
	size_t a = file_size(dir, VM_CONSOLE_FILE), b = file_size(dir, VM_CONSOLE_OLD);
	assert_true(a + b <= VM_CONSOLE_CAP);
	assert_true(a + b >= VM_CONSOLE_CAP / 2);
	char *text = vm_console_read(dir);
	size_t n = strlen(text);
	assert_true(n > 14);
	assert_string_equal(text + n - 14, "last line ?[2J"); /* the newest bytes are kept */
	assert_null(strchr(text, '\x1b'));
	free(text);
	_cleanup_free_ char *cmd = xasprintf("rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_sanitise),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_flood_is_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
