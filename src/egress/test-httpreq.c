/* test-httpreq.c — the proxy request-head parser: the three target forms, Host checks, and the
 * request-smuggling and fronting tricks it must refuse (CL/TE variants, obs-fold, bare LF,
 * userinfo, Host mismatch, CONNECT with a pipelined second request). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "egress/httpreq.h"
#include "util/util.h"

static struct egress_httpreq req;

static void ok(const char *head)
{
	const char *why = NULL;
	memset(&req, 0x5a, sizeof(req));
	int r = egress_httpreq_parse(head, strlen(head), &req, &why);
	if (r != 1)
		fail_msg("refused (%d: %s): %s", r, why ? why : "?", head);
}

static void refused(const char *head, const char *want)
{
	const char *why = NULL;
	int r = egress_httpreq_parse(head, strlen(head), &req, &why);
	if (r != -EBADMSG)
		fail_msg("got %d, wanted refusal: %s", r, head);
	assert_non_null(why);
	if (want && !strstr(why, want))
		fail_msg("reason '%s' lacks '%s' for: %s", why, want, head);
}

static void test_connect(void **state)
{
	const char *h = "CONNECT API.GitHub.com:443 HTTP/1.1\r\nHost: api.github.com:443\r\n"
			"User-Agent: curl/7.88.1\r\n\r\n";
	ok(h);
	assert_int_equal(req.form, EGRESS_HTTP_CONNECT);
	assert_string_equal(req.method, "CONNECT");
	assert_string_equal(req.host, "api.github.com");
	assert_int_equal(req.port, 443);
	assert_int_equal(req.head_len, strlen(h));
	assert_true(req.upgrade);
	assert_int_equal(req.path_len, 0);
}

static void test_attack_connect_pipelined_second_request(void **state)
{
	static const char head[] = "CONNECT allowed.com:443 HTTP/1.1\r\nHost: allowed.com:443\r\n\r\n";
	static const char both[] = "CONNECT allowed.com:443 HTTP/1.1\r\nHost: allowed.com:443\r\n\r\n"
				   "GET http://evil.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n";
	ok(both);
	/* only the CONNECT head is consumed: the rest is tunnel data for the caller to check as
	 * TLS (SNI) — it is never taken as a second proxy request */
	assert_int_equal(req.head_len, strlen(head));
	assert_string_equal(req.host, "allowed.com");
}

static void test_pipelined_get_after_get(void **state)
{
	static const char first[] = "GET http://allowed.com/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n";
	char both[256];
	snprintf(both, sizeof(both), "%sGET http://evil.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n",
		 first);
	ok(both);
	assert_int_equal(req.head_len, strlen(first));
	assert_string_equal(req.host, "allowed.com");
}

