/* test-proto.c — unit tests for the frame and TLV codecs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "proto/proto.h"

static size_t frame(uint8_t *out, uint16_t type, uint32_t stream, const void *p, uint32_t len)
{
	struct proto_hdr h = {.type = type, .stream = stream, .len = len};
	proto_encode_hdr(out, &h);
	memcpy(out + PROTO_HDR_SIZE, p, len);
	return PROTO_HDR_SIZE + len;
}

static void test_hdr_roundtrip(void **state)
{
	uint8_t b[PROTO_HDR_SIZE];
	struct proto_hdr h = {.type = PROTO_STDOUT, .stream = 0xdeadbeef, .len = 77}, d;
	proto_encode_hdr(b, &h);
	assert_int_equal(proto_decode_hdr(b, &d), 0);
	assert_int_equal(d.type, PROTO_STDOUT);
	assert_int_equal(d.stream, 0xdeadbeef);
	assert_int_equal(d.len, 77);
	/* little-endian on the wire whatever the host */
	assert_int_equal(b[0], PROTO_STDOUT);
	assert_int_equal(b[4], 0xef);
}

static void test_hdr_rejects(void **state)
{
	uint8_t b[PROTO_HDR_SIZE];
	struct proto_hdr d;
	struct proto_hdr h = {.type = PROTO_TYPE_MAX, .len = 1};
	proto_encode_hdr(b, &h);
	assert_int_equal(proto_decode_hdr(b, &d), -EBADMSG);
	h = (struct proto_hdr){.type = PROTO_INVALID};
	proto_encode_hdr(b, &h);
	assert_int_equal(proto_decode_hdr(b, &d), -EBADMSG);
	h = (struct proto_hdr){.type = PROTO_STDIN, .len = PROTO_MAX_PAYLOAD + 1};
	proto_encode_hdr(b, &h);
	assert_int_equal(proto_decode_hdr(b, &d), -EMSGSIZE);
	h = (struct proto_hdr){.type = PROTO_STDIN, .flags = 1};
	proto_encode_hdr(b, &h);
	assert_int_equal(proto_decode_hdr(b, &d), -EBADMSG);
}

static void test_parse_partial(void **state)
{
	uint8_t b[64];
	size_t n = frame(b, PROTO_STDIN, 3, "hello", 5), used = 0;
	struct proto_frame f;
	for (size_t i = 0; i < n; i++)
		assert_int_equal(proto_parse(b, i, &f, &used), 0);
	assert_int_equal(proto_parse(b, n, &f, &used), 1);
	assert_int_equal(used, n);
	assert_memory_equal(f.payload, "hello", 5);
}

static void test_exec_roundtrip(void **state)
{
	char *argv[] = {"sh", "-c", "echo hi", NULL};
	char *envp[] = {"A=1", "PATH=/usr/bin", NULL};
	struct proto_buf b = {0};
	proto_encode_exec(&b, argv, envp, "/tmp", "root", true, 24, 80);
	uint8_t *raw = xmalloc(PROTO_HDR_SIZE + b.len);
	frame(raw, PROTO_EXEC, 1, b.data, (uint32_t)b.len);
	struct proto_frame f;
	size_t used;
	assert_int_equal(proto_parse(raw, PROTO_HDR_SIZE + b.len, &f, &used), 1);
	struct proto_exec *e = xmalloc(sizeof(*e));
	assert_int_equal(proto_decode_exec(&f, e), 0);
	assert_int_equal(e->argc, 3);
	assert_string_equal(e->argv[2], "echo hi");
	assert_null(e->argv[3]);
	assert_int_equal(e->envc, 2);
	assert_string_equal(e->cwd, "/tmp");
	assert_string_equal(e->user, "root");
	assert_true(e->tty);
	assert_int_equal(e->rows, 24);
	assert_int_equal(e->cols, 80);
	free(e);
	free(raw);
	proto_buf_free(&b);
}

static int decode_tlv(const void *p, uint32_t len)
{
	uint8_t raw[512];
	frame(raw, PROTO_EXEC, 1, p, len);
	struct proto_frame f = {.hdr = {.type = PROTO_EXEC, .len = len}, .payload = raw + PROTO_HDR_SIZE};
	struct proto_exec *e = xmalloc(sizeof(*e));
	int r = proto_decode_exec(&f, e);
	free(e);
	return r;
}

