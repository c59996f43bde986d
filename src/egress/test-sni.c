/* test-sni.c — ClientHello SNI extraction: the happy path, every prefix, fragmented hellos,
 * and the ways a box could try to make the supervisor check one name and reach another
 * (other SNI, no SNI, duplicate or multi-name SNI, ECH, IP-literal SNI, embedded NUL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "egress/sni.h"
#include "util/util.h"

struct buf {
	uint8_t d[70000];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->d));
	memcpy(b->d + b->n, p, n);
	b->n += n;
}
static void put8(struct buf *b, unsigned v) { uint8_t c = (uint8_t)v; put(b, &c, 1); }
static void put16(struct buf *b, unsigned v) { put8(b, v >> 8); put8(b, v & 0xff); }
static void put24(struct buf *b, size_t v) { put8(b, (unsigned)(v >> 16)); put16(b, v & 0xffff); }

/* An extension: type, then its body. */
static void ext(struct buf *e, unsigned type, const void *body, size_t n)
{
	put16(e, type);
	put16(e, (unsigned)n);
	put(e, body, n);
}

/* The body of a server_name extension naming host (length n). */
static void sni_ext(struct buf *e, const char *host, size_t n)
{
	struct buf b = {.n = 0};
	put16(&b, (unsigned)n + 3);
	put8(&b, 0);
	put16(&b, (unsigned)n);
	put(&b, host, n);
	ext(e, 0, b.d, b.n);
}

static void common_exts(struct buf *e)
{
	static const uint8_t versions[] = {0x02, 0x03, 0x04};
	static const uint8_t groups[] = {0x00, 0x02, 0x00, 0x1d};
	ext(e, 43, versions, sizeof(versions)); /* supported_versions */
	ext(e, 10, groups, sizeof(groups));     /* supported_groups */
}

/* A ClientHello handshake message (header + body) with the given extension block. */
static void hello_msg(struct buf *out, const struct buf *exts, bool with_exts)
{
	struct buf body = {.n = 0};
	uint8_t zero[32] = {0};
	put16(&body, 0x0303);
	put(&body, zero, 32);
	put8(&body, 32);
	put(&body, zero, 32);
	put16(&body, 4);
	put16(&body, 0x1301);
	put16(&body, 0x1302);
	put8(&body, 1);
	put8(&body, 0);
	if (with_exts) {
		put16(&body, (unsigned)exts->n);
		put(&body, exts->d, exts->n);
	}
	put8(out, 1);
	put24(out, body.n);
	put(out, body.d, body.n);
}

/* Wraps msg in records of at most frag bytes each. */
static void records(struct buf *out, const struct buf *msg, size_t frag)
{
	for (size_t off = 0; off < msg->n; off += frag) {
		size_t n = msg->n - off < frag ? msg->n - off : frag;
		put8(out, 22);
		put16(out, 0x0301);
		put16(out, (unsigned)n);
		put(out, msg->d + off, n);
	}
}

static struct buf *hello_for(const char *host)
{
	static struct buf out;
	struct buf e = {.n = 0}, msg = {.n = 0};
	out.n = 0;
	common_exts(&e);
	if (host)
		sni_ext(&e, host, strlen(host));
	hello_msg(&msg, &e, true);
	records(&out, &msg, 16384);
	return &out;
}

static struct buf *wrap(const struct buf *e)
{
	static struct buf out;
	struct buf msg = {.n = 0};
	out.n = 0;
	hello_msg(&msg, e, true);
	records(&out, &msg, 16384);
	return &out;
}

static enum egress_sni_result run(const struct buf *b, char *name)
{
	return egress_sni_extract(b->d, b->n, name);
}

static void test_found(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	assert_int_equal(run(hello_for("api.github.com"), name), EGRESS_SNI_FOUND);
	assert_string_equal(name, "api.github.com");
}

static void test_sni_is_canonicalised(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	assert_int_equal(run(hello_for("API.GitHub.COM."), name), EGRESS_SNI_FOUND);
	assert_string_equal(name, "api.github.com");
}

static void test_every_prefix_needs_more(void **state)
{
	const struct buf *b = hello_for("allowed.com");
	char name[EGRESS_NAME_MAX + 1];
	for (size_t i = 0; i < b->n; i++)
		if (egress_sni_extract(b->d, i, name) != EGRESS_SNI_NEED_MORE)
			fail_msg("prefix %zu of %zu", i, b->n);
	assert_int_equal(egress_sni_extract(b->d, b->n, name), EGRESS_SNI_FOUND);
}

static void test_bytes_after_hello_ignored(void **state)
{
	struct buf *b = hello_for("allowed.com");
	put(b, "\x17\x03\x03\x00\x01X", 6);
	char name[EGRESS_NAME_MAX + 1];
	assert_int_equal(run(b, name), EGRESS_SNI_FOUND);
}

