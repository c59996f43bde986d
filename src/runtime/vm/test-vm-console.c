/* test-vm-console.c — sanitised console tails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail),
		cmocka_unit_test(test_sanitise),
		cmocka_unit_test(test_explain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