static void test_exec_rejects(void **state)
{
	struct proto_buf b = {0};
	/* no argv */
	proto_tlv_put_str(&b, PROTO_TAG_CWD, "/");
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	/* string without its NUL */
	proto_tlv_put(&b, PROTO_TAG_ARG, "ls", 2);
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	/* embedded NUL */
	proto_tlv_put(&b, PROTO_TAG_ARG, "l\0s", 4);
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	/* relative cwd, unknown user, env without '=' */
	proto_tlv_put_str(&b, PROTO_TAG_ARG, "ls");
	proto_tlv_put_str(&b, PROTO_TAG_CWD, "tmp");
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	proto_tlv_put_str(&b, PROTO_TAG_ARG, "ls");
	proto_tlv_put_str(&b, PROTO_TAG_USER, "daemon");
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	proto_tlv_put_str(&b, PROTO_TAG_ARG, "ls");
	proto_tlv_put_str(&b, PROTO_TAG_ENV, "NOEQUALS");
	assert_int_equal(decode_tlv(b.data, (uint32_t)b.len), -EBADMSG);
	proto_buf_free(&b);
	/* truncated TLV: length runs past the payload */
	uint8_t bad[8] = {PROTO_TAG_ARG, 0, 0xff, 0, 0, 0, 'x', 0};
	assert_int_equal(decode_tlv(bad, sizeof(bad)), -EBADMSG);
	/* unknown tag */
	uint8_t unk[7] = {0x7f, 0, 1, 0, 0, 0, 0};
	assert_int_equal(decode_tlv(unk, sizeof(unk)), -EBADMSG);
}

static void test_check_input(void **state)
{
	(void)state;
	uint8_t p[8] = {0};
	struct proto_frame f = {.hdr = {.type = PROTO_STDIN, .len = 0}, .payload = p};
	assert_int_equal(proto_check_input(&f), 0);
	f.hdr.type = PROTO_EOF, f.hdr.len = 1;
	for (p[0] = 0; p[0] <= 2; p[0]++)
		assert_int_equal(proto_check_input(&f), 0);
	assert_int_equal(proto_check_input(&f), -EBADMSG); /* 3 */
	f.hdr.len = 2, p[0] = 0;
	assert_int_equal(proto_check_input(&f), -EBADMSG);
	f.hdr.type = PROTO_RESIZE, f.hdr.len = 4;
	assert_int_equal(proto_check_input(&f), 0);
	f.hdr.len = 3;
	assert_int_equal(proto_check_input(&f), -EBADMSG);
	f.hdr.type = PROTO_SIGNAL, f.hdr.len = 4;
	const uint32_t bad[] = {0, 65, 1000, UINT32_MAX}, good[] = {1, 2, 9, 15, 64};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		proto_put_u32(p, bad[i]);
		assert_int_equal(proto_check_input(&f), -EBADMSG);
	}
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		proto_put_u32(p, good[i]);
		assert_int_equal(proto_check_input(&f), 0);
	}
	/* a grant for the session's output; stdin's is paddock-init's to give */
	f.hdr.type = PROTO_WINDOW, f.hdr.len = 5;
	p[0] = 1, proto_put_u32(p + 1, 4096);
	assert_int_equal(proto_check_input(&f), 0);
	p[0] = 0;
	assert_int_equal(proto_check_input(&f), -EBADMSG);
	f.hdr.type = PROTO_EXEC;
	assert_int_equal(proto_check_input(&f), -EBADMSG);
}

static int window(uint32_t len, uint8_t fd, uint32_t n, uint8_t *ret_fd, uint32_t *ret_n)
{
	uint8_t p[8] = {fd};
	proto_put_u32(p + 1, n);
	struct proto_frame f = {.hdr = {.type = PROTO_WINDOW, .len = len}, .payload = p};
	return proto_decode_window(&f, ret_fd, ret_n);
}

static void test_window_decode(void **state)
{
	(void)state;
	uint8_t fd = 9;
	uint32_t n = 7;
	assert_int_equal(window(5, 2, 65536, &fd, &n), 0);
	assert_int_equal(fd, 2);
	assert_int_equal(n, 65536);
	assert_int_equal(window(5, 0, PROTO_WINDOW_MAX, &fd, &n), 0);
	assert_int_equal(n, PROTO_WINDOW_MAX);
	/* nothing is written on a refusal */
	fd = 9, n = 7;
	assert_int_equal(window(5, 3, 1, &fd, &n), -EBADMSG);       /* no such stream */
	assert_int_equal(window(5, 1, 0, &fd, &n), -EBADMSG);       /* an empty grant */
	assert_int_equal(window(5, 1, PROTO_WINDOW_MAX + 1, &fd, &n), -EBADMSG);
	assert_int_equal(window(5, 1, UINT32_MAX, &fd, &n), -EBADMSG);
	assert_int_equal(window(4, 1, 1, &fd, &n), -EBADMSG);       /* short */
	assert_int_equal(window(6, 1, 1, &fd, &n), -EBADMSG);       /* long */
	assert_int_equal(fd, 9);
	assert_int_equal(n, 7);
	uint8_t p[5] = {1, 1, 0, 0, 0};
	struct proto_frame f = {.hdr = {.type = PROTO_STDIN, .len = 5}, .payload = p};
	assert_int_equal(proto_decode_window(&f, &fd, &n), -EBADMSG); /* another type */
}

