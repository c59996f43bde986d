/* test-poller.c — poller_poll answers like poll(2): readiness, interest changes between
 * rounds, fds left out of a round, a reused fd number, a stale registration kept alive by a
 * duplicate, hang-ups, bad and negative fds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "net/poller.h"
#include "util/util.h"

static struct poller *P;

static int setup(void **state)
{
	(void)state;
	return poller_new(&P);
}

static int teardown(void **state)
{
	(void)state;
	poller_free(P);
	P = NULL;
	return 0;
}

static short poll1(int fd, short events, int timeout)
{
	struct pollfd p = {.fd = fd, .events = events, .revents = 0x7fff};
	int r = poller_poll(P, &p, 1, timeout);
	assert_true(r == 0 || r == 1);
	assert_int_equal(r, p.revents != 0);
	return p.revents;
}

static void test_readable_and_writable(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(poll1(p[0], POLLIN, 0), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	assert_int_equal(poll1(p[0], POLLIN, 0), POLLIN);
	/* same interest, no change: still reported (level-triggered) */
	assert_int_equal(poll1(p[0], POLLIN, 0), POLLIN);
	/* interest changed to nothing: not reported */
	assert_int_equal(poll1(p[0], 0, 0), 0);
	assert_int_equal(poll1(p[1], POLLOUT, 0), POLLOUT);
	close(p[0]);
	close(p[1]);
}

static void test_left_out_then_back(void **state)
{
	(void)state;
	int a[2], b[2];
	assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(write(a[1], "x", 1), 1);
	struct pollfd two[2] = {{.fd = a[0], .events = POLLIN}, {.fd = b[0], .events = POLLIN}};
	assert_int_equal(poller_poll(P, two, 2, 0), 1);
	assert_int_equal(two[0].revents, POLLIN);
	assert_int_equal(two[1].revents, 0);
	/* a round without a[0]: only b[0] is asked about, a[0]'s readiness must not leak in */
	assert_int_equal(poll1(b[0], POLLIN, 0), 0);
	assert_int_equal(write(b[1], "y", 1), 1);
	assert_int_equal(poll1(b[0], POLLIN, 0), POLLIN);
	assert_int_equal(poll1(a[0], POLLIN, 0), POLLIN);
	for (int i = 0; i < 2; i++)
		close(a[i]), close(b[i]);
}

static void test_reused_number(void **state)
{
	(void)state;
	int a[2], b[2];
	assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(poll1(a[0], POLLIN, 0), 0);
	int num = a[0];
	close(a[0]);
	close(a[1]);
	assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(b[0], num); /* the lowest free number again */
	poller_fresh(P, b[0]);
	assert_int_equal(write(b[1], "x", 1), 1);
	assert_int_equal(poll1(b[0], POLLIN, 0), POLLIN);
	close(b[0]);
	close(b[1]);
}

/* A closed file still open elsewhere (a forked child's copy) keeps its epoll registration
 * under the old number; its events must not be taken for the new file's. */
static void test_stale_registration_ignored(void **state)
{
	(void)state;
	int a[2], b[2];
	assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(poll1(a[0], POLLIN, 0), 0);
	int keep = fcntl(a[0], F_DUPFD_CLOEXEC, 100);
	assert_true(keep >= 100);
	int num = a[0];
	close(a[0]);
	assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(b[0], num);
	poller_fresh(P, b[0]);
	assert_int_equal(write(a[1], "old", 3), 3); /* the old file is readable, the new one not */
	assert_int_equal(poll1(b[0], POLLIN, 0), 0);
	/* more stale registrations than there are live fds: the live one is still heard */
	int more[12];
	for (int i = 0; i < 12; i++) {
		int q[2];
		assert_int_equal(pipe2(q, O_CLOEXEC | O_NONBLOCK), 0);
		poller_fresh(P, q[0]);
		assert_int_equal(poll1(q[0], POLLIN, 0), 0);
		more[i] = fcntl(q[0], F_DUPFD_CLOEXEC, 200);
		assert_int_equal(write(q[1], "x", 1), 1);
		close(q[0]);
		close(q[1]);
	}
	assert_int_equal(write(b[1], "new", 3), 3);
	assert_int_equal(poll1(b[0], POLLIN, 0), POLLIN);
	close(keep);
	for (int i = 0; i < 12; i++)
		close(more[i]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void test_hangup_bad_and_negative(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	close(p[1]);
	/* POLLHUP comes whatever was asked */
	assert_int_equal(poll1(p[0], 0, 0), POLLHUP);
	close(p[0]);
	assert_int_equal(poll1(999, POLLIN, 0), POLLNVAL);
	struct pollfd neg = {.fd = -1, .events = POLLIN, .revents = POLLIN};
	assert_int_equal(poller_poll(P, &neg, 1, 0), 0);
	assert_int_equal(neg.revents, 0);
}

static void test_same_fd_twice_in_a_round(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	struct pollfd two[2] = {{.fd = p[0], .events = 0}, {.fd = p[0], .events = POLLIN}};
	assert_int_equal(poller_poll(P, two, 2, 0), 1);
	assert_int_equal(two[0].revents, 0);
	assert_int_equal(two[1].revents, POLLIN);
	close(p[0]);
	close(p[1]);
}

static void test_waits_for_the_timeout(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(poll1(p[0], POLLIN, 50), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 45);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_readable_and_writable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_out_then_back, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reused_number, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_registration_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hangup_bad_and_negative, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_fd_twice_in_a_round, setup, teardown),
		cmocka_unit_test_setup_teardown(test_waits_for_the_timeout, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
