/* test-dial.c — upstream address vetting and the --resolve map. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "egress/dial.h"

static const char *vet4(const char *s)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, s, &a.sin_addr);
	return egress_addr_vet((struct sockaddr *)&a);
}

static const char *vet6(const char *s)
{
	struct sockaddr_in6 a = {.sin6_family = AF_INET6};
	inet_pton(AF_INET6, s, &a.sin6_addr);
	return egress_addr_vet((struct sockaddr *)&a);
}

static void test_vet(void **state)
{
	(void)state;
	assert_null(vet4("1.1.1.1"));
	assert_null(vet4("140.82.112.3"));
	assert_string_equal(vet4("127.0.0.1"), "loopback");
	assert_string_equal(vet4("127.255.0.9"), "loopback");
	assert_string_equal(vet4("0.0.0.0"), "unspecified");
	assert_string_equal(vet4("10.1.2.3"), "private");
	assert_string_equal(vet4("172.16.0.1"), "private");
	assert_string_equal(vet4("172.31.255.255"), "private");
	assert_null(vet4("172.32.0.1"));
	assert_string_equal(vet4("192.168.1.1"), "private");
	assert_string_equal(vet4("169.254.169.254"), "link-local");
	assert_string_equal(vet4("100.64.0.1"), "cgnat");
	assert_string_equal(vet4("100.127.255.255"), "cgnat");
	assert_null(vet4("100.128.0.1"));
	assert_string_equal(vet4("224.0.0.1"), "multicast");
	assert_string_equal(vet4("255.255.255.255"), "reserved");
	assert_string_equal(vet4("198.18.0.5"), "benchmarking");
	assert_null(vet6("2606:4700::1111"));
	assert_string_equal(vet6("::1"), "loopback");
	assert_string_equal(vet6("::"), "unspecified");
	assert_string_equal(vet6("::ffff:127.0.0.1"), "ipv4-mapped");
	assert_string_equal(vet6("::ffff:8.8.8.8"), "ipv4-mapped");
	assert_string_equal(vet6("fe80::1"), "link-local");
	assert_string_equal(vet6("fd00::1"), "private");
	assert_string_equal(vet6("ff02::1"), "multicast");
	assert_string_equal(vet6("64:ff9b::7f00:1"), "nat64");
	assert_string_equal(vet6("2002:7f00:1::"), "6to4");
	assert_string_equal(egress_addr_vet(NULL), "no-address");
}

static void test_resolve_map(void **state)
{
	(void)state;
	char *entries[] = {"Dev.Test.=127.0.0.1", "v6.test=::1", NULL};
	struct egress_resolve_map *m = NULL;
	assert_int_equal(egress_resolve_map_new(entries, &m, NULL), 0);
	struct sockaddr_storage sa;
	socklen_t len;
	bool ex = false;
	const char *why = NULL;
	assert_int_equal(egress_resolve(m, "dev.test", 8080, &sa, &len, &ex, &why), 0);
	assert_true(ex);
	assert_int_equal(sa.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&sa)->sin_port), 8080);
	assert_int_equal(egress_resolve(m, "v6.test", 22, &sa, &len, &ex, &why), 0);
	assert_int_equal(sa.ss_family, AF_INET6);
	/* a name whose real resolution is loopback is refused when --resolve did not say so */
	assert_int_equal(egress_resolve(m, "localhost", 80, &sa, &len, &ex, &why), -EHOSTUNREACH);
	assert_string_equal(why, "loopback");
	egress_resolve_map_free(m);
	char *bad[] = {"127.0.0.1=127.0.0.1", NULL};
	assert_int_equal(egress_resolve_map_new(bad, &m, NULL), -EINVAL);
	char *bad2[] = {"x.test=not-an-ip", NULL};
	assert_int_equal(egress_resolve_map_new(bad2, &m, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vet),
		cmocka_unit_test(test_resolve_map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
