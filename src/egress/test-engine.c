/* test-engine.c — the egress engine driven through a socketpair (the box's side) against a
 * loopback upstream that never reads: a box that pipelines a buffer full of HTTP/1.0
 * absolute-form proxy requests (each rewritten to origin-form with a Host line, 2 bytes
 * longer) without reading any answer must never push a buffer past its bound (under ASan: no
 * heap-buffer-overflow; without: no crash); the connection is refused instead. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "egress/audit.h"
#include "egress/dial.h"
#include "egress/engine.h"
#include "egress/policy.h"
#include "net/fakeip.h"
#include "util/fdio.h"
#include "util/util.h"

/* An engine allowing a.test (--resolve'd to a loopback upstream listening on fx->port) with
 * one explicit-proxy connection whose box side is fx->box. */
struct fx {
	int ls, box;
	unsigned port;
	char logpath[64];
	struct egress_policy *p;
	struct egress_resolve_map *m;
	struct fakeip_pool *pool;
	struct egress_audit *au;
	struct egress_engine *e;
};

static void fx_setup(struct fx *f, int upstream_rcvbuf)
{
	memset(f, 0, sizeof(*f));
	f->ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	assert_true(f->ls >= 0);
	if (upstream_rcvbuf)
		setsockopt(f->ls, SOL_SOCKET, SO_RCVBUF, &upstream_rcvbuf, sizeof(upstream_rcvbuf));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(f->ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(f->ls, 8), 0);
	assert_int_equal(getsockname(f->ls, (struct sockaddr *)&sa, &sl), 0);
	f->port = ntohs(sa.sin_port);
	pd_err err = {0};
	f->p = egress_policy_new();
	assert_int_equal(egress_policy_add(f->p, "a.test:*", false, &err), 0);
	char *map[] = {"a.test=127.0.0.1", NULL};
	assert_int_equal(egress_resolve_map_new(map, &f->m, &err), 0);
	assert_int_equal(fakeip_pool_new((struct in_addr){htonl(0xc6120000)}, 16, 60, &f->pool), 0);
	snprintf(f->logpath, sizeof(f->logpath), "/tmp/test-engine-XXXXXX");
	int lfd = mkstemp(f->logpath);
	assert_true(lfd >= 0);
	close(lfd);
	assert_int_equal(egress_audit_open(f->logpath, &f->au), 0);
	f->e = egress_engine_new("t", f->au, f->m, f->pool);
	egress_engine_set_policy(f->e, f->p);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fd_set_nonblock(sv[1], true), 0);
	egress_engine_add(f->e, sv[0], EGRESS_CONN_PROXY, (struct in_addr){0}, 3128);
	f->box = sv[1];
}

static void fx_step(struct fx *f)
{
	struct pollfd pfd[64];
	size_t n = 0;
	int to = 5;
	egress_engine_fill(f->e, pfd, &n, 64, &to);
	(void)poll(pfd, n, to);
	egress_engine_dispatch(f->e, pfd);
}

static void fx_teardown(struct fx *f)
{
	egress_engine_free(f->e);
	egress_audit_close(f->au);
	unlink(f->logpath);
	fakeip_pool_free(f->pool);
	egress_resolve_map_free(f->m);
	egress_policy_free(f->p);
	close(f->box);
	close(f->ls);
}

static void test_pipelined_absolute_requests_stay_in_bounds(void **state)
{
	(void)state;
	struct fx f;
	fx_setup(&f, 4096); /* the upstream accepts (the kernel does, into the backlog), never reads */
	char req[128];
	snprintf(req, sizeof(req), "GET http://a.test:%u HTTP/1.0\r\n\r\n", f.port);
	size_t rl = strlen(req), bl = 0, sent = 0;
	static char big[1 << 16];
	while (bl + rl < sizeof(big)) {
		memcpy(big + bl, req, rl);
		bl += rl;
	}
	for (int round = 0; round < 20000 && egress_engine_count(f.e) > 0; round++) {
		fx_step(&f);
		ssize_t w = write(f.box, big + (sent % rl), bl - (sent % rl));
		if (w > 0)
			sent += (size_t)w;
	}
	/* the engine ended the connection (with its reason in the audit log) before the box
	 * could push a rewrite past the buffer's end */
	assert_int_equal(egress_engine_count(f.e), 0);
	_cleanup_free_ char *log = NULL;
	size_t loglen = 0;
	assert_int_equal(read_file_at(AT_FDCWD, f.logpath, 1 << 20, &log, &loglen), 0);
	assert_non_null(strstr(log, "request-too-large"));
	fx_teardown(&f);
}

