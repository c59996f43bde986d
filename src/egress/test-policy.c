/* test-policy.c — the policy matcher: rule syntax, exact and suffix matching at label
 * boundaries, ports, deny-beats-allow, presets, and the text file format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "egress/policy.h"

static struct egress_policy *pol(const char *const *allow, const char *const *deny)
{
	struct egress_policy *p = egress_policy_new();
	pd_err err = {0};
	for (; allow && *allow; allow++)
		if (egress_policy_add(p, *allow, false, &err) < 0)
			fail_msg("%s", err.msg);
	for (; deny && *deny; deny++)
		if (egress_policy_add(p, *deny, true, &err) < 0)
			fail_msg("%s", err.msg);
	return p;
}

static enum egress_verdict chk(const struct egress_policy *p, const char *h, uint16_t port)
{
	return egress_policy_check(p, h, port, NULL);
}

static void bad_rule(const char *rule, const char *col_text)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	pd_err err = {0};
	assert_int_equal(egress_policy_add(p, rule, false, &err), -EINVAL);
	if (col_text && !strstr(err.msg, col_text))
		fail_msg("'%s': message '%s' lacks '%s'", rule, err.msg, col_text);
	assert_int_equal(egress_policy_count(p), 0);
}

static void test_exact_host(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"allowed.com", NULL}, NULL);
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "allowed.com", 443, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "allowed.com");
	assert_int_equal(chk(p, "allowed.com", 80), EGRESS_ALLOW);
	assert_int_equal(chk(p, "www.allowed.com", 443), EGRESS_DENY);
}

static void test_attack_suffix_appended_allowed_com_evil(void **state)
{
	_cleanup_policy_ struct egress_policy *p =
		pol((const char *[]){"allowed.com", "*.allowed.com", NULL}, NULL);
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "allowed.com.evil", 443, &rule), EGRESS_DENY);
	assert_string_equal(rule, EGRESS_RULE_DEFAULT);
	assert_int_equal(chk(p, "allowed.com.evil.net", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "x.allowed.com.evil", 443), EGRESS_DENY);
}

static void test_attack_prefix_glued_evilallowed_com(void **state)
{
	_cleanup_policy_ struct egress_policy *p =
		pol((const char *[]){".allowed.com", "allowed.com", NULL}, NULL);
	assert_int_equal(chk(p, "evilallowed.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "evil-allowed.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "x.evilallowed.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "a.allowed.com", 443), EGRESS_ALLOW);
}

static void test_suffix_excludes_apex(void **state)
{
	_cleanup_policy_ struct egress_policy *p =
		pol((const char *[]){"*.github.com", NULL}, NULL);
	const char *rule = NULL;
	assert_int_equal(chk(p, "github.com", 443), EGRESS_DENY);
	assert_int_equal(egress_policy_check(p, "api.github.com", 443, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "*.github.com");
	assert_int_equal(chk(p, "a.b.github.com", 443), EGRESS_ALLOW);
}

static void test_dot_and_star_suffix_same(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){".Example.ORG.", NULL}, NULL);
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "www.example.org", 80, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "*.example.org");
	/* the other spelling is the same rule: no duplicate */
	pd_err err = {0};
	assert_int_equal(egress_policy_add(p, "*.example.org", false, &err), 0);
	assert_int_equal(egress_policy_count(p), 1);
}

static void test_default_ports_80_443(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"a.com", NULL}, NULL);
	assert_int_equal(chk(p, "a.com", 80), EGRESS_ALLOW);
	assert_int_equal(chk(p, "a.com", 443), EGRESS_ALLOW);
	assert_int_equal(chk(p, "a.com", 22), EGRESS_DENY);
	assert_int_equal(chk(p, "a.com", 8080), EGRESS_DENY);
	assert_int_equal(chk(p, "a.com", 0), EGRESS_DENY);
}

static void test_explicit_port(void **state)
{
	_cleanup_policy_ struct egress_policy *p =
		pol((const char *[]){"github.com:22", "b.com:*", NULL}, NULL);
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "github.com", 22, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "github.com:22");
	assert_int_equal(chk(p, "github.com", 443), EGRESS_DENY);
	assert_int_equal(egress_policy_check(p, "b.com", 65535, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "b.com:*");
	assert_int_equal(chk(p, "b.com", 1), EGRESS_ALLOW);
}

