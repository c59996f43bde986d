/* test-dns.c — the DNS responder: answers for allowed names, NXDOMAIN for denied ones with
 * nothing leaked (the fake-IP pool is not even asked), strict parsing of hostile queries, and
 * the TCP framing helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "net/dns.h"
#include "net/fakeip.h"
#include "util/util.h"

struct q {
	uint8_t d[5000];
	size_t n;
};

static void put(struct q *q, const void *p, size_t n)
{
	memcpy(q->d + q->n, p, n);
	q->n += n;
}
static void put16(struct q *q, unsigned v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	put(q, b, 2);
}

static void header(struct q *q, unsigned id, unsigned flags, unsigned qd, unsigned an,
		   unsigned ns, unsigned ar)
{
	q->n = 0;
	put16(q, id);
	put16(q, flags);
	put16(q, qd);
	put16(q, an);
	put16(q, ns);
	put16(q, ar);
}

/* A dotted name as wire labels (no escapes: '.' always separates). */
static void wire_name(struct q *q, const char *name)
{
	while (*name) {
		const char *dot = strchr(name, '.');
		size_t n = dot ? (size_t)(dot - name) : strlen(name);
		uint8_t l = (uint8_t)n;
		put(q, &l, 1);
		put(q, name, n);
		name += n + (dot ? 1 : 0);
	}
	put(q, "", 1);
}

static struct q *query(const char *name, unsigned qtype)
{
	static struct q q;
	header(&q, 0x1234, 0x0100, 1, 0, 0, 0);
	wire_name(&q, name);
	put16(&q, qtype);
	put16(&q, DNS_CLASS_IN);
	return &q;
}

static void add_opt(struct q *q)
{
	q->d[11] = 1; /* ARCOUNT */
	put(q, "", 1);
	put16(q, DNS_TYPE_OPT);
	put16(q, 1232);
	put16(q, 0);
	put16(q, 0);
	put16(q, 4); /* rdlen: one empty option (code 10 = COOKIE, len 0) */
	put16(q, 10);
	put16(q, 0);
}

static struct fakeip_pool *pool;
static unsigned fake_calls;
static bool fake_fail;

static int fake_ip(void *opaque, const char *canon, struct in_addr *ret)
{
	fake_calls++;
	if (fake_fail)
		return -ENOSPC;
	return fakeip_assign(opaque, canon, 0, ret);
}

static struct egress_policy *policy;
static struct dns_ctx ctx;
static uint8_t out[DNS_ANSWER_MAX];
static size_t outlen;
static struct dns_event ev;

static int setup(void **state)
{
	policy = egress_policy_new();
	static const char *const allow[] = {"allowed.com", "*.allowed.org", "github.com:22"};
	for (size_t i = 0; i < ARRAY_SIZE(allow); i++)
		assert_int_equal(egress_policy_add(policy, allow[i], false, NULL), 0);
	assert_int_equal(egress_policy_add(policy, "bad.allowed.org", true, NULL), 0);
	assert_int_equal(fakeip_pool_new((struct in_addr){htonl(FAKEIP_NET_DEFAULT)}, 100, 60,
					 &pool), 0);
	ctx = (struct dns_ctx){.policy = policy, .fake_ip = fake_ip, .opaque = pool};
	fake_calls = 0;
	fake_fail = false;
	return 0;
}

static int teardown(void **state)
{
	egress_policy_free(policy);
	fakeip_pool_free(pool);
	return 0;
}

static unsigned rcode(void) { return out[3] & 0xf; }
static unsigned count(int i) { return (unsigned)(out[4 + 2 * i] << 8 | out[5 + 2 * i]); }

static int ask(const struct q *q)
{
	memset(out, 0xee, sizeof(out));
	return dns_answer(q->d, q->n, &ctx, out, sizeof(out), &outlen, &ev);
}