/* "Expect: 100-continue" never reaches the upstream (a front that answered before the body
 * would take the body for the next request): the request arrives without that line, with its
 * body, and nothing else changed. */
static void test_expect_line_is_dropped(void **state)
{
	(void)state;
	struct fx f;
	fx_setup(&f, 0);
	char req[256], want[256], got[512];
	snprintf(req, sizeof(req), "POST http://a.test:%u/u HTTP/1.1\r\nHost: a.test:%u\r\nExpect: 100-continue\r\n"
		 "Content-Length: 3\r\n\r\nabc", f.port, f.port);
	snprintf(want, sizeof(want), "POST /u HTTP/1.1\r\nHost: a.test:%u\r\nContent-Length: 3\r\n\r\nabc", f.port);
	assert_int_equal(write(f.box, req, strlen(req)), (ssize_t)strlen(req));
	int up = -1;
	size_t glen = 0;
	for (int round = 0; round < 400 && glen < strlen(want); round++) {
		fx_step(&f);
		if (up < 0)
			up = accept4(f.ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		ssize_t r = up >= 0 ? read(up, got + glen, sizeof(got) - 1 - glen) : -1;
		if (r > 0)
			glen += (size_t)r;
	}
	got[glen] = '\0';
	assert_string_equal(got, want);
	close(up);
	fx_teardown(&f);
}

static unsigned fake_port;

/* b.test "resolves" to this host's loopback, as an address the host answers for without the
 * resolver's range check knowing (a local route) would */
static int resolve_to_self(const char *name, uint16_t port, struct sockaddr_storage *ret, socklen_t *ret_len,
			   const char **ret_reason)
{
	(void)name, (void)port, (void)ret_reason;
	struct sockaddr_in *in = (struct sockaddr_in *)ret;
	memset(ret, 0, sizeof(*ret));
	in->sin_family = AF_INET;
	in->sin_port = htons((uint16_t)fake_port);
	in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*ret_len = sizeof(*in);
	return 0;
}

/* A connection whose two ends are the same address stayed on this host: refused after the
 * connect (host-address) unless --resolve named the address; nothing reaches the listener. */
static void test_connection_to_the_host_itself_is_refused(void **state)
{
	(void)state;
	struct fx f;
	fx_setup(&f, 0);
	pd_err err = {0};
	assert_int_equal(egress_policy_add(f.p, "b.test:*", false, &err), 0);
	fake_port = f.port;
	egress_engine_set_resolve_fn(f.e, resolve_to_self);
	char req[128];
	snprintf(req, sizeof(req), "CONNECT b.test:%u HTTP/1.1\r\nHost: b.test:%u\r\n\r\n", f.port, f.port);
	assert_int_equal(write(f.box, req, strlen(req)), (ssize_t)strlen(req));
	int up = -1;
	char got[64];
	ssize_t r = 0;
	for (int round = 0; round < 400 && egress_engine_count(f.e) > 0; round++) {
		fx_step(&f);
		if (up < 0)
			up = accept4(f.ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (up >= 0 && r <= 0)
			r = read(up, got, sizeof(got));
	}
	assert_int_equal(egress_engine_count(f.e), 0);
	assert_true(r <= 0); /* the listener got no byte of the box's */
	_cleanup_free_ char *log = NULL;
	size_t loglen = 0;
	assert_int_equal(read_file_at(AT_FDCWD, f.logpath, 1 << 20, &log, &loglen), 0);
	if (!strstr(log, "host-address"))
		fail_msg("no host-address refusal in the audit log: %s", log);
	if (up >= 0)
		close(up);
	fx_teardown(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as in the supervisor */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined_absolute_requests_stay_in_bounds),
		cmocka_unit_test(test_expect_line_is_dropped),
		cmocka_unit_test(test_connection_to_the_host_itself_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
