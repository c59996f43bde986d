/* test-cgroup.c — cgroup knob values derived from a box's limits. */
#include <setjmp.h>
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
		cmocka_unit_test(test_v2),
		cmocka_unit_test(test_v1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
