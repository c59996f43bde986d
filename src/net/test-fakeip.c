/* test-fakeip.c — the fake-IP pool: stable two-way mapping, bounds, LRU reuse only after the
 * TTL, and never reusing an address a connection holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <arpa/inet.h>

#include "net/fakeip.h"
#include "util/util.h"

static struct in_addr ip(const char *s)
{
	struct in_addr a;
	assert_int_equal(inet_pton(AF_INET, s, &a), 1);
	return a;
}

static struct fakeip_pool *pool(uint32_t cap, uint32_t ttl)
{
	struct fakeip_pool *p = NULL;
	assert_int_equal(fakeip_pool_new(ip("198.18.0.0"), cap, ttl, &p), 0);
	return p;
}

static void test_new_validates(void **state)
{
	struct fakeip_pool *p = NULL;
	assert_int_equal(fakeip_pool_new(ip("10.0.0.0"), 10, 60, &p), -EINVAL);
	assert_int_equal(fakeip_pool_new(ip("198.18.1.0"), 10, 60, &p), -EINVAL);
	assert_int_equal(fakeip_pool_new(ip("198.20.0.0"), 10, 60, &p), -EINVAL);
	assert_int_equal(fakeip_pool_new(ip("198.18.0.0"), 0, 60, &p), -EINVAL);
	assert_int_equal(fakeip_pool_new(ip("198.18.0.0"), FAKEIP_CAPACITY_MAX + 1, 60, &p),
			 -EINVAL);
	assert_null(p);
	assert_int_equal(fakeip_pool_new(ip("198.19.0.0"), 10, 60, &p), 0);
	struct in_addr a;
	assert_int_equal(fakeip_assign(p, "a.com", 0, &a), 0);
	assert_int_equal(a.s_addr, ip("198.19.0.1").s_addr);
	fakeip_pool_free(p);
	fakeip_pool_free(NULL);
}

static void test_stable_two_way(void **state)
{
	struct fakeip_pool *p = pool(100, 60);
	struct in_addr a, b, a2;
	assert_int_equal(fakeip_assign(p, "api.github.com", 1, &a), 0);
	assert_int_equal(fakeip_assign(p, "github.com", 1, &b), 0);
	assert_int_equal(fakeip_assign(p, "api.github.com", 2, &a2), 0);
	assert_int_equal(a.s_addr, a2.s_addr);
	assert_int_not_equal(a.s_addr, b.s_addr);
	assert_int_equal(a.s_addr, ip("198.18.0.1").s_addr);
	assert_string_equal(fakeip_lookup(p, a, 3), "api.github.com");
	assert_string_equal(fakeip_lookup(p, b, 3), "github.com");
	assert_null(fakeip_lookup(p, ip("198.18.0.3"), 3));   /* in pool, unassigned */
	assert_null(fakeip_lookup(p, ip("198.18.0.0"), 3));   /* network address */
	assert_null(fakeip_lookup(p, ip("198.18.255.255"), 3));
	assert_null(fakeip_lookup(p, ip("127.0.0.1"), 3));
	assert_true(fakeip_in_pool(p, ip("198.18.200.1")));
	assert_false(fakeip_in_pool(p, ip("198.19.0.1")));
	assert_int_equal(fakeip_count(p), 2);
	fakeip_pool_free(p);
}

static void test_noncanonical_names_refused(void **state)
{
	struct fakeip_pool *p = pool(10, 60);
	struct in_addr a;
	assert_int_equal(fakeip_assign(p, "GitHub.com", 0, &a), -EINVAL);
	assert_int_equal(fakeip_assign(p, "github.com.", 0, &a), -EINVAL);
	assert_int_equal(fakeip_assign(p, "127.0.0.1", 0, &a), -EINVAL);
	assert_int_equal(fakeip_assign(p, "", 0, &a), -EINVAL);
	assert_int_equal(fakeip_count(p), 0);
	fakeip_pool_free(p);
}