static void test_connect_bad_targets(void **state)
{
	refused("CONNECT allowed.com HTTP/1.1\r\nHost: allowed.com\r\n\r\n", "host:port");
	refused("CONNECT 127.0.0.1:443 HTTP/1.1\r\n\r\n", "IP");
	refused("CONNECT [::1]:443 HTTP/1.1\r\n\r\n", "IP");
	refused("CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n", "IP");
	refused("CONNECT 2130706433:80 HTTP/1.1\r\n\r\n", "IP");
	refused("CONNECT 0x7f.1:80 HTTP/1.1\r\n\r\n", "IP");
	refused("CONNECT allowed.com:0 HTTP/1.1\r\n\r\n", NULL);
	refused("CONNECT allowed.com:99999 HTTP/1.1\r\n\r\n", NULL);
	refused("CONNECT /x HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
}

static void test_attack_connect_userinfo(void **state)
{
	refused("CONNECT allowed.com@evil.com:443 HTTP/1.1\r\n\r\n", NULL);
}

static void test_attack_connect_host_header_mismatch(void **state)
{
	refused("CONNECT allowed.com:443 HTTP/1.1\r\nHost: evil.com:443\r\n\r\n", "match");
	refused("CONNECT allowed.com:443 HTTP/1.1\r\nHost: allowed.com:8443\r\n\r\n", "match");
	ok("CONNECT allowed.com:443 HTTP/1.1\r\nHost: allowed.com\r\n\r\n");
	ok("CONNECT allowed.com:443 HTTP/1.0\r\n\r\n");
}

static void test_connect_with_body_refused(void **state)
{
	refused("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "body");
	refused("CONNECT a.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "body");
	ok("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
}

static void test_absolute_form(void **state)
{
	const char *h = "GET http://Example.COM./a/b?q=1&r=2 HTTP/1.1\r\nHost: example.com\r\n\r\n";
	ok(h);
	assert_int_equal(req.form, EGRESS_HTTP_ABSOLUTE);
	assert_string_equal(req.host, "example.com");
	assert_int_equal(req.port, 80);
	assert_int_equal(req.path_len, strlen("/a/b?q=1&r=2"));
	assert_memory_equal(h + req.path_off, "/a/b?q=1&r=2", req.path_len);
	assert_false(req.upgrade);
	assert_true(req.keep_alive);
	assert_int_equal(req.content_length, -1);
}

static void test_absolute_form_port_and_empty_path(void **state)
{
	const char *h = "HEAD http://a.com:8080 HTTP/1.1\r\nHost: A.com:8080\r\n\r\n";
	ok(h);
	assert_int_equal(req.port, 8080);
	assert_int_equal(req.path_len, 0);
	ok("GET HTTP://a.com/ HTTP/1.1\r\nHost: a.com:80\r\n\r\n");
}

static void test_attack_userinfo_in_absolute_url(void **state)
{
	refused("GET http://allowed.com@evil.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", "userinfo");
	refused("GET http://allowed.com:80@evil.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n",
		"userinfo");
	refused("GET http://user:pw@allowed.com/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n",
		"userinfo");
	refused("GET http://evil.com#@allowed.com/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n", NULL);
	refused("GET http://allowed.com\\@evil.com/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n", NULL);
}

static void test_attack_absolute_host_mismatch(void **state)
{
	refused("GET http://allowed.com/ HTTP/1.1\r\nHost: evil.com\r\n\r\n", "match");
	refused("GET http://evil.com/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n", "match");
	refused("GET http://allowed.com/ HTTP/1.1\r\nHost: allowed.com:8080\r\n\r\n", "match");
	refused("GET http://allowed.com.evil/ HTTP/1.1\r\nHost: allowed.com\r\n\r\n", "match");
}

static void test_absolute_missing_host(void **state)
{
	refused("GET http://a.com/ HTTP/1.1\r\n\r\n", "missing Host");
	ok("GET http://a.com/ HTTP/1.0\r\n\r\n");
	assert_false(req.keep_alive);
}

static void test_absolute_other_schemes_refused(void **state)
{
	refused("GET https://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n", "CONNECT");
	refused("GET ftp://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET a.com:80 HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused("OPTIONS * HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
}

static void test_attack_ip_literal_urls(void **state)
{
	refused("GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "IP");
	refused("GET http://2130706433/ HTTP/1.1\r\nHost: 2130706433\r\n\r\n", "IP");
	refused("GET http://0x7f000001/ HTTP/1.1\r\nHost: 0x7f000001\r\n\r\n", "IP");
	refused("GET http://0177.0.0.1/ HTTP/1.1\r\nHost: 0177.0.0.1\r\n\r\n", "IP");
	refused("GET http://127.1/ HTTP/1.1\r\nHost: 127.1\r\n\r\n", "IP");
	refused("GET http://[::1]/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", "IP");
	refused("GET http://[::ffff:127.0.0.1]/ HTTP/1.1\r\nHost: [::ffff:127.0.0.1]\r\n\r\n",
		"IP");
	refused("GET / HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", "IP");
	refused("GET / HTTP/1.1\r\nHost: [::ffff:a9fe:a9fe]\r\n\r\n", "IP");
}

static void test_origin_form(void **state)
{
	const char *h = "POST /upload HTTP/1.1\r\nHost: Allowed.COM:8080 \r\nContent-Length: 5\r\n"
			"\r\nhello";
	ok(h);
	assert_int_equal(req.form, EGRESS_HTTP_ORIGIN);
	assert_string_equal(req.host, "allowed.com");
	assert_int_equal(req.port, 8080);
	assert_int_equal(req.content_length, 5);
	assert_int_equal(req.head_len, strlen(h) - 5); /* the body is not part of the head */
	assert_memory_equal(h + req.path_off, "/upload", req.path_len);
	ok("GET / HTTP/1.1\r\nHost: allowed.com\r\n\r\n");
	assert_int_equal(req.port, 0); /* none given: the connection's */
}

static void test_origin_host_problems(void **state)
{
	refused("GET / HTTP/1.1\r\n\r\n", "missing Host");
	refused("GET / HTTP/1.0\r\n\r\n", "missing Host");
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nHost: b.com\r\n\r\n", "more than one Host");
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nhost: a.com\r\n\r\n", "more than one Host");
	refused("GET / HTTP/1.1\r\nHost: \r\n\r\n", "empty host");
	refused("GET / HTTP/1.1\r\nHost: a.com:x\r\n\r\n", "port");
	refused("GET / HTTP/1.1\r\nHost: allowed.com@evil.com\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com/evil\r\n\r\n", NULL);
}

static void test_chunked_request(void **state)
{
	const char *h = "POST http://a.com/x HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\n"
			"\r\n5\r\nhello\r\n0\r\n\r\n";
	ok(h);
	assert_true(req.chunked);
	assert_int_equal(req.content_length, -1);
	assert_int_equal(req.head_len, strstr(h, "\r\n\r\n") + 4 - h);
	ok("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding:  chunked \r\n\r\n");
}

static void test_attack_smuggling_cl_and_te(void **state)
{
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 4\r\n"
		"Transfer-Encoding: chunked\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\n"
		"Content-Length: 4\r\n\r\n", NULL);
}

static void test_attack_smuggling_double_cl(void **state)
{
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\n",
		NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\n",
		NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 4, 4\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: +4\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: -1\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 0x10\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 99999999999999999999999\r\n\r\n",
		NULL);
}

static void test_attack_smuggling_te_variants(void **state)
{
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\r\n"
		"Transfer-Encoding: identity\r\n\r\n", "more than one Transfer-Encoding");
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
		NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		"chunked");
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: xchunked\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: Chunked\r\n\r\n", "chunked");
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: identity\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: \"chunked\"\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding: chunked\x0b\r\n\r\n", NULL);
}

static void test_attack_smuggling_header_name_space(void **state)
{
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding : chunked\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nContent Length: 5\r\n\r\n", NULL);
	refused("POST / HTTP/1.1\r\nHost : evil.com\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\n: empty\r\n\r\n", NULL);
}

static void test_attack_smuggling_obs_fold(void **state)
{
	refused("POST / HTTP/1.1\r\nHost: a.com\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nX-A: 1\r\n\tX-B: 2\r\n\r\n", "CR or LF");
	refused("GET / HTTP/1.1\r\nHost: a.com\r\n evil.com\r\n\r\n", NULL);
}

static void test_attack_bare_lf_and_cr(void **state)
{
	refused("GET / HTTP/1.1\nHost: a.com\n\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\nX: y\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nX: a\rb\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\n\n", NULL);
}

static void test_attack_nul_and_controls_in_values(void **state)
{
	static const char nul[] = "GET / HTTP/1.1\r\nHost: allowed.com\0.evil.com\r\n\r\n";
	const char *why = NULL;
	assert_int_equal(egress_httpreq_parse(nul, sizeof(nul) - 1, &req, &why), -EBADMSG);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nX: a\x01" "b\r\n\r\n", NULL);
	refused("GET / HTTP/1.1\r\nHost: a.com\r\nX: a\x7f\r\n\r\n", NULL);
}

static void test_leading_empty_line_refused(void **state)
{
	refused("\r\nGET / HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused(" GET / HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
}

static void test_versions(void **state)
{
	refused("GET / HTTP/2.0\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET / HTTP/1.2\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET / HTTP/0.9\r\nHost: a.com\r\n\r\n", NULL);
	refused("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", NULL);
	refused("GET /\r\n\r\n", NULL);
}

static void test_request_line_exact(void **state)
{
	refused("GET  / HTTP/1.1\r\nHost: a.com\r\n\r\n", "request line");
	refused("GET /  HTTP/1.1\r\nHost: a.com\r\n\r\n", "request line");
	refused("GET / HTTP/1.1 \r\nHost: a.com\r\n\r\n", NULL);
	refused("GET\t/ HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused("get / HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET / http/1.1\r\nHost: a.com\r\n\r\n", NULL);
}

static void test_absolute_query_without_path(void **state)
{
	const char *h = "GET http://a.com?x=1 HTTP/1.1\r\nHost: a.com\r\n\r\n";
	ok(h);
	assert_memory_equal(h + req.path_off, "?x=1", req.path_len);
}

static void test_bad_target_bytes(void **state)
{
	refused("GET /\x80 HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
	refused("GET /a#frag HTTP/1.1\r\nHost: a.com\r\n\r\n", "fragment");
	refused("GET http://a.com/\x01 HTTP/1.1\r\nHost: a.com\r\n\r\n", NULL);
}

static void test_header_count_cap(void **state)
{
	char h[8192];
	size_t n = (size_t)snprintf(h, sizeof(h), "GET / HTTP/1.1\r\nHost: a.com\r\n");
	for (int i = 1; i < EGRESS_HTTP_HEADERS_MAX; i++)
		n += (size_t)snprintf(h + n, sizeof(h) - n, "X-%d: v\r\n", i);
	snprintf(h + n, sizeof(h) - n, "\r\n");
	ok(h);
	snprintf(h + n, sizeof(h) - n, "X-last: v\r\n\r\n");
	refused(h, "too many");
}

static void test_head_size_cap(void **state)
{
	size_t cap = EGRESS_HTTP_HEAD_MAX + 100;
	_cleanup_free_ char *h = xmalloc(cap + 1);
	size_t n = (size_t)snprintf(h, cap, "GET / HTTP/1.1\r\nHost: a.com\r\nX-Big: ");
	memset(h + n, 'a', cap - n);
	h[cap] = '\0';
	const char *why = NULL;
	assert_int_equal(egress_httpreq_parse(h, cap, &req, &why), -E2BIG);
	assert_non_null(strstr(why, "64 KiB"));
	/* still incomplete below the cap: need more */
	assert_int_equal(egress_httpreq_parse(h, EGRESS_HTTP_HEAD_MAX - 1, &req, &why), 0);
}

static void test_need_more_on_every_prefix(void **state)
{
	static const char h[] = "GET http://a.com/x HTTP/1.1\r\nHost: a.com\r\nAccept: */*\r\n\r\n";
	const char *why = NULL;
	for (size_t i = 0; i < sizeof(h) - 1; i++)
		if (egress_httpreq_parse(h, i, &req, &why) != 0)
			fail_msg("prefix %zu: %s", i, why);
	assert_int_equal(egress_httpreq_parse(h, sizeof(h) - 1, &req, &why), 1);
}

static void test_incremental_feed_byte_by_byte(void **state)
{
	static const char h[] = "POST http://a.com:81/x HTTP/1.1\r\nHost: a.com:81\r\n"
				"X-Long-Header-Name: some value here\r\nContent-Length: 3\r\n\r\nabc";
	struct egress_httpreq_state s;
	egress_httpreq_init(&s);
	const char *why = NULL;
	int r = 0;
	size_t i;
	for (i = 1; i <= sizeof(h) - 1 && r == 0; i++)
		r = egress_httpreq_feed(&s, h, i, &req, &why);
	assert_int_equal(r, 1);
	assert_int_equal(req.head_len, sizeof(h) - 1 - 3);
	assert_int_equal(i - 1, req.head_len);
	assert_string_equal(req.host, "a.com");
	assert_int_equal(req.port, 81);
	assert_int_equal(req.content_length, 3);
	/* a finished state refuses further use */
	assert_int_equal(egress_httpreq_feed(&s, h, sizeof(h) - 1, &req, &why), -EBADMSG);
}

static void test_incremental_refusal_split_header(void **state)
{
	static const char h[] = "GET / HTTP/1.1\r\nHost: a.com\r\nContent-Length: 1\r\n"
				"Content-Length: 2\r\n\r\n";
	struct egress_httpreq_state s;
	egress_httpreq_init(&s);
	const char *why = NULL;
	int r = 0;
	for (size_t i = 1; i <= sizeof(h) - 1 && r == 0; i++)
		r = egress_httpreq_feed(&s, h, i, &req, &why);
	assert_int_equal(r, -EBADMSG);
}

static void test_empty_header_value(void **state)
{
	ok("GET / HTTP/1.1\r\nX-Empty:\r\nHost: a.com\r\nX-Empty2: \r\n\r\n");
	assert_string_equal(req.host, "a.com");
}

/* "Expect: 100-continue" is taken and its exact line reported (the engine drops it: the 0.CL
 * desync needs a front that answers before the body); every other Expect is refused. */
static void test_expect(void **state)
{
	const char *h = "POST /u HTTP/1.1\r\nHost: a.com\r\nexpect:  100-Continue \r\nContent-Length: 3\r\n\r\nabc";
	ok(h);
	assert_int_equal(req.content_length, 3);
	assert_int_equal(req.expect_len, strlen("expect:  100-Continue \r\n"));
	assert_memory_equal(h + req.expect_off, "expect:  100-Continue \r\n", req.expect_len);
	ok("POST /u HTTP/1.1\r\nHost: a.com\r\nContent-Length: 3\r\n\r\nabc");
	assert_int_equal(req.expect_len, 0);
	refused("POST /u HTTP/1.1\r\nHost: a.com\r\nExpect: 100-continue\r\nExpect: 100-continue\r\n"
		"Content-Length: 3\r\n\r\nabc", "more than one Expect");
	refused("POST /u HTTP/1.1\r\nHost: a.com\r\nExpect: 200-ok\r\nContent-Length: 3\r\n\r\nabc", "Expect");
	refused("POST /u HTTP/1.1\r\nHost: a.com\r\nExpect: 100-continue, foo\r\n\r\n", "Expect");
}

/* A Content-Length past what int64 holds is refused, never read as "no body" */
static void test_huge_content_length(void **state)
{
	refused("POST /u HTTP/1.1\r\nHost: a.com\r\nContent-Length: 9223372036854775808\r\n\r\n", NULL);
	refused("POST /u HTTP/1.1\r\nHost: a.com\r\nContent-Length: 18446744073709551614\r\n\r\n", NULL);
	ok("POST /u HTTP/1.1\r\nHost: a.com\r\nContent-Length: 9223372036854775807\r\n\r\n");
	assert_true(req.content_length == INT64_MAX);
}

static void test_upgrade_flag(void **state)
{
	ok("GET /ws HTTP/1.1\r\nHost: a.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
	assert_true(req.upgrade);
	ok("GET / HTTP/1.1\r\nHost: a.com\r\nConnection: close\r\n\r\n");
	assert_false(req.keep_alive);
}

static void test_403_response(void **state)
{
	size_t n;
	_cleanup_free_ char *r = egress_http_403("host evil.com is not allowed", &n);
	assert_int_equal(n, strlen(r));
	assert_true(startswith(r, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null(strstr(r, "\r\nX-Paddock-Reason: host evil.com is not allowed\r\n"));
	assert_non_null(strstr(r, "\r\nConnection: close\r\n"));
	const char *body = strstr(r, "\r\n\r\n") + 4;
	char cl[64];
	snprintf(cl, sizeof(cl), "\r\nContent-Length: %zu\r\n", strlen(body));
	assert_non_null(strstr(r, cl));
	assert_string_equal(body, "paddock: host evil.com is not allowed\n");
}

static void test_attack_reason_header_injection(void **state)
{
	size_t n;
	_cleanup_free_ char *r = egress_http_response(400, "bad\r\nSet-Cookie: x=1\r\n\r\nHI", &n);
	assert_true(startswith(r, "HTTP/1.1 400 Bad Request\r\n"));
	assert_null(strstr(r, "\r\nSet-Cookie"));
	assert_non_null(strstr(r, "X-Paddock-Reason: bad??Set-Cookie: x=1????HI\r\n"));
	_cleanup_free_ char *z = egress_http_response(999, NULL, &n);
	assert_true(startswith(z, "HTTP/1.1 500 "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_expect),
		cmocka_unit_test(test_huge_content_length),
		cmocka_unit_test(test_attack_connect_pipelined_second_request),
		cmocka_unit_test(test_pipelined_get_after_get),
		cmocka_unit_test(test_connect_bad_targets),
		cmocka_unit_test(test_attack_connect_userinfo),
		cmocka_unit_test(test_attack_connect_host_header_mismatch),
		cmocka_unit_test(test_connect_with_body_refused),
		cmocka_unit_test(test_absolute_form),
		cmocka_unit_test(test_absolute_form_port_and_empty_path),
		cmocka_unit_test(test_attack_userinfo_in_absolute_url),
		cmocka_unit_test(test_attack_absolute_host_mismatch),
		cmocka_unit_test(test_absolute_missing_host),
		cmocka_unit_test(test_absolute_other_schemes_refused),
		cmocka_unit_test(test_attack_ip_literal_urls),
		cmocka_unit_test(test_origin_form),
		cmocka_unit_test(test_origin_host_problems),
		cmocka_unit_test(test_chunked_request),
		cmocka_unit_test(test_attack_smuggling_cl_and_te),
		cmocka_unit_test(test_attack_smuggling_double_cl),
		cmocka_unit_test(test_attack_smuggling_te_variants),
		cmocka_unit_test(test_attack_smuggling_header_name_space),
		cmocka_unit_test(test_attack_smuggling_obs_fold),
		cmocka_unit_test(test_attack_bare_lf_and_cr),
		cmocka_unit_test(test_attack_nul_and_controls_in_values),
		cmocka_unit_test(test_leading_empty_line_refused),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_request_line_exact),
		cmocka_unit_test(test_absolute_query_without_path),
		cmocka_unit_test(test_bad_target_bytes),
		cmocka_unit_test(test_header_count_cap),
		cmocka_unit_test(test_head_size_cap),
		cmocka_unit_test(test_need_more_on_every_prefix),
		cmocka_unit_test(test_incremental_feed_byte_by_byte),
		cmocka_unit_test(test_incremental_refusal_split_header),
		cmocka_unit_test(test_empty_header_value),
		cmocka_unit_test(test_upgrade_flag),
		cmocka_unit_test(test_403_response),
		cmocka_unit_test(test_attack_reason_header_injection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