static void expect(const struct q *q, unsigned want_rcode, unsigned want_answers)
{
	assert_int_equal(ask(q), 0);
	assert_int_equal(rcode(), want_rcode);
	assert_int_equal(ev.rcode, want_rcode);
	assert_int_equal(count(1), want_answers);
	assert_int_equal(out[0] << 8 | out[1], q->d[0] << 8 | q->d[1]); /* id echoed */
	assert_true(out[2] & 0x80);                                    /* QR */
	assert_int_equal(count(2), 0);
	assert_int_equal(count(3), 0); /* no OPT, nothing additional */
}

static void test_a_allowed_gets_fake_ip(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	expect(q, DNS_RCODE_NOERROR, 1);
	assert_int_equal(count(0), 1);
	assert_int_equal(outlen, q->n + 16);
	assert_memory_equal(out + 12, q->d + 12, q->n - 12); /* question echoed */
	const uint8_t *a = out + q->n;
	static const uint8_t rr[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 198, 18, 0, 1};
	assert_memory_equal(a, rr, sizeof(rr));
	assert_true(out[2] & 0x01);  /* RD copied */
	assert_true(out[3] & 0x80);  /* RA */
	assert_string_equal(ev.name, "allowed.com");
	assert_int_equal(ev.qtype, DNS_TYPE_A);
	assert_int_equal(ev.verdict, EGRESS_ALLOW);
	assert_string_equal(ev.rule, "allowed.com");
	assert_int_equal(ev.addr.s_addr, htonl(0xc6120001));
	/* same name, same address */
	expect(query("allowed.com", DNS_TYPE_A), DNS_RCODE_NOERROR, 1);
	assert_int_equal(ev.addr.s_addr, htonl(0xc6120001));
}

static void test_case_preserved_in_echo(void **state)
{
	struct q *q = query("AlLoWeD.CoM", DNS_TYPE_A); /* DNS 0x20 case randomisation */
	expect(q, DNS_RCODE_NOERROR, 1);
	assert_memory_equal(out + 12, "\x07" "AlLoWeD" "\x03" "CoM", 12);
	assert_string_equal(ev.name, "allowed.com");
}

static void test_ttl_configurable(void **state)
{
	ctx.ttl = 5;
	struct q *q = query("x.allowed.org", DNS_TYPE_A);
	expect(q, DNS_RCODE_NOERROR, 1);
	assert_int_equal(out[q->n + 9], 5);
}

static void test_aaaa_https_svcb_empty(void **state)
{
	static const unsigned types[] = {DNS_TYPE_AAAA, DNS_TYPE_HTTPS, DNS_TYPE_SVCB};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		expect(query("allowed.com", types[i]), DNS_RCODE_NOERROR, 0);
		assert_int_equal(ev.verdict, EGRESS_ALLOW);
	}
	assert_int_equal(fake_calls, 0);
}