static void test_deny_beats_allow(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol(
		(const char *[]){"*.corp.com", "x.corp.com", NULL},
		(const char *[]){"x.corp.com", NULL});
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "x.corp.com", 443, &rule), EGRESS_DENY);
	assert_string_equal(rule, "x.corp.com");
	assert_int_equal(chk(p, "y.corp.com", 443), EGRESS_ALLOW);
	/* order does not matter: a deny added first still wins */
	_cleanup_policy_ struct egress_policy *q = egress_policy_new();
	assert_int_equal(egress_policy_add(q, "!*.corp.com:443", false, NULL), 0);
	assert_int_equal(egress_policy_add(q, "y.corp.com", false, NULL), 0);
	assert_int_equal(chk(q, "y.corp.com", 443), EGRESS_DENY);
	assert_int_equal(chk(q, "y.corp.com", 80), EGRESS_ALLOW);
}

static void test_case_and_trailing_dot_rules(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"GitHub.com.", NULL}, NULL);
	assert_int_equal(chk(p, "github.com", 443), EGRESS_ALLOW);
}

static void test_noncanonical_query_denied(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"github.com", NULL}, NULL);
	const char *rule = NULL;
	/* the caller must canonicalise; anything else is denied, never loosely compared */
	assert_int_equal(egress_policy_check(p, "GitHub.com", 443, &rule), EGRESS_DENY);
	assert_string_equal(rule, EGRESS_RULE_BAD_NAME);
	assert_int_equal(chk(p, "github.com.", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "", 443), EGRESS_DENY);
	assert_false(egress_policy_name_allowed(p, "GITHUB.COM", NULL));
}

static void test_attack_ip_literal_rules_refused(void **state)
{
	bad_rule("127.0.0.1", "IP");
	bad_rule("127.0.0.1:80", "IP");
	bad_rule("2130706433", "IP");
	bad_rule("0x7f000001:443", "IP");
	bad_rule("0177.0.0.1", "IP");
	bad_rule("127.1", "IP");
	bad_rule("[::1]:443", "IP");
	bad_rule("::ffff:127.0.0.1", "IP");
	bad_rule("*.0.0.1", "IP");
}

static void test_ip_literal_queries_denied(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_preset(p, "open", NULL), 0);
	assert_int_equal(chk(p, "127.0.0.1", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "2130706433", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "::ffff:127.0.0.1", 443), EGRESS_DENY);
}

static void test_attack_userinfo_rule_refused(void **state)
{
	bad_rule("allowed.com@evil.com", "column 1");
	bad_rule("http://allowed.com", NULL);
}

static void test_bad_rules_with_column(void **state)
{
	bad_rule("", "column 1");
	bad_rule("!", "column 2");
	bad_rule("!!a.com", "column 2");
	bad_rule("a.com:", "column 7");
	bad_rule("a.com:0", "column 7");
	bad_rule("a.com:65536", "column 7");
	bad_rule("a.com:080", "column 7");
	bad_rule("a.com:8a", "column 7");
	bad_rule("a.com:-1", "column 7");
	bad_rule("*.", "column 3");
	bad_rule(".", "column 2");
	bad_rule("**.a.com", "column 1");
	bad_rule("a.*.com", "column 1");
	bad_rule("*a.com", "column 1");
	bad_rule("a..com", "column 1");
	bad_rule("b\xc3\xbc" "cher.de", "xn--");
	char big[EGRESS_RULE_TEXT_MAX + 10];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	bad_rule(big, "too long");
}

static void test_bang_means_deny(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"*.a.com", "!x.a.com", NULL},
						       NULL);
	const char *rule = NULL;
	assert_int_equal(egress_policy_check(p, "x.a.com", 443, &rule), EGRESS_DENY);
	assert_string_equal(rule, "x.a.com");
}

static void test_remove(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"a.com", "b.com", NULL},
						       (const char *[]){"c.com", NULL});
	pd_err err = {0};
	assert_int_equal(egress_policy_remove(p, "A.com.", false, &err), 0);
	assert_int_equal(chk(p, "a.com", 443), EGRESS_DENY);
	assert_int_equal(egress_policy_remove(p, "c.com", false, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no allow rule 'c.com'"));
	assert_int_equal(egress_policy_remove(p, "!c.com", false, &err), 0);
	assert_int_equal(egress_policy_count(p), 1);
	assert_int_equal(egress_policy_remove(p, "::1", false, &err), -EINVAL);
}

static void test_preset_none(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_preset(p, "none", NULL), 0);
	assert_int_equal(egress_policy_count(p), 0);
	assert_int_equal(chk(p, "api.anthropic.com", 443), EGRESS_DENY);
}

