/* dial.h — which upstream address may the supervisor connect to for an allowed name?
 *
 * The name was allowed by the policy; its address still has to be vetted, because a public
 * name can resolve to anything (an attacker's DNS pointing an allowed name at 127.0.0.1, the
 * metadata service or the LAN). Addresses from the host's resolver are refused when they are
 * unspecified, loopback, private (RFC 1918, ULA), link-local (incl. 169.254.169.254),
 * CGNAT 100.64/10, benchmarking 198.18/15 (our own fake-IP pool), multicast, broadcast,
 * reserved (0/8, 240/4), documentation ranges, IPv4-mapped/compatible/NAT64/6to4/Teredo IPv6
 * forms (which embed an IPv4 address) and IPv6 site-local/discard. Only an explicit
 * `--resolve NAME=ADDR` may point a name at such an address.
 * egress_addr_vet and the map are pure; egress_resolve calls getaddrinfo (blocking: the
 * network thread leaves that to resolver.h's workers). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "util/error.h"

/* NULL if sa may be dialled; else a short reason ("loopback", "private", ...). */
/* 1 when sa is an address of one of this host's interfaces, 0 when not, -errno when they
 * cannot be listed. egress_resolve refuses such an answer ("host-address") unless --resolve
 * named it. */
int egress_addr_is_local(const struct sockaddr *sa);
const char *egress_addr_vet(const struct sockaddr *sa);

/* A --resolve map: NAME=ADDR entries (ADDR an IPv4 or IPv6 literal). */
struct egress_resolve_map;
/* Parses entries (NULL-terminated); names are canonicalised. -EINVAL names the bad entry. */
int egress_resolve_map_new(char *const *entries, struct egress_resolve_map **ret, pd_err *err);
void egress_resolve_map_free(struct egress_resolve_map *m);

/* The map's address for canon_name:port: true and *ret set when the map names it. */
bool egress_resolve_map_lookup(const struct egress_resolve_map *m, const char *canon_name, uint16_t port,
			       struct sockaddr_storage *ret, socklen_t *ret_len);

/* The address to dial for canon_name:port: from the map if it names it (not vetted: the user
 * said so), else the first vetted getaddrinfo answer. ret_explicit says which. -EHOSTUNREACH
 * with the reason in ret_reason when every answer was refused, -ENOENT when it does not
 * resolve. */
int egress_resolve(const struct egress_resolve_map *m, const char *canon_name, uint16_t port,
		   struct sockaddr_storage *ret, socklen_t *ret_len, bool *ret_explicit,
		   const char **ret_reason);
