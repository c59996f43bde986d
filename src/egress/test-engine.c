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

static void test_pipelined_absolute_requests_stay_in_bounds(void **state)
{
	(void)state;
	/* the upstream: accepts (the kernel does, into the backlog) and never reads */
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(ls >= 0);
	int small = 4096;
	setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 8), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	unsigned port = ntohs(sa.sin_port);

	pd_err err = {0};
	struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_add(p, "a.test:*", false, &err), 0);
	char *map[] = {"a.test=127.0.0.1", NULL};
	struct egress_resolve_map *m = NULL;
	assert_int_equal(egress_resolve_map_new(map, &m, &err), 0);
	struct fakeip_pool *pool = NULL;
	assert_int_equal(fakeip_pool_new((struct in_addr){htonl(0xc6120000)}, 16, 60, &pool), 0);
	char logpath[] = "/tmp/test-engine-XXXXXX";
	int lfd = mkstemp(logpath);
	assert_true(lfd >= 0);
	close(lfd);
	struct egress_audit *au = NULL;
	assert_int_equal(egress_audit_open(logpath, &au), 0);
	struct egress_engine *e = egress_engine_new("t", au, m, pool);
	egress_engine_set_policy(e, p);

	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fd_set_nonblock(sv[1], true), 0);
	egress_engine_add(e, sv[0], EGRESS_CONN_PROXY, (struct in_addr){0}, 3128);

	char req[128];
	snprintf(req, sizeof(req), "GET http://a.test:%u HTTP/1.0\r\n\r\n", port);
	size_t rl = strlen(req), bl = 0, sent = 0;
	static char big[1 << 16];
	while (bl + rl < sizeof(big)) {
		memcpy(big + bl, req, rl);
		bl += rl;
	}
	struct pollfd pfd[64];
	int round;
	for (round = 0; round < 20000 && egress_engine_count(e) > 0; round++) {
		size_t n = 0;
		int to = 5;
		egress_engine_fill(e, pfd, &n, 64, &to);
		(void)poll(pfd, n, to);
		egress_engine_dispatch(e, pfd);
		ssize_t w = write(sv[1], big + (sent % rl), bl - (sent % rl));
		if (w > 0)
			sent += (size_t)w;
	}
	/* the engine ended the connection (with its reason in the audit log) before the box
	 * could push a rewrite past the buffer's end */
	assert_int_equal(egress_engine_count(e), 0);
	_cleanup_free_ char *log = NULL;
	size_t loglen = 0;
	assert_int_equal(read_file_at(AT_FDCWD, logpath, 1 << 20, &log, &loglen), 0);
	assert_non_null(strstr(log, "request-too-large"));

	egress_engine_free(e);
	egress_audit_close(au);
	unlink(logpath);
	fakeip_pool_free(pool);
	egress_resolve_map_free(m);
	egress_policy_free(p);
	close(sv[1]);
	close(ls);
}

/* "Expect: 100-continue" never reaches the upstream (a front that answered before the body
 * would take the body for the next request): the request arrives without that line, with its
 * body, and nothing else changed. */
static void test_expect_line_is_dropped(void **state)
{
	(void)state;
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(ls, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(ls, 8), 0);
	assert_int_equal(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
	unsigned port = ntohs(sa.sin_port);
	pd_err err = {0};
	struct egress_policy *p = egress_policy_new();
	assert_int_equal(egress_policy_add(p, "a.test:*", false, &err), 0);
	char *map[] = {"a.test=127.0.0.1", NULL};
	struct egress_resolve_map *m = NULL;
	assert_int_equal(egress_resolve_map_new(map, &m, &err), 0);
	struct fakeip_pool *pool = NULL;
	assert_int_equal(fakeip_pool_new((struct in_addr){htonl(0xc6120000)}, 16, 60, &pool), 0);
	struct egress_engine *e = egress_engine_new("t", NULL, m, pool);
	egress_engine_set_policy(e, p);
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	egress_engine_add(e, sv[0], EGRESS_CONN_PROXY, (struct in_addr){0}, 3128);
	char req[256], want[256];
	snprintf(req, sizeof(req), "POST http://a.test:%u/u HTTP/1.1\r\nHost: a.test:%u\r\nExpect: 100-continue\r\n"
		 "Content-Length: 3\r\n\r\nabc", port, port);
	snprintf(want, sizeof(want), "POST /u HTTP/1.1\r\nHost: a.test:%u\r\nContent-Length: 3\r\n\r\nabc", port);
	assert_int_equal(write(sv[1], req, strlen(req)), (ssize_t)strlen(req));
	int up = -1;
	char got[512];
	size_t glen = 0;
	for (int round = 0; round < 400 && glen < strlen(want); round++) {
		struct pollfd pfd[65];
		size_t n = 0;
		int to = 5;
		egress_engine_fill(e, pfd, &n, 64, &to);
		(void)poll(pfd, n, to);
		egress_engine_dispatch(e, pfd);
		if (up < 0)
			up = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (up >= 0) {
			ssize_t r = read(up, got + glen, sizeof(got) - 1 - glen);
			if (r > 0)
				glen += (size_t)r;
		}
	}
	got[glen] = '\0';
	assert_string_equal(got, want);
	egress_engine_free(e);
	fakeip_pool_free(pool);
	egress_resolve_map_free(m);
	egress_policy_free(p);
	close(sv[1]);
	close(up);
	close(ls);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN); /* as in the supervisor */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pipelined_absolute_requests_stay_in_bounds),
		cmocka_unit_test(test_expect_line_is_dropped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