static void test_credit(void **state)
{
	(void)state;
	uint32_t c = 0;
	assert_int_equal(proto_credit_take(&c, 0), 0);
	assert_int_equal(proto_credit_take(&c, 1), -EBADMSG);
	assert_int_equal(proto_credit_grant(&c, 100), 0);
	assert_int_equal(proto_credit_take(&c, 101), -EBADMSG);
	assert_int_equal(c, 100);
	assert_int_equal(proto_credit_take(&c, 60), 0);
	assert_int_equal(c, 40);
	/* the sum of grants may not pass the cap, however it is split; no wrap-around */
	assert_int_equal(proto_credit_grant(&c, PROTO_WINDOW_MAX - 40), 0);
	assert_int_equal(c, PROTO_WINDOW_MAX);
	assert_int_equal(proto_credit_grant(&c, 1), -EBADMSG);
	assert_int_equal(proto_credit_grant(&c, UINT32_MAX), -EBADMSG);
	assert_int_equal(c, PROTO_WINDOW_MAX);
	assert_int_equal(proto_credit_take(&c, PROTO_WINDOW_MAX), 0);
	assert_int_equal(c, 0);
}

/* The WINDOW frames queued on c (all for stream 5): the fd and n of each; empties the queue. */
static size_t queued_windows(struct proto_conn *c, uint8_t *fds, uint32_t *ns, size_t max)
{
	size_t k = 0, off = c->out_off, used;
	struct proto_frame f;
	while (off < c->out_len && proto_parse(c->out + off, c->out_len - off, &f, &used) == 1) {
		assert_int_equal(f.hdr.type, PROTO_WINDOW);
		assert_int_equal(f.hdr.stream, 5);
		assert_true(k < max);
		assert_int_equal(proto_decode_window(&f, &fds[k], &ns[k]), 0);
		k++;
		off += used;
	}
	c->out_off = c->out_len = 0;
	return k;
}

static void test_flow(void **state)
{
	(void)state;
	struct proto_conn c;
	struct proto_flow fl;
	uint8_t fds[4], p[8] = {0};
	uint32_t ns[4];
	proto_conn_init(&c, -1);
	/* off (a peer of an older minor): nothing is sent, nothing limited, no WINDOW accepted */
	proto_flow_start(&fl, &c, 5, false);
	assert_int_equal(proto_conn_pending(&c), 0);
	assert_int_equal(proto_flow_stdin_room(&fl, 1 << 20), 1 << 20);
	struct proto_frame out = {.hdr = {.type = PROTO_STDOUT, .stream = 5, .len = 1 << 20}, .payload = p};
	assert_int_equal(proto_flow_recv(&fl, &out), 0);
	struct proto_frame w = {.hdr = {.type = PROTO_WINDOW, .stream = 5, .len = 5}, .payload = p};
	proto_put_u32(p + 1, 10);
	assert_int_equal(proto_flow_recv(&fl, &w), -EBADMSG);
	proto_flow_delivered(&fl, &c, 5, 0, 1 << 20);
	assert_int_equal(proto_conn_pending(&c), 0);

	/* on: both outputs granted a window at once; stdin waits for the box's grant */
	proto_flow_start(&fl, &c, 5, true);
	assert_int_equal(queued_windows(&c, fds, ns, 4), 2);
	assert_int_equal(fds[0], 1);
	assert_int_equal(fds[1], 2);
	assert_int_equal(ns[0], PROTO_FLOW_WINDOW);
	assert_int_equal(ns[1], PROTO_FLOW_WINDOW);
	assert_int_equal(proto_flow_stdin_room(&fl, 100), 0);
	assert_int_equal(proto_flow_recv(&fl, &w), 1); /* WINDOW(0, 10) */
	assert_int_equal(proto_flow_stdin_room(&fl, 100), 10);
	assert_int_equal(proto_flow_stdin_room(&fl, 4), 4);
	proto_flow_stdin_sent(&fl, 10);
	assert_int_equal(proto_flow_stdin_room(&fl, 100), 0);
	p[0] = 1; /* a grant for our own output is not the box's to give */
	assert_int_equal(proto_flow_recv(&fl, &w), -EBADMSG);
	/* output: up to the window, each stream on its own */
	out.hdr.len = PROTO_FLOW_WINDOW;
	assert_int_equal(proto_flow_recv(&fl, &out), 0);
	out.hdr.len = 1;
	assert_int_equal(proto_flow_recv(&fl, &out), -EBADMSG);
	out.hdr.type = PROTO_STDERR;
	assert_int_equal(proto_flow_recv(&fl, &out), 0);
	/* delivered: granted again by the quarter window */
	proto_flow_delivered(&fl, &c, 5, 0, PROTO_FLOW_WINDOW / 4 - 1);
	assert_int_equal(proto_conn_pending(&c), 0);
	proto_flow_delivered(&fl, &c, 5, 0, 1);
	assert_int_equal(queued_windows(&c, fds, ns, 4), 1);
	assert_int_equal(fds[0], 1);
	assert_int_equal(ns[0], PROTO_FLOW_WINDOW / 4);
	out.hdr.type = PROTO_STDOUT, out.hdr.len = PROTO_FLOW_WINDOW / 4;
	assert_int_equal(proto_flow_recv(&fl, &out), 0);
	out.hdr.len = 1;
	assert_int_equal(proto_flow_recv(&fl, &out), -EBADMSG);
	proto_conn_free(&c);
}

