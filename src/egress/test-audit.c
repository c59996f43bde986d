/* test-audit.c — the audit line is exact JSON, with hostile names escaped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "egress/audit.h"
#include "util/util.h"

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

static size_t count_lines(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	char line[1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), f))
		n += !needle || strstr(line, needle);
	fclose(f);
	return n;
}

/* A flood writes EGRESS_AUDIT_RATE lines in a second and one line counting the rest; the
 * log is rotated into EGRESS_AUDIT_KEEP files, never more. */
static void test_rate_and_rotation(void **state)
{
	(void)state;
	char dir[] = "/tmp/test-audit.XXXXXX";
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/net.log", dir);
	struct egress_audit *a;
	assert_int_equal(egress_audit_open(path, &a), 0);
	struct egress_audit_rec r = {.time_ms = 1, .box = "b", .kind = "dns", .name = "x.evil.test", .rule = "default-deny",
				     .verdict = "deny", .reason = "A NXDOMAIN"};
	int64_t t0 = mono_ms();
	for (int i = 0; i < 3 * EGRESS_AUDIT_RATE; i++)
		egress_audit_write(a, &r);
	/* past the limit, a connection that was let through and carried bytes is still written */
	struct egress_audit_rec conn = {.time_ms = 1, .box = "b", .kind = "tcp", .name = "exfil.allowed.test",
					.port = 443, .rule = "x", .verdict = "allow", .bytes_up = 5};
	egress_audit_write(a, &conn);
	bool same_second = mono_ms() / 1000 == t0 / 1000;
	egress_audit_close(a);
	if (same_second) { /* (a run that crossed a second boundary wrote more: not judged) */
		assert_int_equal(count_lines(path, "x.evil.test"), EGRESS_AUDIT_RATE);
		assert_int_equal(count_lines(path, "rate-limited: 1000 lines not written"), 1);
	}
	assert_int_equal(count_lines(path, "exfil.allowed.test"), 1);
	/* rotation: files .1 .. .KEEP and never .KEEP+1 */
	for (int g = 0; g < EGRESS_AUDIT_KEEP + 2; g++) {
		assert_int_equal(egress_audit_open(path, &a), 0);
		_cleanup_free_ char *big = xmalloc(EGRESS_AUDIT_MAX / 2);
		memset(big, 'a', EGRESS_AUDIT_MAX / 2 - 1);
		big[EGRESS_AUDIT_MAX / 2 - 1] = '\0';
		r.name = big;
		for (int k = 0; k < 3; k++)
			egress_audit_write(a, &r);
		r.name = "x.evil.test";
		egress_audit_close(a);
	}
	for (int i = 1; i <= EGRESS_AUDIT_KEEP + 1; i++) {
		_cleanup_free_ char *p = xasprintf("%s.%d", path, i);
		assert_int_equal(access(p, F_OK) == 0, i <= EGRESS_AUDIT_KEEP);
		unlink(p);
	}
	unlink(path);
	rmdir(dir);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(test_format), cmocka_unit_test(test_rate_and_rotation)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
