/* test-name.c — host name canonicalisation: case, trailing dots, label rules, IDNA and every
 * IP-literal spelling an attacker might use to dodge a name-based policy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "egress/name.h"
#include "util/util.h"

static void ok(const char *in, const char *want)
{
	char out[EGRESS_NAME_MAX + 1];
	int r = egress_name_canon(in, out, sizeof(out));
	if (r < 0)
		fail_msg("'%s' refused (%s), wanted '%s'", in, egress_name_strerror(r), want);
	assert_string_equal(out, want);
	assert_int_equal(r, (int)strlen(want));
}

static void bad(const char *in, int want)
{
	char out[EGRESS_NAME_MAX + 1] = "untouched";
	int r = egress_name_canon(in, out, sizeof(out));
	if (r != want)
		fail_msg("'%s': got %d (%s), wanted %d", in, r, egress_name_strerror(r), want);
	assert_string_equal(out, "untouched"); /* no output on error */
}

static void test_lowercases(void **state)
{
	ok("GitHub.COM", "github.com");
	ok("API.Anthropic.com", "api.anthropic.com");
	ok("a", "a");
}

static void test_strips_one_trailing_dot(void **state)
{
	ok("github.com.", "github.com");
	bad("github.com..", -EINVAL);
	bad(".", -EINVAL);
	bad("", -EINVAL);
}

static void test_rejects_empty_labels(void **state)
{
	bad(".github.com", -EINVAL);
	bad("github..com", -EINVAL);
}

static void test_label_and_name_lengths(void **state)
{
	char l63[64], l64[65], name[300];
	memset(name, 0, sizeof(name));
	memset(l63, 'a', 63);
	l63[63] = '\0';
	memset(l64, 'a', 64);
	l64[64] = '\0';
	ok(l63, l63);
	bad(l64, -ENAMETOOLONG);
	/* 4 x 63 + 3 dots = 255 > 253 */
	snprintf(name, sizeof(name), "%s.%s.%s.%s", l63, l63, l63, l63);
	bad(name, -ENAMETOOLONG);
	/* 3 x 63 + 61 + 3 dots = 253: the longest valid name, also with its trailing dot */
	snprintf(name, sizeof(name), "%s.%s.%s.%.61s", l63, l63, l63, l63);
	ok(name, name);
	char dotted[310];
	snprintf(dotted, sizeof(dotted), "%s.", name);
	ok(dotted, name);
	snprintf(name, sizeof(name), "%s.%s.%s.%.62s", l63, l63, l63, l63);
	bad(name, -ENAMETOOLONG);
}

static void test_hyphens(void **state)
{
	ok("a-b.example", "a-b.example");
	ok("r1---sn-abc.googlevideo.com", "r1---sn-abc.googlevideo.com"); /* "--" inside is fine */
	bad("-a.example", -EINVAL);
	bad("a-.example", -EINVAL);
	bad("a.example-", -EINVAL);
}

static void test_underscore_allowed(void **state)
{
	ok("my_bucket.s3.amazonaws.com", "my_bucket.s3.amazonaws.com");
	ok("_dmarc.Example.com", "_dmarc.example.com");
}

static void test_bad_characters(void **state)
{
	static const char *const names[] = {
		"a b.com", "a*.com", "*.example.com", "a/b.com", "a\\b.com", "a%2e.com",
		"allowed.com@evil.com", "a\tb", "a\rb", "a\nb", "a,b", "a;b", "a+b.com", "a'b",
		"\"a\"", "a=b", "a!b", "a~b",
	};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		bad(names[i], -EINVAL);
}

static void test_embedded_nul_refused(void **state)
{
	char out[64];
	assert_int_equal(egress_name_canon_n("allowed.com\0.evil", 17, out, sizeof(out)),
			 -EINVAL);
}

static void test_idna_alabels_accepted(void **state)
{
	ok("xn--bcher-kva.example", "xn--bcher-kva.example");
	ok("XN--BCHER-KVA.Example", "xn--bcher-kva.example");
}

static void test_idna_utf8_refused(void **state)
{
	bad("b\xc3\xbc" "cher.example", -EILSEQ);  /* bücher.example */
	bad("\xd0\xb0pple.com", -EILSEQ);           /* Cyrillic a: homograph */
	bad("allowed.com\xe3\x80\x82" "evil", -EILSEQ); /* ideographic full stop as a dot */
	bad("\xff", -EILSEQ);
}

