/* test-dial.c — upstream address vetting, the --resolve map, and resolution without the
 * host's search domains. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* ---- search domains: a resolv.conf with a search line, and a DNS server that records what
 * it is asked, in namespaces of the test's own (nothing of the host's DNS is touched) */

static void put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		_exit(3);
	close(fd);
}

/* the question's name as dotted text, or "" */
static void qname(const uint8_t *p, size_t n, char *out, size_t cap)
{
	size_t o = 0;
	for (size_t i = 12; i < n && p[i] && o + p[i] + 2 < cap; i += 1 + p[i]) {
		if (o)
			out[o++] = '.';
		if (i + 1 + p[i] > n)
			break;
		memcpy(out + o, p + i + 1, p[i]);
		o += p[i];
	}
	out[o] = 0;
}

/* In the child: 0 if the names were asked as they are, each from the nameserver of the
 * resolv.conf current at the time; 1 if a search domain was added; 77 without user
 * namespaces. conf[0] names 127.0.0.1, conf[1] (bound over it between the lookups, as a
 * DHCP client rewrites the file) 127.0.0.2. */
static int search_child(char *const conf[2])
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) < 0)
		return 77;
	char map[64];
	put_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	put_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	put_file("/proc/self/gid_map", map);
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 || mount(conf[0], "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
		return 77;
	int s[2] = {socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)};
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "lo");
	ifr.ifr_flags = IFF_UP;
	/* and an address that is not loopback's: getaddrinfo's AI_ADDRCONFIG asks nothing
	 * without one */
	struct ifreq alias = {0};
	strcpy(alias.ifr_name, "lo:1");
	struct sockaddr_in *ip = (struct sockaddr_in *)&alias.ifr_addr;
	ip->sin_family = AF_INET;
	inet_pton(AF_INET, "192.0.2.1", &ip->sin_addr);
	if (s[0] < 0 || s[1] < 0 || ioctl(s[0], SIOCSIFFLAGS, &ifr) < 0 || ioctl(s[0], SIOCSIFADDR, &alias) < 0)
		return 3;
	for (int i = 0; i < 2; i++) {
		struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(53),
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (unsigned)i)};
		if (bind(s[i], (struct sockaddr *)&a, sizeof(a)) < 0)
			return 3;
	}
	pid_t pid = fork();
	if (pid == 0) {
		struct sockaddr_storage sa;
		socklen_t len;
		bool ex;
		const char *why = NULL;
		int ok = 1;
		for (int round = 0; round < 2; round++) {
			if (round == 1 && mount(conf[1], "/etc/resolv.conf", NULL, MS_BIND, NULL) < 0)
				_exit(6);
			ok &= egress_resolve(NULL, "api", 443, &sa, &len, &ex, &why) == -ENOENT;
			ok &= egress_resolve(NULL, "api.internal", 443, &sa, &len, &ex, &why) == -ENOENT;
		}
		_exit(ok ? 0 : 4);
	}
	bool bare[2] = {0}, dotted[2] = {0}, searched = false;
	for (;;) {
		struct pollfd pf[2] = {{.fd = s[0], .events = POLLIN}, {.fd = s[1], .events = POLLIN}};
		if (poll(pf, 2, 3000) <= 0)
			break;
		for (int i = 0; i < 2; i++) {
			if (!(pf[i].revents & POLLIN))
				continue;
			uint8_t q[512];
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			ssize_t n = recvfrom(s[i], q, sizeof(q), 0, (struct sockaddr *)&from, &fl);
			if (n < 12)
				continue;
			char name[256];
			qname(q, (size_t)n, name, sizeof(name));
			bare[i] |= strcmp(name, "api") == 0;
			dotted[i] |= strcmp(name, "api.internal") == 0;
			searched |= strstr(name, ".test") != NULL;
			/* NXDOMAIN for every question: the query with QR, RA and rcode 3 */
			q[2] |= 0x80;
			q[3] = (uint8_t)((q[3] & 0xf0) | 0x80 | 3);
			(void)sendto(s[i], q, (size_t)n, 0, (struct sockaddr *)&from, fl);
		}
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !bare[0] || !dotted[0] || !bare[1] || !dotted[1])
		return 5;
	return searched ? 1 : 0;
}

static char *resolv_conf(const char *text)
{
	char *path = xstrdup("/tmp/paddock-test-resolv-XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* An allowed name is resolved as it is: the host's "search" line never turns "api" or
 * "api.internal" into api.example.test (a host the policy never allowed), also not after
 * resolv.conf changed, whose new nameserver is used. */
static void test_resolve_ignores_search_domains(void **state)
{
	(void)state;
	char *conf[2] = {resolv_conf("search example.test\nnameserver 127.0.0.1\noptions timeout:1 attempts:1\n"),
			 resolv_conf("search other.test\nnameserver 127.0.0.2\noptions timeout:1 attempts:1\n")};
	pid_t pid = fork();
	if (pid == 0)
		_exit(search_child(conf));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	for (int i = 0; i < 2; i++)
		unlink(conf[i]), free(conf[i]);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* The host's own addresses (loopback's and every other interface's) are recognised, so a
 * name the box got allowed cannot be pointed by its DNS at the host's public or global
 * address; an address no interface holds is not. */
static void test_host_addresses_are_local(void **state)
{
	(void)state;
	struct sockaddr_in a = {.sin_family = AF_INET};
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(egress_addr_is_local((struct sockaddr *)&a), 1);
	inet_pton(AF_INET, "192.0.2.77", &a.sin_addr);
	assert_int_equal(egress_addr_is_local((struct sockaddr *)&a), 0);
	struct ifaddrs *ifs = NULL;
	assert_int_equal(getifaddrs(&ifs), 0);
	int seen = 0;
	for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
		if (i->ifa_addr && (i->ifa_addr->sa_family == AF_INET || i->ifa_addr->sa_family == AF_INET6)) {
			assert_int_equal(egress_addr_is_local(i->ifa_addr), 1);
			seen++;
		}
	freeifaddrs(ifs);
	assert_true(seen >= 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vet),
		cmocka_unit_test(test_host_addresses_are_local),
		cmocka_unit_test(test_resolve_map),
		cmocka_unit_test(test_resolve_ignores_search_domains),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