static void test_not_tls(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	static const char *const starts[] = {"GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH_9.2\r\n",
					     "\x80\x2e\x01\x03\x01", "\x16\x02", "\x16\x03\x05",
					     "\x15\x03\x03\x00\x02\x02\x28"};
	for (size_t i = 0; i < ARRAY_SIZE(starts); i++)
		assert_int_equal(egress_sni_extract((const uint8_t *)starts[i], strlen(starts[i]),
						    name),
				 EGRESS_SNI_NOT_TLS);
	assert_int_equal(egress_sni_extract((const uint8_t *)"", 0, name), EGRESS_SNI_NEED_MORE);
}

static void test_attack_no_sni_refused(void **state)
{
	char name[EGRESS_NAME_MAX + 1] = "untouched";
	assert_int_equal(run(hello_for(NULL), name), EGRESS_SNI_NO_SNI);
	assert_string_equal(name, "untouched");
	struct buf msg = {.n = 0}, out = {.n = 0};
	hello_msg(&msg, NULL, false); /* no extension block at all */
	records(&out, &msg, 16384);
	assert_int_equal(run(&out, name), EGRESS_SNI_NO_SNI);
}

static void test_attack_sni_mismatch_other_name(void **state)
{
	/* the extractor reports what the hello says; the caller compares with the connection's
	 * name, so a fronting attempt shows up as a different canonical name */
	char name[EGRESS_NAME_MAX + 1];
	assert_int_equal(run(hello_for("evil.com"), name), EGRESS_SNI_FOUND);
	assert_string_not_equal(name, "allowed.com");
	assert_int_equal(run(hello_for("allowed.com.evil"), name), EGRESS_SNI_FOUND);
	assert_string_not_equal(name, "allowed.com");
	assert_int_equal(run(hello_for("evilallowed.com"), name), EGRESS_SNI_FOUND);
	assert_string_not_equal(name, "allowed.com");
}

static void test_attack_sni_embedded_nul(void **state)
{
	struct buf e = {.n = 0};
	char name[EGRESS_NAME_MAX + 1];
	sni_ext(&e, "allowed.com\0evil.com", 20);
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_BAD_NAME);
}

static void test_attack_sni_ip_literal(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	assert_int_equal(run(hello_for("127.0.0.1"), name), EGRESS_SNI_BAD_NAME);
	assert_int_equal(run(hello_for("::ffff:127.0.0.1"), name), EGRESS_SNI_BAD_NAME);
	assert_int_equal(run(hello_for("0x7f000001"), name), EGRESS_SNI_BAD_NAME);
}

static void test_attack_duplicate_sni_extension(void **state)
{
	struct buf e = {.n = 0};
	char name[EGRESS_NAME_MAX + 1];
	sni_ext(&e, "allowed.com", 11);
	sni_ext(&e, "evil.com", 8);
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
}

static void test_attack_two_names_in_sni_list(void **state)
{
	struct buf b = {.n = 0}, e = {.n = 0};
	char name[EGRESS_NAME_MAX + 1];
	put16(&b, 14 + 11);
	put8(&b, 0);
	put16(&b, 11);
	put(&b, "allowed.com", 11);
	put8(&b, 0);
	put16(&b, 8);
	put(&b, "evil.com", 8);
	ext(&e, 0, b.d, b.n);
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
}

static void test_sni_bad_shapes(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	struct buf e = {.n = 0};
	ext(&e, 0, "", 0); /* empty server_name: only legal in a ServerHello */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
	e.n = 0;
	ext(&e, 0, "\x00\x0e\x01\x00\x0b" "allowed.com", 16); /* name_type 1 */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
	e.n = 0;
	ext(&e, 0, "\x00\x0f\x00\x00\x0b" "allowed.com", 16); /* list length too long */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
	e.n = 0;
	ext(&e, 0, "\x00\x0e\x00\x00\x0c" "allowed.com", 16); /* name length too long */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
	e.n = 0;
	ext(&e, 0, "\x00\x03\x00\x00\x00", 5); /* zero-length name */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
}

static void test_attack_ech_refused_even_with_allowed_outer_sni(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	static const unsigned types[] = {0xfe0d, 0xfe0a, 0xff02, 0xffce};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		struct buf e = {.n = 0};
		common_exts(&e);
		sni_ext(&e, "allowed.com", 11);
		ext(&e, types[i], "\x00\x00\x01\x00\x01\x07\x00\x20", 8);
		assert_int_equal(run(wrap(&e), name), EGRESS_SNI_ECH);
	}
	struct buf e = {.n = 0};
	ext(&e, 0xfe0d, "\x01", 1); /* ECH only, no outer SNI */
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_ECH);
}

static void test_fragmented_hello(void **state)
{
	struct buf e = {.n = 0}, msg = {.n = 0}, out = {.n = 0};
	char name[EGRESS_NAME_MAX + 1];
	common_exts(&e);
	sni_ext(&e, "frag.example.com", 16);
	hello_msg(&msg, &e, true);
	records(&out, &msg, 7);
	assert_int_equal(run(&out, name), EGRESS_SNI_FOUND);
	assert_string_equal(name, "frag.example.com");
	for (size_t i = 0; i < out.n; i++)
		assert_int_equal(egress_sni_extract(out.d, i, name), EGRESS_SNI_NEED_MORE);
}

