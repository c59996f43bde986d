/* dial.c — vetting upstream addresses and the --resolve map. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <resolv.h>
#include <netinet/in.h>
#include <string.h>

#include "egress/dial.h"
#include "egress/name.h"
#include "util/util.h"

struct v4range {
	uint32_t net, mask;
	const char *why;
};

static const struct v4range v4_refused[] = {
	{0x00000000u, 0xff000000u, "unspecified"},  /* 0/8 */
	{0x0a000000u, 0xff000000u, "private"},      /* 10/8 */
	{0x64400000u, 0xffc00000u, "cgnat"},        /* 100.64/10 */
	{0x7f000000u, 0xff000000u, "loopback"},     /* 127/8 */
	{0xa9fe0000u, 0xffff0000u, "link-local"},   /* 169.254/16, incl. metadata */
	{0xac100000u, 0xfff00000u, "private"},      /* 172.16/12 */
	{0xc0000000u, 0xffffff00u, "reserved"},     /* 192.0.0/24 */
	{0xc0000200u, 0xffffff00u, "documentation"},/* 192.0.2/24 */
	{0xc0a80000u, 0xffff0000u, "private"},      /* 192.168/16 */
	{0xc6120000u, 0xfffe0000u, "benchmarking"}, /* 198.18/15: our own fake-IP pool */
	{0xc6336400u, 0xffffff00u, "documentation"},/* 198.51.100/24 */
	{0xcb007100u, 0xffffff00u, "documentation"},/* 203.0.113/24 */
	{0xe0000000u, 0xf0000000u, "multicast"},    /* 224/4 */
	{0xf0000000u, 0xf0000000u, "reserved"},     /* 240/4 incl. broadcast */
};

static const char *vet_v4(uint32_t a)
{
	for (size_t i = 0; i < ARRAY_SIZE(v4_refused); i++)
		if ((a & v4_refused[i].mask) == v4_refused[i].net)
			return v4_refused[i].why;
	return NULL;
}

static const char *vet_v6(const struct in6_addr *a)
{
	const uint8_t *b = a->s6_addr;
	static const uint8_t zero12[12] = {0};
	if (IN6_IS_ADDR_UNSPECIFIED(a))
		return "unspecified";
	if (IN6_IS_ADDR_LOOPBACK(a))
		return "loopback";
	if (IN6_IS_ADDR_V4MAPPED(a) || memcmp(b, zero12, 12) == 0)
		return "ipv4-mapped";
	if (b[0] == 0xff)
		return "multicast";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "site-local";
	if ((b[0] & 0xfe) == 0xfc)
		return "private";
	if (b[0] == 0x00 && b[1] == 0x64 && b[2] == 0xff && b[3] == 0x9b)
		return "nat64";
	if (b[0] == 0x20 && b[1] == 0x02)
		return "6to4";
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x00 && b[3] == 0x00)
		return "teredo";
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8)
		return "documentation";
	if (b[0] == 0x01 && b[1] == 0x00 && memcmp(b + 2, zero12, 6) == 0)
		return "discard";
	return NULL;
}

const char *egress_addr_vet(const struct sockaddr *sa)
{
	if (!sa)
		return "no-address";
	if (sa->sa_family == AF_INET)
		return vet_v4(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family == AF_INET6)
		return vet_v6(&((const struct sockaddr_in6 *)sa)->sin6_addr);
	return "not-inet";
}

/* Whether sa is an address of one of this host's own interfaces: the supervisor dials from
 * the host's network namespace, where a connection to its own public or global address is as
 * good as one to loopback (every service bound to 0.0.0.0 or :: answers). 1 yes, 0 no, -errno
 * when the host's addresses cannot be listed (the caller refuses then: fail closed). */
int egress_addr_is_local(const struct sockaddr *sa)
{
	struct ifaddrs *ifs = NULL;
	if (getifaddrs(&ifs) < 0)
		return -errno;
	int found = 0;
	for (struct ifaddrs *i = ifs; i && !found; i = i->ifa_next) {
		const struct sockaddr *a = i->ifa_addr;
		if (!a || a->sa_family != sa->sa_family)
			continue;
		if (a->sa_family == AF_INET)
			found = ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
		else if (a->sa_family == AF_INET6)
			found = IN6_ARE_ADDR_EQUAL(&((const struct sockaddr_in6 *)a)->sin6_addr,
						   &((const struct sockaddr_in6 *)sa)->sin6_addr);
	}
	freeifaddrs(ifs);
	return found;
}

