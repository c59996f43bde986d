/* test-audit.c — the audit line is exact JSON, with hostile names escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "egress/audit.h"

static void test_format(void **state)
{
	(void)state;
	struct egress_audit_rec r = {.time_ms = 1700000000123, .box = "b1", .kind = "tcp", .name = "github.com",
				     .port = 443, .rule = "github.com:443", .verdict = "allow", .reason = "",
				     .bytes_up = 517, .bytes_down = 4096, .duration_ms = 35};
	char *s = egress_audit_format(&r);
	assert_string_equal(s, "{\"time\":\"2023-11-14T22:13:20.123Z\",\"box\":\"b1\",\"kind\":\"tcp\","
			       "\"name\":\"github.com\",\"port\":443,\"rule\":\"github.com:443\",\"verdict\":\"allow\","
			       "\"reason\":\"\",\"bytes_up\":517,\"bytes_down\":4096,\"duration_ms\":35}\n");
	free(s);
	r.name = "evil\"\n\\x";
	s = egress_audit_format(&r);
	assert_non_null(strstr(s, "\"name\":\"evil\\\"\\n\\\\x\""));
	assert_null(strchr(s, '\n') == s + strlen(s) - 1 ? NULL : s); /* one line */
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_format)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