static void test_large_hello_across_records(void **state)
{
	struct buf e = {.n = 0}, msg = {.n = 0}, out = {.n = 0};
	static uint8_t pad[12000];
	char name[EGRESS_NAME_MAX + 1];
	common_exts(&e);
	ext(&e, 21, pad, sizeof(pad)); /* padding */
	sni_ext(&e, "big.example.com", 15);
	hello_msg(&msg, &e, true);
	records(&out, &msg, 5000);
	assert_int_equal(run(&out, name), EGRESS_SNI_FOUND);
}

static void test_oversized_hello_refused(void **state)
{
	struct buf e = {.n = 0}, msg = {.n = 0}, out = {.n = 0};
	static uint8_t pad[EGRESS_SNI_MAX_HELLO];
	char name[EGRESS_NAME_MAX + 1];
	ext(&e, 21, pad, sizeof(pad));
	sni_ext(&e, "big.example.com", 15);
	hello_msg(&msg, &e, true);
	records(&out, &msg, 16384);
	/* refused as soon as the handshake header is visible */
	assert_int_equal(egress_sni_extract(out.d, 9, name), EGRESS_SNI_MALFORMED);
	assert_int_equal(egress_sni_extract(out.d, 8, name), EGRESS_SNI_NEED_MORE);
}

static void test_bad_records(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	struct buf *b = hello_for("allowed.com");
	struct buf c = *b;
	c.d[3] = 0x40; /* record length 0x40xx > 2^14 */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
	static const uint8_t zero_len[] = {22, 3, 1, 0, 0};
	assert_int_equal(egress_sni_extract(zero_len, sizeof(zero_len), name), EGRESS_SNI_MALFORMED);
	/* a first fragment, then an alert record before the hello is complete */
	struct buf e = {.n = 0}, msg = {.n = 0}, out = {.n = 0};
	sni_ext(&e, "allowed.com", 11);
	hello_msg(&msg, &e, true);
	records(&out, &msg, 10);
	out.d[15] = 21;
	assert_int_equal(run(&out, name), EGRESS_SNI_MALFORMED);
}

static void test_not_a_client_hello(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	struct buf c = *hello_for("allowed.com");
	c.d[5] = 2; /* ServerHello */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
}

static void test_hello_inner_lengths(void **state)
{
	char name[EGRESS_NAME_MAX + 1];
	struct buf c = *hello_for("allowed.com");
	/* layout: 5 record + 4 hs + 2 version + 32 random, then session id length */
	c.d[43] = 33; /* session id longer than 32 */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
	c = *hello_for("allowed.com");
	c.d[9] = 2; /* legacy_version 2.3 */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
	c = *hello_for("allowed.com");
	c.d[77] = 3; /* odd cipher suite length */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
	/* extension block shorter than the hello: trailing bytes inside the hello */
	c = *hello_for("allowed.com");
	size_t ext_len_off = 5 + 4 + 2 + 32 + 1 + 32 + 2 + 4 + 1 + 1;
	c.d[ext_len_off + 1]--;
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
	c.d[ext_len_off + 1] += 2; /* longer than the hello */
	assert_int_equal(run(&c, name), EGRESS_SNI_MALFORMED);
}

static void test_too_many_extensions(void **state)
{
	struct buf e = {.n = 0};
	char name[EGRESS_NAME_MAX + 1];
	for (unsigned i = 0; i <= EGRESS_SNI_MAX_EXTENSIONS; i++)
		ext(&e, 0x1000 + i, "", 0);
	sni_ext(&e, "allowed.com", 11);
	assert_int_equal(run(wrap(&e), name), EGRESS_SNI_MALFORMED);
}

static void test_result_str(void **state)
{
	assert_string_equal(egress_sni_result_str(EGRESS_SNI_ECH), "ech");
	assert_string_equal(egress_sni_result_str(EGRESS_SNI_RESULT_MAX), "invalid");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_found),
		cmocka_unit_test(test_sni_is_canonicalised),
		cmocka_unit_test(test_every_prefix_needs_more),
		cmocka_unit_test(test_bytes_after_hello_ignored),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_attack_no_sni_refused),
		cmocka_unit_test(test_attack_sni_mismatch_other_name),
		cmocka_unit_test(test_attack_sni_embedded_nul),
		cmocka_unit_test(test_attack_sni_ip_literal),
		cmocka_unit_test(test_attack_duplicate_sni_extension),
		cmocka_unit_test(test_attack_two_names_in_sni_list),
		cmocka_unit_test(test_sni_bad_shapes),
		cmocka_unit_test(test_attack_ech_refused_even_with_allowed_outer_sni),
		cmocka_unit_test(test_fragmented_hello),
		cmocka_unit_test(test_large_hello_across_records),
		cmocka_unit_test(test_oversized_hello_refused),
		cmocka_unit_test(test_bad_records),
		cmocka_unit_test(test_not_a_client_hello),
		cmocka_unit_test(test_hello_inner_lengths),
		cmocka_unit_test(test_too_many_extensions),
		cmocka_unit_test(test_result_str),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