static void test_attack_dns_exfiltration_denied_name(void **state)
{
	expect(query("c2VjcmV0.denied.test", DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
	assert_int_equal(ev.verdict, EGRESS_DENY);
	assert_string_equal(ev.rule, EGRESS_RULE_DEFAULT);
	assert_string_equal(ev.name, "c2vjcmv0.denied.test");
	assert_int_equal(fake_calls, 0); /* nothing about a denied name goes anywhere */
	assert_int_equal(fakeip_count(pool), 0);
}

static void test_attack_dns_exfiltration_txt_and_others(void **state)
{
	static const unsigned types[] = {DNS_TYPE_TXT, DNS_TYPE_MX, DNS_TYPE_SRV, DNS_TYPE_ANY,
					 DNS_TYPE_NS, DNS_TYPE_CNAME, DNS_TYPE_AAAA, 0, 65535};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++)
		expect(query("secret.denied.test", types[i]), DNS_RCODE_NXDOMAIN, 0);
	assert_int_equal(fake_calls, 0);
}

static void test_other_types_on_allowed_names_refused(void **state)
{
	static const unsigned types[] = {DNS_TYPE_TXT, DNS_TYPE_MX, DNS_TYPE_SRV, DNS_TYPE_ANY,
					 DNS_TYPE_NS, DNS_TYPE_PTR, DNS_TYPE_SOA, DNS_TYPE_CNAME};
	for (size_t i = 0; i < ARRAY_SIZE(types); i++) {
		expect(query("allowed.com", types[i]), DNS_RCODE_REFUSED, 0);
		assert_string_equal(ev.rule, "refused-type");
		assert_int_equal(ev.verdict, EGRESS_DENY);
	}
	assert_int_equal(fake_calls, 0);
}

static void test_deny_rule_wins(void **state)
{
	expect(query("bad.allowed.org", DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
	assert_string_equal(ev.rule, "bad.allowed.org");
	expect(query("good.allowed.org", DNS_TYPE_A), DNS_RCODE_NOERROR, 1);
	assert_string_equal(ev.rule, "*.allowed.org");
}

static void test_suffix_lookalikes_denied(void **state)
{
	expect(query("allowed.com.evil", DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
	expect(query("evilallowed.com", DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
	expect(query("allowed.org", DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0); /* apex not in *.x */
}

static void test_port_only_rule_still_resolves(void **state)
{
	expect(query("github.com", DNS_TYPE_A), DNS_RCODE_NOERROR, 1);
	assert_string_equal(ev.rule, "github.com:22");
}

static void test_attack_ip_literal_queries(void **state)
{
	static const char *const names[] = {"127.0.0.1", "2130706433", "0x7f000001", "127.1",
					    "0177.0.0.1", "169.254.169.254"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		expect(query(names[i], DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
		assert_string_equal(ev.rule, "invalid-name");
	}
	expect(query("1.0.0.127.in-addr.arpa", DNS_TYPE_PTR), DNS_RCODE_NXDOMAIN, 0);
	assert_int_equal(fake_calls, 0);
}

static void test_attack_dot_inside_label(void **state)
{
	/* labels [x.y][allowed][org] would read "x.y.allowed.org" if joined naively */
	struct q q;
	header(&q, 7, 0, 1, 0, 0, 0);
	put(&q, "\x03x.y\x07" "allowed\x03org\x00", 17);
	put16(&q, DNS_TYPE_A);
	put16(&q, DNS_CLASS_IN);
	expect(&q, DNS_RCODE_NXDOMAIN, 0);
	assert_string_equal(ev.rule, "invalid-name");
	assert_string_equal(ev.name, "x\\046y.allowed.org");
	assert_int_equal(fake_calls, 0);
}

static void test_attack_nul_and_binary_labels(void **state)
{
	struct q q;
	header(&q, 7, 0, 1, 0, 0, 0);
	put(&q, "\x04" "a\0\xff" "b\x07" "allowed\x03" "com\x00", 18);
	put16(&q, DNS_TYPE_A);
	put16(&q, DNS_CLASS_IN);
	expect(&q, DNS_RCODE_NXDOMAIN, 0);
	assert_string_equal(ev.name, "a\\000\\255b.allowed.com");
}

static void test_attack_long_labels(void **state)
{
	char name[400];
	memset(name, 'a', 63);
	strcpy(name + 63, ".denied.test");
	expect(query(name, DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
	memset(name, 'a', 64); /* 64-byte label: the length byte 0x40 is an extended label type */
	strcpy(name + 64, ".denied.test");
	expect(query(name, DNS_TYPE_A), DNS_RCODE_FORMERR, 0);
	assert_int_equal(count(0), 0); /* FORMERR carries no question */
	assert_string_equal(ev.rule, "malformed");
}

static void test_attack_name_over_255(void **state)
{
	char name[400] = "";
	for (int i = 0; i < 5; i++)
		strcat(name, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa."); /* 51 x 5 */
	strcat(name, "ab"); /* wire: 5 x 51 + 3 + 1 = 259 */
	expect(query(name, DNS_TYPE_A), DNS_RCODE_FORMERR, 0);
	name[strlen(name) - 6] = '\0'; /* 253 on the wire: valid DNS, too long as a host name */
	expect(query(name, DNS_TYPE_A), DNS_RCODE_NXDOMAIN, 0);
}

static void test_attack_compression_pointer_in_question(void **state)
{
	struct q q;
	header(&q, 1, 0, 1, 0, 0, 0);
	put(&q, "\x07" "allowed\xc0\x0c", 10); /* points back at itself */
	put16(&q, DNS_TYPE_A);
	put16(&q, DNS_CLASS_IN);
	expect(&q, DNS_RCODE_FORMERR, 0);
	header(&q, 1, 0, 1, 0, 0, 0);
	put(&q, "\x80\x00", 2); /* extended label type */
	put16(&q, DNS_TYPE_A);
	put16(&q, DNS_CLASS_IN);
	expect(&q, DNS_RCODE_FORMERR, 0);
}

static void test_counts(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	q->d[5] = 0;
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	q->d[5] = 2;
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	q->d[7] = 1;
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	q->d[9] = 1;
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	q->d[11] = 1; /* an additional record that is not there */
	expect(q, DNS_RCODE_FORMERR, 0);
	assert_int_equal(fake_calls, 0);
}

static void test_truncated_and_trailing(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	size_t full = q->n;
	for (size_t n = DNS_HDR_LEN; n < full; n++) {
		q->n = n;
		expect(q, DNS_RCODE_FORMERR, 0);
	}
	q->n = full;
	put(q, "x", 1);
	expect(q, DNS_RCODE_FORMERR, 0);
	assert_int_equal(fake_calls, 0);
}

static void test_dropped(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	for (size_t n = 0; n < DNS_HDR_LEN; n++)
		assert_int_equal(dns_answer(q->d, n, &ctx, out, sizeof(out), &outlen, &ev),
				 -EBADMSG);
	q->d[2] |= 0x80; /* a response: never answered, so two resolvers cannot ping-pong */
	assert_int_equal(ask(q), -EBADMSG);
	assert_int_equal(ev.verdict, EGRESS_DENY);
}

static void test_opcodes_notimp(void **state)
{
	for (unsigned op = 1; op < 16; op++) {
		struct q *q = query("allowed.com", DNS_TYPE_A);
		q->d[2] = (uint8_t)(op << 3);
		expect(q, DNS_RCODE_NOTIMP, 0);
		assert_int_equal(count(0), 0);
	}
	assert_int_equal(fake_calls, 0);
}

static void test_edns_opt_ignored(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	add_opt(q);
	expect(q, DNS_RCODE_NOERROR, 1);
	assert_int_equal(outlen, q->n - 15 + 16); /* the OPT is not echoed */
}

static void test_bad_additional(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	add_opt(q);
	q->d[q->n - 6] = 9; /* rdlen beyond the message */
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	add_opt(q);
	add_opt(q);
	q->d[11] = 2;
	expect(q, DNS_RCODE_FORMERR, 0);
	q = query("allowed.com", DNS_TYPE_A);
	add_opt(q);
	q->d[q->n - 13] = DNS_TYPE_TXT; /* an additional record that is not OPT */
	expect(q, DNS_RCODE_FORMERR, 0);
}

static void test_class_not_in_refused(void **state)
{
	struct q *q = query("version.bind", DNS_TYPE_TXT);
	q->d[q->n - 1] = 3; /* CH */
	expect(q, DNS_RCODE_REFUSED, 0);
	assert_string_equal(ev.rule, "refused-class");
	assert_int_equal(count(0), 1);
}

static void test_root_query(void **state)
{
	expect(query("", DNS_TYPE_NS), DNS_RCODE_NXDOMAIN, 0);
	assert_string_equal(ev.rule, "invalid-name");
}

static void test_pool_exhausted_servfail(void **state)
{
	fake_fail = true;
	expect(query("allowed.com", DNS_TYPE_A), DNS_RCODE_SERVFAIL, 0);
	assert_string_equal(ev.rule, "pool-exhausted");
}

static void test_oversized_query(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	add_opt(q);
	size_t pad = DNS_QUERY_MAX + 1 - q->n;
	q->d[q->n - 6] = (uint8_t)((4 + pad) >> 8);
	q->d[q->n - 5] = (uint8_t)(4 + pad);
	memset(q->d + q->n, 0, pad);
	q->n += pad;
	expect(q, DNS_RCODE_FORMERR, 0);
}

static void test_small_output_buffer(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	assert_int_equal(dns_answer(q->d, q->n, &ctx, out, q->n + 15, &outlen, NULL), -ENOBUFS);
	assert_int_equal(dns_answer(q->d, q->n, &ctx, out, q->n + 16, &outlen, NULL), 0);
}

static void test_tcp_framing(void **state)
{
	struct q *q = query("allowed.com", DNS_TYPE_A);
	uint8_t buf[1024];
	assert_int_equal(dns_tcp_prefix(buf, q->n), 0);
	memcpy(buf + 2, q->d, q->n);
	memcpy(buf + 2 + q->n, buf, 2 + q->n); /* two messages back to back */
	const uint8_t *msg;
	size_t mlen;
	for (size_t i = 0; i < q->n + 2; i++)
		assert_int_equal(dns_tcp_next(buf, i, &msg, &mlen), 0);
	assert_int_equal(dns_tcp_next(buf, 2 * (q->n + 2), &msg, &mlen), (int)q->n + 2);
	assert_ptr_equal(msg, buf + 2);
	assert_int_equal(mlen, q->n);
	assert_int_equal(dns_answer(msg, mlen, &ctx, out, sizeof(out), &outlen, &ev), 0);
	static const uint8_t tiny[] = {0, 11, 1, 2, 3};
	assert_int_equal(dns_tcp_next(tiny, sizeof(tiny), &msg, &mlen), -EBADMSG);
	assert_int_equal(dns_tcp_prefix(buf, 65536), -EMSGSIZE);
	assert_int_equal(dns_tcp_prefix(buf, 65535), 0);
	assert_int_equal(buf[0], 0xff);
}

static void test_strings(void **state)
{
	assert_string_equal(dns_rcode_str(DNS_RCODE_NXDOMAIN), "NXDOMAIN");
	assert_string_equal(dns_rcode_str(9), "RCODE-OTHER");
	assert_string_equal(dns_qtype_str(DNS_TYPE_HTTPS), "HTTPS");
	assert_null(dns_qtype_str(999));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_a_allowed_gets_fake_ip),
		T(test_case_preserved_in_echo),
		T(test_ttl_configurable),
		T(test_aaaa_https_svcb_empty),
		T(test_attack_dns_exfiltration_denied_name),
		T(test_attack_dns_exfiltration_txt_and_others),
		T(test_other_types_on_allowed_names_refused),
		T(test_deny_rule_wins),
		T(test_suffix_lookalikes_denied),
		T(test_port_only_rule_still_resolves),
		T(test_attack_ip_literal_queries),
		T(test_attack_dot_inside_label),
		T(test_attack_nul_and_binary_labels),
		T(test_attack_long_labels),
		T(test_attack_name_over_255),
		T(test_attack_compression_pointer_in_question),
		T(test_counts),
		T(test_truncated_and_trailing),
		T(test_dropped),
		T(test_opcodes_notimp),
		T(test_edns_opt_ignored),
		T(test_bad_additional),
		T(test_class_not_in_refused),
		T(test_root_query),
		T(test_pool_exhausted_servfail),
		T(test_oversized_query),
		T(test_small_output_buffer),
		T(test_tcp_framing),
		T(test_strings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