static void test_full_pool_within_ttl_refuses(void **state)
{
	struct fakeip_pool *p = pool(2, 60);
	struct in_addr a;
	assert_int_equal(fakeip_assign(p, "a.com", 100, &a), 0);
	assert_int_equal(fakeip_assign(p, "b.com", 100, &a), 0);
	/* both answers may still be cached by the box: reusing an address now would make an old
	 * answer for a.com lead to c.com */
	assert_int_equal(fakeip_assign(p, "c.com", 159, &a), -ENOSPC);
	assert_int_equal(fakeip_assign(p, "a.com", 159, &a), 0); /* known names still work */
	fakeip_pool_free(p);
}

static void test_lru_reuse_after_ttl(void **state)
{
	struct fakeip_pool *p = pool(2, 60);
	struct in_addr a, b, c;
	assert_int_equal(fakeip_assign(p, "a.com", 100, &a), 0);
	assert_int_equal(fakeip_assign(p, "b.com", 110, &b), 0);
	assert_string_equal(fakeip_lookup(p, a, 120), "a.com"); /* a.com is now the most recent */
	assert_int_equal(fakeip_assign(p, "c.com", 175, &c), 0);
	assert_int_equal(c.s_addr, b.s_addr); /* b.com was least recently used */
	assert_string_equal(fakeip_lookup(p, c, 175), "c.com");
	assert_string_equal(fakeip_lookup(p, a, 175), "a.com");
	assert_int_equal(fakeip_count(p), 2);
	/* b.com comes back later and takes the least recently used slot: c.com's */
	assert_int_equal(fakeip_assign(p, "b.com", 300, &b), 0);
	assert_int_equal(b.s_addr, c.s_addr);
	assert_string_equal(fakeip_lookup(p, c, 300), "b.com");
	assert_string_equal(fakeip_lookup(p, a, 300), "a.com");
	fakeip_pool_free(p);
}

static void test_ref_pins_entry(void **state)
{
	struct fakeip_pool *p = pool(1, 60);
	struct in_addr a, b;
	assert_int_equal(fakeip_assign(p, "a.com", 0, &a), 0);
	assert_int_equal(fakeip_ref(p, a), 0);
	assert_int_equal(fakeip_ref(p, a), 0);
	assert_int_equal(fakeip_assign(p, "b.com", 1000, &b), -ENOSPC); /* held by connections */
	fakeip_unref(p, a, 1000);
	assert_int_equal(fakeip_assign(p, "b.com", 1001, &b), -ENOSPC); /* still one ref */
	fakeip_unref(p, a, 1000);
	assert_int_equal(fakeip_assign(p, "b.com", 1059, &b), -ENOSPC); /* TTL from release */
	assert_int_equal(fakeip_assign(p, "b.com", 1060, &b), 0);
	assert_int_equal(fakeip_ref(p, ip("198.18.0.9")), -ENOENT);
	fakeip_unref(p, ip("198.18.0.9"), 0);  /* harmless */
	fakeip_unref(p, b, 0);                   /* unbalanced: ignored */
	fakeip_pool_free(p);
}

static void test_fill_whole_pool(void **state)
{
	struct fakeip_pool *p = pool(FAKEIP_CAPACITY_MAX, 60);
	struct in_addr a;
	char name[32];
	for (uint32_t i = 0; i < FAKEIP_CAPACITY_MAX; i++) {
		snprintf(name, sizeof(name), "h%u.example.com", i);
		assert_int_equal(fakeip_assign(p, name, 0, &a), 0);
	}
	assert_int_equal(a.s_addr, ip("198.18.255.254").s_addr);
	assert_int_equal(fakeip_count(p), FAKEIP_CAPACITY_MAX);
	assert_int_equal(fakeip_assign(p, "one-more.example.com", 1, &a), -ENOSPC);
	assert_int_equal(fakeip_assign(p, "one-more.example.com", 60, &a), 0);
	assert_int_equal(a.s_addr, ip("198.18.0.1").s_addr);
	assert_string_equal(fakeip_lookup(p, ip("198.18.0.2"), 60), "h1.example.com");
	fakeip_pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_validates),
		cmocka_unit_test(test_stable_two_way),
		cmocka_unit_test(test_noncanonical_names_refused),
		cmocka_unit_test(test_full_pool_within_ttl_refuses),
		cmocka_unit_test(test_lru_reuse_after_ttl),
		cmocka_unit_test(test_ref_pins_entry),
		cmocka_unit_test(test_fill_whole_pool),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