static void test_preset_balanced(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_preset(p, "balanced", NULL), 0);
	assert_int_equal(chk(p, "api.anthropic.com", 443), EGRESS_ALLOW);
	assert_int_equal(chk(p, "api.anthropic.com", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "registry.npmjs.org", 443), EGRESS_ALLOW);
	assert_int_equal(chk(p, "deb.debian.org", 80), EGRESS_ALLOW);
	assert_int_equal(chk(p, "github.com", 22), EGRESS_ALLOW);
	assert_int_equal(chk(p, "github.com", 443), EGRESS_ALLOW);
	assert_int_equal(chk(p, "gist.github.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "evil.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "statsig.anthropic.com", 443), EGRESS_DENY);
}

static void test_preset_open(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	const char *rule = NULL;
	assert_int_equal(egress_policy_preset(p, "open", NULL), 0);
	assert_int_equal(egress_policy_check(p, "anything.example.net", 8443, &rule), EGRESS_ALLOW);
	assert_string_equal(rule, "*:*");
	/* not public: single label, special-use domains */
	assert_int_equal(chk(p, "localhost", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "foo.localhost", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "printer.local", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "metadata.google.internal", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "1.0.0.127.in-addr.arpa", 80), EGRESS_DENY);
	assert_int_equal(chk(p, "intranet", 80), EGRESS_DENY);
	/* but an explicit rule can name one */
	assert_int_equal(egress_policy_add(p, "dev.test:8080", false, NULL), 0);
	assert_int_equal(chk(p, "dev.test", 8080), EGRESS_ALLOW);
	/* and deny still beats it */
	assert_int_equal(egress_policy_add(p, "*.evil.com", true, NULL), 0);
	assert_int_equal(chk(p, "a.evil.com", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "a.evil.com", 8443), EGRESS_ALLOW);
}

static void test_preset_unknown(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	pd_err err = {0};
	assert_int_equal(egress_policy_preset(p, "permissive", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "permissive"));
}

static void test_name_allowed(void **state)
{
	_cleanup_policy_ struct egress_policy *p = pol(
		(const char *[]){"github.com:22", "a.com", "*.b.com:*", "c.com", NULL},
		(const char *[]){"c.com:80", "c.com:443", "x.b.com:*", NULL});
	const char *rule = NULL;
	assert_true(egress_policy_name_allowed(p, "github.com", &rule));
	assert_string_equal(rule, "github.com:22");
	assert_true(egress_policy_name_allowed(p, "a.com", NULL));
	assert_true(egress_policy_name_allowed(p, "y.b.com", NULL));
	assert_false(egress_policy_name_allowed(p, "x.b.com", &rule));
	assert_string_equal(rule, "x.b.com:*");
	/* every port c.com is allowed on is denied */
	assert_false(egress_policy_name_allowed(p, "c.com", &rule));
	assert_string_equal(rule, "c.com:80");
	assert_false(egress_policy_name_allowed(p, "d.com", &rule));
	assert_string_equal(rule, EGRESS_RULE_DEFAULT);
}

static void test_name_allowed_partial_deny(void **state)
{
	_cleanup_policy_ struct egress_policy *p =
		pol((const char *[]){"a.com", NULL}, (const char *[]){"a.com:80", NULL});
	const char *rule = NULL;
	assert_true(egress_policy_name_allowed(p, "a.com", &rule));
	assert_string_equal(rule, "a.com");
	assert_int_equal(chk(p, "a.com", 80), EGRESS_DENY);
}

static void test_merge(void **state)
{
	_cleanup_policy_ struct egress_policy *g = pol((const char *[]){"a.com", NULL}, NULL);
	_cleanup_policy_ struct egress_policy *s =
		pol((const char *[]){"a.com", "b.com", NULL}, (const char *[]){"a.com", NULL});
	assert_int_equal(egress_policy_merge(g, s, NULL), 0);
	assert_int_equal(egress_policy_count(g), 3);
	assert_int_equal(chk(g, "a.com", 443), EGRESS_DENY);
}

static void test_rule_cap(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	char r[32];
	for (int i = 0; i < EGRESS_RULE_MAX; i++) {
		snprintf(r, sizeof(r), "h%d.com", i);
		assert_int_equal(egress_policy_add(p, r, false, NULL), 0);
	}
	pd_err err = {0};
	assert_int_equal(egress_policy_add(p, "one-more.com", false, &err), -E2BIG);
	assert_int_equal(egress_policy_add(p, "h1.com", false, &err), 0); /* duplicate: no-op */
	assert_int_equal(egress_policy_preset(p, "balanced", &err), -E2BIG);
	assert_int_equal(egress_policy_count(p), EGRESS_RULE_MAX);
}