static void test_ip_literal_dotted_quad(void **state)
{
	bad("127.0.0.1", -EADDRNOTAVAIL);
	bad("127.0.0.1.", -EADDRNOTAVAIL);
	bad("169.254.169.254", -EADDRNOTAVAIL);
	bad("10.0.2.2", -EADDRNOTAVAIL);
}

static void test_ip_literal_decimal(void **state)
{
	bad("2130706433", -EADDRNOTAVAIL);
	bad("0", -EADDRNOTAVAIL);
}

static void test_ip_literal_hex(void **state)
{
	bad("0x7f000001", -EADDRNOTAVAIL);
	bad("0X7F000001", -EADDRNOTAVAIL);
	bad("0x7f.1", -EADDRNOTAVAIL);
	bad("0x7f.0x0.0x0.0x1", -EADDRNOTAVAIL);
	bad("0x", -EADDRNOTAVAIL);
}

static void test_ip_literal_octal(void **state)
{
	bad("0177.0.0.1", -EADDRNOTAVAIL);
	bad("017700000001", -EADDRNOTAVAIL);
	bad("0177.1", -EADDRNOTAVAIL);
}

static void test_ip_literal_short_forms(void **state)
{
	bad("127.1", -EADDRNOTAVAIL);
	bad("127.0.1", -EADDRNOTAVAIL);
	bad("1.2.3.4.5", -EADDRNOTAVAIL); /* not an address, but no TLD is numeric either */
}

static void test_ip_literal_mixed_trailing_number(void **state)
{
	/* URL parsers treat a name ending in a number as IPv4 ("ends in a number") */
	bad("allowed.com.1", -EADDRNOTAVAIL);
	bad("a.b.0x10", -EADDRNOTAVAIL);
}

static void test_ip_literal_ipv6(void **state)
{
	bad("::1", -EADDRNOTAVAIL);
	bad("[::1]", -EADDRNOTAVAIL);
	bad("::ffff:127.0.0.1", -EADDRNOTAVAIL);
	bad("[::ffff:127.0.0.1]", -EADDRNOTAVAIL);
	bad("::ffff:7f00:1", -EADDRNOTAVAIL);
	bad("fe80::1%eth0", -EADDRNOTAVAIL);
	bad("[fd00::1]:443", -EADDRNOTAVAIL);
	bad("0:0:0:0:0:0:0:1", -EADDRNOTAVAIL);
}

static void test_numeric_labels_not_last_ok(void **state)
{
	ok("1.2.3.example", "1.2.3.example");
	ok("0x7f.example", "0x7f.example");
	ok("123abc", "123abc");
	ok("a.0xg", "a.0xg");
	ok("1e3", "1e3");
}

static void test_outlen(void **state)
{
	char out[4];
	assert_int_equal(egress_name_canon("abcd", out, sizeof(out)), -ENOBUFS);
	assert_int_equal(egress_name_canon("abc", out, sizeof(out)), 3);
}

static void test_is_ip_literal(void **state)
{
	assert_true(egress_name_is_ip_literal("1.2.3.4", 7));
	assert_true(egress_name_is_ip_literal("[::]", 4));
	assert_false(egress_name_is_ip_literal("a.b", 3));
	assert_false(egress_name_is_ip_literal("", 0));
}

static void test_strerror(void **state)
{
	assert_non_null(strstr(egress_name_strerror(-EADDRNOTAVAIL), "IP"));
	assert_non_null(strstr(egress_name_strerror(-EILSEQ), "xn--"));
	assert_non_null(egress_name_strerror(-EPERM));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lowercases),
		cmocka_unit_test(test_strips_one_trailing_dot),
		cmocka_unit_test(test_rejects_empty_labels),
		cmocka_unit_test(test_label_and_name_lengths),
		cmocka_unit_test(test_hyphens),
		cmocka_unit_test(test_underscore_allowed),
		cmocka_unit_test(test_bad_characters),
		cmocka_unit_test(test_embedded_nul_refused),
		cmocka_unit_test(test_idna_alabels_accepted),
		cmocka_unit_test(test_idna_utf8_refused),
		cmocka_unit_test(test_ip_literal_dotted_quad),
		cmocka_unit_test(test_ip_literal_decimal),
		cmocka_unit_test(test_ip_literal_hex),
		cmocka_unit_test(test_ip_literal_octal),
		cmocka_unit_test(test_ip_literal_short_forms),
		cmocka_unit_test(test_ip_literal_mixed_trailing_number),
		cmocka_unit_test(test_ip_literal_ipv6),
		cmocka_unit_test(test_numeric_labels_not_last_ok),
		cmocka_unit_test(test_outlen),
		cmocka_unit_test(test_is_ip_literal),
		cmocka_unit_test(test_strerror),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