struct resolve_entry {
	char name[EGRESS_NAME_MAX + 1];
	struct sockaddr_storage addr;
	socklen_t len;
};

struct egress_resolve_map {
	struct resolve_entry *e;
	size_t n;
};

static int parse_addr(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ret;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ret;
	memset(ret, 0, sizeof(*ret));
	if (inet_pton(AF_INET, s, &in->sin_addr) == 1) {
		in->sin_family = AF_INET;
		*ret_len = sizeof(*in);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &in6->sin6_addr) == 1) {
		in6->sin6_family = AF_INET6;
		*ret_len = sizeof(*in6);
		return 0;
	}
	return -EINVAL;
}

int egress_resolve_map_new(char *const *entries, struct egress_resolve_map **ret, pd_err *err)
{
	struct egress_resolve_map *m = xcalloc(1, sizeof(*m));
	size_t n = entries ? strv_len((char **)entries) : 0;
	m->e = xcalloc(n ? n : 1, sizeof(*m->e));
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(entries[i], '=');
		struct resolve_entry *e = &m->e[m->n];
		if (!eq || egress_name_canon_n(entries[i], (size_t)(eq - entries[i]), e->name, sizeof(e->name)) < 0 ||
		    parse_addr(eq + 1, &e->addr, &e->len) < 0) {
			egress_resolve_map_free(m);
			return pd_error_msg(err, EINVAL, "--resolve wants NAME=ADDR with a host name and an IP address, got '%s'",
					    entries[i]);
		}
		m->n++;
	}
	*ret = m;
	return 0;
}

void egress_resolve_map_free(struct egress_resolve_map *m)
{
	if (!m)
		return;
	free(m->e);
	free(m);
}

static void set_port(struct sockaddr_storage *a, uint16_t port)
{
	if (a->ss_family == AF_INET)
		((struct sockaddr_in *)a)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)a)->sin6_port = htons(port);
}

bool egress_resolve_map_lookup(const struct egress_resolve_map *m, const char *canon_name, uint16_t port,
			       struct sockaddr_storage *ret, socklen_t *ret_len)
{
	for (size_t i = 0; m && i < m->n; i++)
		if (streq(m->e[i].name, canon_name)) {
			*ret = m->e[i].addr;
			*ret_len = m->e[i].len;
			set_port(ret, port);
			return true;
		}
	return false;
}

int egress_resolve(const struct egress_resolve_map *m, const char *canon_name, uint16_t port,
		   struct sockaddr_storage *ret, socklen_t *ret_len, bool *ret_explicit,
		   const char **ret_reason)
{
	if (egress_resolve_map_lookup(m, canon_name, port, ret, ret_len)) {
		*ret_explicit = true;
		return 0;
	}
	/* the name the policy allowed, as it is: never completed with the host's search domains
	 * ("api" allowed by a wildcard must not become api.corp.example). _res is per thread.
	 * res_init() reads the current resolv.conf (a laptop's DHCP changes it: the nameservers
	 * are then current), the search options go, and RES_NORELOAD keeps getaddrinfo from
	 * reloading the file behind our back: glibc's reload resets the options, and it does
	 * reload when res_init() ran on options changed before (measured: the first lookup after
	 * a change went out as api.example.test). Tested with a search line in namespaces of the
	 * test's own (test-dial). */
	if (res_init() < 0) { /* glibc's defaults would search: no lookup rather than that */
		*ret_reason = "does-not-resolve";
		return -ENOENT;
	}
	_res.options &= ~(unsigned long)(RES_DNSRCH | RES_DEFNAMES);
	_res.options |= RES_NORELOAD;
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG};
	struct addrinfo *res = NULL;
	if (getaddrinfo(canon_name, NULL, &hints, &res) != 0 || !res) {
		*ret_reason = "does-not-resolve";
		return -ENOENT;
	}
	int r = -EHOSTUNREACH;
	for (struct addrinfo *a = res; a; a = a->ai_next) {
		const char *why = egress_addr_vet(a->ai_addr);
		int local = why ? 0 : egress_addr_is_local(a->ai_addr);
		if (local != 0)
			why = local > 0 ? "host-address" : "host-addresses-unknown";
		if (why) {
			*ret_reason = why;
			continue;
		}
		memcpy(ret, a->ai_addr, a->ai_addrlen);
		*ret_len = a->ai_addrlen;
		set_port(ret, port);
		*ret_explicit = false;
		r = 0;
		break;
	}
	freeaddrinfo(res);
	return r;
}
