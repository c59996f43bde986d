/* test-resolver.c — resolution off the network thread: a slow name does not hold up a fast
 * one, answers carry their request's id and the resolver's verdict, freeing never waits for
 * a resolution in progress, and the real host resolver's answer for localhost is refused
 * (loopback) unless --resolve said so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "egress/resolver.h"
#include "util/util.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* slow.test takes 1.5 s; fast.test answers 192.0.2.7 at once; anything else does not resolve */
static int fake(const char *name, uint16_t port, struct sockaddr_storage *ret, socklen_t *ret_len,
		const char **ret_reason)
{
	if (streq(name, "slow.test"))
		usleep(1500 * 1000);
	if (!streq(name, "fast.test") && !streq(name, "slow.test")) {
		*ret_reason = "does-not-resolve";
		return -ENOENT;
	}
	struct sockaddr_in *in = (struct sockaddr_in *)ret;
	memset(ret, 0, sizeof(*ret));
	in->sin_family = AF_INET;
	in->sin_port = htons(port);
	inet_pton(AF_INET, "192.0.2.7", &in->sin_addr);
	*ret_len = sizeof(*in);
	return 0;
}

/* waits (up to max_ms) for the next answer */
static bool next_within(struct egress_resolver *r, int max_ms, struct egress_resolved *a)
{
	int64_t end = now_ms() + max_ms;
	for (;;) {
		if (egress_resolver_next(r, a) == 1)
			return true;
		int left = (int)(end - now_ms());
		if (left <= 0)
			return false;
		struct pollfd p = {.fd = egress_resolver_fd(r), .events = POLLIN};
		poll(&p, 1, left);
	}
}

static void test_slow_name_does_not_hold_up_a_fast_one(void **state)
{
	(void)state;
	struct egress_resolver *r = NULL;
	assert_int_equal(egress_resolver_new_with(fake, &r), 0);
	assert_int_equal(egress_resolver_submit(r, 1, "slow.test", 443), 0);
	assert_int_equal(egress_resolver_submit(r, 2, "fast.test", 8443), 0);
	assert_int_equal(egress_resolver_submit(r, 3, "nope.test", 80), 0);
	int64_t t0 = now_ms();
	struct egress_resolved a, b;
	assert_true(next_within(r, 1000, &a));
	assert_true(next_within(r, 1000, &b));
	assert_true(now_ms() - t0 < 1000); /* both before the slow one is done */
	if (a.id == 3) {
		struct egress_resolved t = a;
		a = b;
		b = t;
	}
	assert_int_equal(a.id, 2);
	assert_int_equal(a.err, 0);
	assert_int_equal(ntohs(((struct sockaddr_in *)&a.addr)->sin_port), 8443);
	assert_int_equal(b.id, 3);
	assert_int_equal(b.err, -ENOENT);
	assert_string_equal(b.reason, "does-not-resolve");
	struct egress_resolved c;
	assert_true(next_within(r, 3000, &c));
	assert_int_equal(c.id, 1);
	assert_int_equal(c.err, 0);
	assert_int_equal(egress_resolver_next(r, &c), 0);
	egress_resolver_free(r);
}

static void test_free_does_not_wait_for_a_resolution(void **state)
{
	(void)state;
	struct egress_resolver *r = NULL;
	assert_int_equal(egress_resolver_new_with(fake, &r), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(egress_resolver_submit(r, (uint64_t)i, "slow.test", 443), 0);
	usleep(50 * 1000); /* the workers are inside the slow call now */
	int64_t t0 = now_ms();
	egress_resolver_free(r);
	assert_true(now_ms() - t0 < 200);
	usleep(1700 * 1000); /* the detached workers finish and free what is left (ASan: no leak) */
}

static void test_host_answer_for_localhost_is_refused(void **state)
{
	(void)state;
	struct egress_resolver *r = NULL;
	assert_int_equal(egress_resolver_new(&r), 0);
	assert_int_equal(egress_resolver_submit(r, 7, "localhost", 80), 0);
	struct egress_resolved a;
	assert_true(next_within(r, 10000, &a));
	assert_int_equal(a.id, 7);
	assert_int_equal(a.err, -EHOSTUNREACH);
	assert_string_equal(a.reason, "loopback");
	egress_resolver_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slow_name_does_not_hold_up_a_fast_one),
		cmocka_unit_test(test_free_does_not_wait_for_a_resolution),
		cmocka_unit_test(test_host_answer_for_localhost_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
