/* test-idmap.c — subordinate id parsing, map policy, formatting and read-back checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "runtime/ns/ns.h"
#include "runtime/ns/ns_idmap.h"

static int find(const char *text, const char *name, uint32_t id, struct ns_subid_range *r)
{
	return ns_subid_find(text, strlen(text), name, id, r);
}

static void test_subid_find(void **state)
{
	(void)state;
	const char *t = "# comment\n"
			"alice:100000:65536\n"
			"bob:165536:65536\n"
			"alice:500000:10\n"
			"1003:231072:65536\n"
			"broken line\n"
			"eve:x:1\n"
			"mallory:10:0\n"
			"trent:4294967295:2\n"
			"carol:1:2:3\n"
			"dave:300000:65536";
	struct ns_subid_range r;
	assert_int_equal(find(t, "alice", 1001, &r), 0);
	assert_int_equal(r.start, 100000);
	assert_int_equal(r.count, 65536);
	assert_int_equal(find(t, "bob", 1, &r), 0);
	assert_int_equal(r.start, 165536);
	assert_int_equal(find(t, "nobody-here", 1003, &r), 0); /* by numeric uid */
	assert_int_equal(r.start, 231072);
	assert_int_equal(find(t, "dave", 5, &r), 0);            /* last line without newline */
	assert_int_equal(r.start, 300000);
	assert_int_equal(find(t, "eve", 5, &r), -ENOENT);       /* malformed */
	assert_int_equal(find(t, "mallory", 5, &r), -ENOENT);   /* zero count */
	assert_int_equal(find(t, "trent", 5, &r), -ENOENT);     /* wraps 2^32 */
	assert_int_equal(find(t, "carol", 5, &r), -ENOENT);     /* four fields */
	assert_int_equal(find(t, NULL, 77, &r), -ENOENT);
	assert_int_equal(find("", "alice", 1, &r), -ENOENT);
	assert_int_equal(find("alice:-1:5\nalice:+5:5\nalice: 5:5\n", "alice", 1, &r), -ENOENT);
	assert_int_equal(find("alice:99999999999:5\n", "alice", 1, &r), -ENOENT);
}

static void test_subid_caps(void **state)
{
	(void)state;
	struct ns_subid_range r;
	size_t n = NS_SUBID_MAX_TEXT + 1;
	char *big = xcalloc(1, n + 1);
	memset(big, '\n', n);
	assert_int_equal(ns_subid_find(big, n, "a", 1, &r), -E2BIG);
	free(big);
	n = NS_SUBID_MAX_LINES + 10;
	big = xcalloc(1, n + 1);
	memset(big, '\n', n);
	assert_int_equal(ns_subid_find(big, n, "a", 1, &r), -E2BIG);
	free(big);
}

static void test_overlaps(void **state)
{
	(void)state;
	const char *sub = "alice:100000:65536\nroot:2000065536:65536\n";
	assert_true(ns_subid_overlaps(sub, strlen(sub), 165535, 1));
	assert_false(ns_subid_overlaps(sub, strlen(sub), 165536, 10));
	assert_false(ns_subid_overlaps(sub, strlen(sub), NS_HOST_ROOT_BASE, NS_MAP_SPAN));
	assert_true(ns_subid_overlaps(sub, strlen(sub), NS_HOST_ROOT_BASE, NS_MAP_SPAN + 1));
	const char *pw = "root:x:0:0:root:/root:/bin/bash\nodd:x:2000000005:1::/:/bin/sh\nshort:x\n";
	assert_true(ns_idfile_overlaps(pw, strlen(pw), NS_HOST_ROOT_BASE, NS_MAP_SPAN));
	assert_false(ns_idfile_overlaps(pw, strlen(pw), 1, 100));
	assert_true(ns_idfile_overlaps(pw, strlen(pw), 0, 1));
	const char *grp = "root:x:0:\nagent:x:1000:\n";
	assert_false(ns_idfile_overlaps(grp, strlen(grp), NS_HOST_ROOT_BASE, NS_MAP_SPAN));
}

static void test_build_user_with_range(void **state)
{
	(void)state;
	struct ns_subid_range sub = {100000, 65536};
	struct ns_idmap m;
	char buf[256];
	ns_idmap_build(1001, false, &sub, &m);
	assert_int_equal(ns_idmap_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 100000 1000\n1000 1001 1\n1001 101001 64535\n");
	assert_true(ns_idmap_maps(&m, 0) && ns_idmap_maps(&m, 1000) && ns_idmap_maps(&m, 65535) && ns_idmap_maps(&m, 5));
	assert_false(ns_idmap_maps(&m, 65536));
	/* a bigger range is used up to one box's span only */
	sub.count = 1000000;
	ns_idmap_build(1001, false, &sub, &m);
	assert_int_equal(ns_idmap_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 100000 1000\n1000 1001 1\n1001 101001 64535\n");
	/* small ranges */
	sub.count = 10;
	ns_idmap_build(1001, false, &sub, &m);
	ns_idmap_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "0 100000 10\n1000 1001 1\n");
	sub.count = 1001;
	ns_idmap_build(1001, false, &sub, &m);
	ns_idmap_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "0 100000 1000\n1000 1001 1\n");
	sub.count = 1002;
	ns_idmap_build(1001, false, &sub, &m);
	ns_idmap_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "0 100000 1000\n1000 1001 1\n1001 101001 1\n");
}

static void test_build_user_without_range(void **state)
{
	(void)state;
	struct ns_idmap m;
	char buf[64];
	ns_idmap_build(1234, false, NULL, &m);
	ns_idmap_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "1000 1234 1\n");
	assert_false(ns_idmap_maps(&m, 0));
	assert_true(ns_idmap_maps(&m, 1000));
}

