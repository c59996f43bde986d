/* test-layer.c — layer names, fault-injection parsing, limits, name and path validation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runtime/ns/ns.h"

static void test_layer_names(void **state)
{
	(void)state;
	for (int l = NS_LAYER_INVALID + 1; l < NS_LAYER_MAX; l++) {
		assert_string_not_equal(ns_layer_name(l), "unknown");
		assert_true(strlen(ns_layer_hint(l)) > 10);
	}
	assert_string_equal(ns_layer_name(NS_LAYER_INVALID), "unknown");
	assert_string_equal(ns_layer_name(NS_LAYER_MAX), "unknown");
	assert_non_null(strstr(ns_layer_hint(NS_LAYER_CGROUP), "sudo paddock system setup --user $USER"));
}

static void test_fail_mask(void **state)
{
	(void)state;
	const char *names[] = {"cgroup", "userns", "mount", "landlock", "seccomp", "rlimit", "caps", "pivot"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++)
		assert_int_not_equal(ns_fail_mask_parse(names[i]), 0);
	assert_int_equal(ns_fail_mask_parse("cgroup,landlock"), (1u << NS_LAYER_CGROUP) | (1u << NS_LAYER_LANDLOCK));
	assert_int_equal(ns_fail_mask_parse("mount,,pivot,"), (1u << NS_LAYER_MOUNT) | (1u << NS_LAYER_PIVOT));
	assert_int_equal(ns_fail_mask_parse("bogus"), 0);
	assert_int_equal(ns_fail_mask_parse("cgroupx,cgrou"), 0);
	assert_int_equal(ns_fail_mask_parse(""), 0);
	assert_int_equal(ns_fail_mask_parse(NULL), 0);
}

static void test_fail_mask_needs_testing(void **state)
{
	(void)state;
	struct box_config cfg = {.test_fail_layer = "seccomp"};
	unsetenv("PADDOCK_TESTING");
	assert_int_equal(ns_fail_mask_from_cfg(&cfg), 0);
	setenv("PADDOCK_TESTING", "0", 1);
	assert_int_equal(ns_fail_mask_from_cfg(&cfg), 0);
	setenv("PADDOCK_TESTING", "1", 1);
	assert_int_equal(ns_fail_mask_from_cfg(&cfg), 1u << NS_LAYER_SECCOMP);
	unsetenv("PADDOCK_TESTING");
}

static void test_limits(void **state)
{
	(void)state;
	struct box_config cfg = {0};
	struct ns_limits l;
	ns_limits_from_cfg(&cfg, &l);
	/* the default disk (2 GiB) is capped by the default memory (2 GiB): less /dev/shm's
	 * quarter and the 512 MiB reserve */
	assert_true(l.memory == NS_DEFAULT_MEMORY && l.pids == NS_DEFAULT_PIDS && l.disk == (UINT64_C(1) << 30));
	assert_int_equal(l.cpus_milli, 0);
	cfg = (struct box_config){.memory = 1 << 20, .pids = 7, .disk = 3 << 20, .cpus_milli = 1500};
	ns_limits_from_cfg(&cfg, &l);
	assert_true(l.memory == 1 << 20 && l.pids == 7 && l.disk == 3 << 20 && l.cpus_milli == 1500);
	/* a disk larger than the memory can hold is capped: 512 MiB - 128 (shm) - 128 (reserve) */
	assert_true(ns_disk_cap(UINT64_C(2) << 30, UINT64_C(512) << 20) == UINT64_C(256) << 20);
	assert_true(ns_disk_cap(UINT64_C(100) << 20, UINT64_C(512) << 20) == UINT64_C(100) << 20);
	assert_true(ns_disk_cap(UINT64_C(64) << 30, UINT64_C(8) << 30) == (UINT64_C(8) << 30) - (UINT64_C(2) << 30) - (UINT64_C(512) << 20));
	assert_true(ns_disk_cap(UINT64_C(1) << 30, UINT64_C(32) << 20) == UINT64_C(16) << 20);
}

static void test_names(void **state)
{
	(void)state;
	const char *good[] = {"a", "box1", "claude-my-project", "x.y_z", "A9"};
	const char *bad[] = {"", "-x", ".x", "_x", "a/b", "a b", "a\nb", "..", "\xc3\xa9",
			     "0123456789012345678901234567890123456789012345678901234567890123"};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(ns_name_valid(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(ns_name_valid(bad[i]));
	assert_false(ns_name_valid(NULL));
}

static void test_box_paths(void **state)
{
	(void)state;
	const char *good[] = {"/workspace", "/data/ro", "/home/agent/.config", "/procfs", "/devel", "/a.b/..c"};
	const char *bad[] = {"", "/", "rel", "/a//b", "/a/", "/a/./b", "/a/../b", "/..", "/proc", "/proc/sys",
			     "/dev/shm", "/sys", "/sys/x", "/."};
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		assert_true(ns_box_path_valid(good[i]));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(ns_box_path_valid(bad[i]));
	assert_false(ns_box_path_valid(NULL));
	char long_path[5000];
	memset(long_path, 'a', sizeof(long_path));
	long_path[0] = '/';
	long_path[sizeof(long_path) - 1] = '\0';
	assert_false(ns_box_path_valid(long_path));
}

static void test_fail_report(void **state)
{
	(void)state;
	struct ns_report rep;
	assert_int_equal(ns_fail(&rep, NS_LAYER_MOUNT, -ENOENT, "cannot %s %d", "x", 5), -1);
	assert_int_equal(rep.layer, NS_LAYER_MOUNT);
	assert_int_equal(rep.code, ENOENT);
	assert_string_equal(rep.msg, "cannot x 5");
	ns_fail(&rep, NS_LAYER_MOUNT, 0, "%s", "");
	assert_int_equal(rep.code, EIO);
	char big[1000];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ns_fail(&rep, NS_LAYER_MOUNT, 1, "%s", big);
	assert_int_equal(strlen(rep.msg), sizeof(rep.msg) - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layer_names), cmocka_unit_test(test_fail_mask),
		cmocka_unit_test(test_fail_mask_needs_testing), cmocka_unit_test(test_limits),
		cmocka_unit_test(test_names), cmocka_unit_test(test_box_paths), cmocka_unit_test(test_fail_report),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
