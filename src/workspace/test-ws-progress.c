/* test-ws-progress.c — the progress line: bar, percentage, sizes, rate, and never a control
 * character whatever the numbers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "workspace/ws_progress.h"

static void test_format(void **state)
{
	(void)state;
	char b[160];
	ws_progress_format(b, sizeof(b), "copying the project in", 450000000, 1000000000, true, 5000);
	assert_string_equal(b, "paddock: copying the project in [##########..............]  45%  450.0 MB / 1.0 GB  90.0 MB/s");
	ws_progress_format(b, sizeof(b), "applying", 500, 500, false, 2000);
	assert_string_equal(b, "paddock: applying [########################] 100%  500 / 500");
	ws_progress_format(b, sizeof(b), "applying", 700, 500, false, 0); /* more than the total */
	assert_non_null(strstr(b, "100%"));
	ws_progress_format(b, sizeof(b), "copying", 1234, 0, true, 0); /* total unknown */
	assert_string_equal(b, "paddock: copying: 1.2 KB");
	ws_progress_format(b, 20, "copying the project in", UINT64_MAX, UINT64_MAX, true, 1);
	assert_int_equal(strlen(b), 19);
	for (const char *p = b; *p; p++)
		assert_true((unsigned char)*p >= 0x20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_format)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