static void test_build_root(void **state)
{
	(void)state;
	struct ns_subid_range sub = {NS_HOST_ROOT_BASE, NS_MAP_SPAN};
	struct ns_idmap m;
	char buf[64];
	ns_idmap_build(0, true, &sub, &m);
	ns_idmap_format(&m, buf, sizeof(buf));
	assert_string_equal(buf, "0 2000000000 65536\n");
	/* host uid 0 is never an outside id */
	for (size_t i = 0; i < m.n; i++)
		assert_int_not_equal(m.e[i].outside, 0);
}

static void test_format_overflow(void **state)
{
	(void)state;
	struct ns_subid_range sub = {100000, 65536};
	struct ns_idmap m;
	char buf[10];
	ns_idmap_build(1001, false, &sub, &m);
	assert_int_equal(ns_idmap_format(&m, buf, sizeof(buf)), -ENOBUFS);
	assert_int_equal(ns_idmap_format(&m, buf, 0), -ENOBUFS);
}

static void test_matches(void **state)
{
	(void)state;
	struct ns_subid_range sub = {100000, 65536};
	struct ns_idmap m;
	ns_idmap_build(1001, false, &sub, &m);
	/* the kernel's own formatting, any order */
	assert_true(ns_idmap_matches(&m, "         0     100000       1000\n      1000       1001          1\n      1001     101001      64535\n"));
	assert_true(ns_idmap_matches(&m, "1000 1001 1\n0 100000 1000\n1001 101001 64535\n"));
	assert_false(ns_idmap_matches(&m, "0 100000 1000\n1000 1001 1\n"));
	assert_false(ns_idmap_matches(&m, "0 100000 1000\n1000 0 1\n1001 101001 64535\n"));
	assert_false(ns_idmap_matches(&m, "0 100000 1000\n1000 1001 1\n1001 101001 64535\n5 5 5\n"));
	assert_false(ns_idmap_matches(&m, "0 100000 1000\n0 100000 1000\n1001 101001 64535\n"));
	assert_false(ns_idmap_matches(&m, ""));
	assert_false(ns_idmap_matches(&m, "garbage"));
}

/* The inside id a mount idmap gives outside id `out` (what lands on disk), or -1. */
static int64_t on_disk(const struct ns_idmap *m, uint32_t out)
{
	for (size_t i = 0; i < m->n; i++)
		if (out >= m->e[i].outside && (uint64_t)out < (uint64_t)m->e[i].outside + m->e[i].count)
			return m->e[i].inside + (out - m->e[i].outside);
	return -1;
}

static void test_build_mount_root(void **state)
{
	(void)state;
	struct ns_subid_range sub = {NS_HOST_ROOT_BASE, NS_MAP_SPAN};
	struct ns_idmap box, m;
	char buf[128];
	ns_idmap_build(0, true, &sub, &box);
	assert_int_equal(ns_idmap_build_mount(&box, 0, &m), 0);
	assert_int_equal(ns_idmap_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 2000001000 1\n"
				 "2000000000 2000000000 1000\n"
				 "2000001001 2000001001 64535\n");
	/* the agent's writes land as the caller, box root's as its subordinate id */
	assert_int_equal(on_disk(&m, NS_HOST_ROOT_BASE + NS_AGENT_ID), 0);
	assert_int_equal(on_disk(&m, NS_HOST_ROOT_BASE), NS_HOST_ROOT_BASE);
	assert_int_equal(on_disk(&m, NS_HOST_ROOT_BASE + 65535), NS_HOST_ROOT_BASE + 65535);
	assert_int_equal(on_disk(&m, 1000), -1);
	/* every box id is mapped exactly once, no inside id twice */
	for (uint32_t i = 0; i < NS_MAP_SPAN; i++)
		assert_true(on_disk(&m, NS_HOST_ROOT_BASE + i) >= 0);
	for (size_t i = 0; i < m.n; i++)
		for (size_t j = i + 1; j < m.n; j++)
			assert_true(m.e[i].inside + m.e[i].count <= m.e[j].inside || m.e[j].inside + m.e[j].count <= m.e[i].inside);
	/* the agent at either end of a range: no empty extent */
	struct ns_idmap edge = {.e = {{NS_AGENT_ID, 500000, 1}, {0, 400000, 1000}}, .n = 2};
	assert_int_equal(ns_idmap_build_mount(&edge, 0, &m), 0);
	assert_int_equal(ns_idmap_format(&m, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0 500000 1\n400000 400000 1000\n");
}

static void test_build_mount_refused(void **state)
{
	(void)state;
	struct ns_idmap m;
	struct ns_idmap no_agent = {.e = {{0, 400000, 1000}}, .n = 1};
	assert_int_equal(ns_idmap_build_mount(&no_agent, 0, &m), -EINVAL);
	/* the caller's id among the box's outside ids */
	struct ns_idmap own = {.e = {{0, 0, 65536}}, .n = 1};
	assert_int_equal(ns_idmap_build_mount(&own, 0, &m), -EINVAL);
	/* four extents each split around the agent would need more room than the map has */
	struct ns_idmap full = {.e = {{0, 100, 10}, {10, 200, 10}, {20, 300, 10}, {NS_AGENT_ID, 400, 10}}, .n = 4};
	assert_int_equal(ns_idmap_build_mount(&full, 0, &m), -E2BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subid_find),          cmocka_unit_test(test_subid_caps),
		cmocka_unit_test(test_overlaps),            cmocka_unit_test(test_build_user_with_range),
		cmocka_unit_test(test_build_user_without_range), cmocka_unit_test(test_build_root),
		cmocka_unit_test(test_format_overflow),     cmocka_unit_test(test_matches),
		cmocka_unit_test(test_build_mount_root),    cmocka_unit_test(test_build_mount_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
