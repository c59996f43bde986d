/* test-cgroup.c — cgroup knob values derived from a box's limits. */
#include <setjmp.h>
#include <signal.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runtime/ns/ns_cgroup.h"

static const struct ns_knob *get(const struct ns_knob *k, size_t n, const char *file)
{
	for (size_t i = 0; i < n; i++)
		if (streq(k[i].file, file))
			return &k[i];
	return NULL;
}

struct relist {
	const pid_t *pids;
	size_t n;
	size_t calls;
};

static size_t relist_fixed(void *ctx, pid_t **ret)
{
	struct relist *r = ctx;
	r->calls++;
	*ret = r->n ? xmalloc(r->n * sizeof(pid_t)) : NULL;
	if (r->n)
		memcpy(*ret, r->pids, r->n * sizeof(pid_t));
	return r->n;
}

static pid_t sleeper(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	assert_true(pid > 0);
	return pid;
}

/* A pid read from cgroup.procs whose process left the box before its pidfd was opened may
 * belong to a host process by then: only a pid the second reading still lists is killed. */
static void test_kill_pids_rechecks(void **state)
{
	(void)state;
	pid_t host = sleeper(), box = sleeper();
	pid_t first[] = {host, box};
	struct relist second = {.pids = &box, .n = 1};
	assert_int_equal(ns_cgroup_kill_pids(first, 2, relist_fixed, &second), 2);
	assert_int_equal(second.calls, 1);
	int st;
	assert_int_equal(waitpid(box, &st, 0), box);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	assert_int_equal(waitpid(host, &st, WNOHANG), 0); /* alive */
	kill(host, SIGKILL);
	assert_int_equal(waitpid(host, &st, 0), host);
	/* more than one batch of pidfds (256): every batch is checked against a new reading */
	enum { MANY = 300 };
	pid_t many[MANY];
	for (int i = 0; i < MANY; i++)
		many[i] = sleeper();
	struct relist all_but_first = {.pids = many + 1, .n = MANY - 1};
	assert_int_equal(ns_cgroup_kill_pids(many, MANY, relist_fixed, &all_but_first), MANY);
	assert_int_equal(all_but_first.calls, 2);
	for (int i = 1; i < MANY; i++) {
		assert_int_equal(waitpid(many[i], &st, 0), many[i]);
		assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	assert_int_equal(waitpid(many[0], &st, WNOHANG), 0);
	kill(many[0], SIGKILL);
	assert_int_equal(waitpid(many[0], &st, 0), many[0]);
	/* an empty first reading signals nothing and does not read again */
	assert_int_equal(ns_cgroup_kill_pids(NULL, 0, relist_fixed, &second), 0);
	assert_int_equal(second.calls, 1);
}

static void test_quota(void **state)
{
	(void)state;
	assert_int_equal(ns_cgroup_cpu_quota(1000), 100000);
	assert_int_equal(ns_cgroup_cpu_quota(500), 50000);
	assert_int_equal(ns_cgroup_cpu_quota(2500), 250000);
	assert_int_equal(ns_cgroup_cpu_quota(1), 1000);   /* the kernel's minimum */
	assert_int_equal(ns_cgroup_cpu_quota(UINT32_MAX), (uint64_t)UINT32_MAX * 100);
}

static void test_v2(void **state)
{
	(void)state;
	struct ns_limits lim = {.memory = 256u << 20, .pids = 100, .cpus_milli = 1500, .disk = 1};
	struct ns_knob k[NS_MAX_KNOBS];
	size_t n = ns_cgroup_knobs(2, &lim, k);
	assert_int_equal(n, 4);
	assert_string_equal(get(k, n, "memory.max")->value, "268435456");
	assert_string_equal(get(k, n, "memory.swap.max")->value, "0");
	assert_true(get(k, n, "memory.swap.max")->optional);
	assert_false(get(k, n, "memory.max")->optional);
	assert_string_equal(get(k, n, "pids.max")->value, "100");
	assert_string_equal(get(k, n, "cpu.max")->value, "150000 100000");
	lim.cpus_milli = 0;
	n = ns_cgroup_knobs(2, &lim, k);
	assert_int_equal(n, 3);
	assert_null(get(k, n, "cpu.max"));
}

static void test_v1(void **state)
{
	(void)state;
	struct ns_limits lim = {.memory = 1u << 30, .pids = 1024, .cpus_milli = 250, .disk = 1};
	struct ns_knob k[NS_MAX_KNOBS];
	size_t n = ns_cgroup_knobs(1, &lim, k);
	assert_int_equal(n, 5);
	const struct ns_knob *mem = get(k, n, "memory.limit_in_bytes"), *sw = get(k, n, "memory.memsw.limit_in_bytes");
	assert_string_equal(mem->value, "1073741824");
	assert_int_equal(mem->ctrl, NS_CG_MEMORY);
	assert_string_equal(sw->value, "1073741824");  /* memory+swap = memory: no swap */
	assert_true(sw->optional);
	assert_true(mem < sw);                         /* memsw may not be set below the limit */
	assert_int_equal(get(k, n, "pids.max")->ctrl, NS_CG_PIDS);
	assert_string_equal(get(k, n, "cpu.cfs_period_us")->value, "100000");
	assert_string_equal(get(k, n, "cpu.cfs_quota_us")->value, "25000");
	assert_int_equal(get(k, n, "cpu.cfs_quota_us")->ctrl, NS_CG_CPU);
	assert_true(get(k, n, "cpu.cfs_period_us") < get(k, n, "cpu.cfs_quota_us"));
	lim.cpus_milli = 0;
	assert_int_equal(ns_cgroup_knobs(1, &lim, k), 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quota),
		cmocka_unit_test(test_kill_pids_rechecks),
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