static void test_error_roundtrip(void **state)
{
	struct proto_buf b = {0};
	proto_encode_error(&b, -ENOENT, "no such command");
	struct proto_frame f = {.hdr = {.type = PROTO_ERROR, .len = (uint32_t)b.len}, .payload = b.data};
	int e;
	const char *m;
	assert_int_equal(proto_decode_error(&f, &e, &m), 0);
	assert_int_equal(e, ENOENT);
	assert_string_equal(m, "no such command");
	proto_buf_free(&b);
}

static void test_conn_pipe(void **state)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct proto_conn w, r;
	proto_conn_init(&w, p[1]);
	proto_conn_init(&r, p[0]);
	for (int i = 0; i < 100; i++)
		proto_conn_send(&w, PROTO_STDOUT, 0, (uint32_t)i, "abcdef", (uint32_t)(i % 7));
	assert_int_equal(proto_conn_flush(&w), 0);
	proto_conn_free(&w);
	int got = 0;
	struct proto_frame f;
	while (proto_conn_read(&r) > 0)
		while (proto_conn_next(&r, &f) == 1) {
			assert_int_equal(f.hdr.stream, (uint32_t)got);
			assert_int_equal(f.hdr.len, (uint32_t)(got % 7));
			got++;
		}
	assert_int_equal(got, 100);
	assert_true(r.eof);
	proto_conn_free(&r);
}

static void test_minor(void **state)
{
	(void)state;
	unsetenv("PADDOCK_TESTING");
	setenv("PADDOCK_TEST_PROTO_MINOR", "1", 1);
	assert_int_equal(proto_minor(), PROTO_VERSION_MINOR); /* only in tests */
	setenv("PADDOCK_TESTING", "1", 1);
	assert_int_equal(proto_minor(), 1);
	const char *other[] = {"2", "9", "01", "", "x"}; /* never a newer one, nor garbage */
	for (size_t i = 0; i < ARRAY_SIZE(other); i++) {
		setenv("PADDOCK_TEST_PROTO_MINOR", other[i], 1);
		assert_int_equal(proto_minor(), PROTO_VERSION_MINOR);
	}
	unsetenv("PADDOCK_TESTING");
	unsetenv("PADDOCK_TEST_PROTO_MINOR");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_roundtrip),  cmocka_unit_test(test_hdr_rejects),
		cmocka_unit_test(test_parse_partial),  cmocka_unit_test(test_exec_roundtrip),
		cmocka_unit_test(test_exec_rejects),   cmocka_unit_test(test_error_roundtrip),
		cmocka_unit_test(test_conn_pipe),      cmocka_unit_test(test_check_input),
		cmocka_unit_test(test_window_decode),  cmocka_unit_test(test_credit),
		cmocka_unit_test(test_flow),           cmocka_unit_test(test_minor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