static void test_text_parse(void **state)
{
	static const char text[] = "# paddock policy\n"
				   "allow github.com:22   # ssh\n"
				   "\n"
				   "  allow\t*.example.org\r\n"
				   "deny  bad.example.org\n"
				   "allow !worse.example.org\n"
				   "preset none";
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	pd_err err = {0};
	if (egress_policy_parse(p, text, strlen(text), "t.policy", &err) < 0)
		fail_msg("%s", err.msg);
	assert_int_equal(egress_policy_count(p), 4);
	assert_int_equal(chk(p, "github.com", 22), EGRESS_ALLOW);
	assert_int_equal(chk(p, "a.example.org", 443), EGRESS_ALLOW);
	assert_int_equal(chk(p, "bad.example.org", 443), EGRESS_DENY);
	assert_int_equal(chk(p, "worse.example.org", 443), EGRESS_DENY);
}

static void text_bad(const char *text, const char *want)
{
	_cleanup_policy_ struct egress_policy *p = pol((const char *[]){"keep.com", NULL}, NULL);
	pd_err err = {0};
	assert_int_equal(egress_policy_parse(p, text, strlen(text), "f", &err), -EINVAL);
	if (!strstr(err.msg, want))
		fail_msg("'%s': message '%s' lacks '%s'", text, err.msg, want);
	assert_int_equal(egress_policy_count(p), 1); /* all or nothing */
}

static void test_text_errors_with_position(void **state)
{
	text_bad("allow a.com\nallow a.com:99999\n", "f:2:13: port");
	text_bad("allow a.com\n  permit b.com\n", "f:2:3: expected");
	text_bad("allow\n", "f:1:6: missing argument");
	text_bad("deny a.com b.com\n", "f:1:12: one rule per line");
	text_bad("\n\nallow 127.0.0.1\n", "f:3:7: IP");
	text_bad("allow *.\n", "f:1:9:");
	text_bad("preset lax\n", "f:1:8: unknown preset");
	text_bad("allow a\x01.com\n", "f:1:8: control character");
}

static void test_text_nul_refused(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	pd_err err = {0};
	assert_int_equal(egress_policy_parse(p, "allow a.com\0\n", 13, "f", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "f:1: NUL"));
}

static void test_text_roundtrip(void **state)
{
	_cleanup_policy_ struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_preset(p, "balanced", NULL), 0);
	assert_int_equal(egress_policy_add(p, "!.Evil.COM:*", false, NULL), 0);
	assert_int_equal(egress_policy_add(p, "*:8080", false, NULL), 0);
	_cleanup_free_ char *text = egress_policy_format(p);
	assert_non_null(strstr(text, "deny *.evil.com:*\n"));
	assert_non_null(strstr(text, "allow *:8080\n"));
	assert_non_null(strstr(text, "allow deb.debian.org\n"));
	_cleanup_policy_ struct egress_policy *q = egress_policy_new();
	pd_err err = {0};
	if (egress_policy_parse(q, text, strlen(text), "rt", &err) < 0)
		fail_msg("%s", err.msg);
	_cleanup_free_ char *again = egress_policy_format(q);
	assert_string_equal(text, again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_host),
		cmocka_unit_test(test_attack_suffix_appended_allowed_com_evil),
		cmocka_unit_test(test_attack_prefix_glued_evilallowed_com),
		cmocka_unit_test(test_suffix_excludes_apex),
		cmocka_unit_test(test_dot_and_star_suffix_same),
		cmocka_unit_test(test_default_ports_80_443),
		cmocka_unit_test(test_explicit_port),
		cmocka_unit_test(test_deny_beats_allow),
		cmocka_unit_test(test_case_and_trailing_dot_rules),
		cmocka_unit_test(test_noncanonical_query_denied),
		cmocka_unit_test(test_attack_ip_literal_rules_refused),
		cmocka_unit_test(test_ip_literal_queries_denied),
		cmocka_unit_test(test_attack_userinfo_rule_refused),
		cmocka_unit_test(test_bad_rules_with_column),
		cmocka_unit_test(test_bang_means_deny),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_preset_none),
		cmocka_unit_test(test_preset_balanced),
		cmocka_unit_test(test_preset_open),
		cmocka_unit_test(test_preset_unknown),
		cmocka_unit_test(test_name_allowed),
		cmocka_unit_test(test_name_allowed_partial_deny),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_rule_cap),
		cmocka_unit_test(test_text_parse),
		cmocka_unit_test(test_text_errors_with_position),
		cmocka_unit_test(test_text_nul_refused),
		cmocka_unit_test(test_text_roundtrip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
