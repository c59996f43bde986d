/* fakeip.h — the synthetic-address (fake-IP) pool: each allowed host name a box looks up gets
 * a private IPv4 address that stands for that name, so a TCP connection to the address can be
 * mapped back to the name and checked against the policy before anything is dialled.
 *
 * Addresses come from one /16 of 198.18.0.0/15 (RFC 2544 benchmarking range: never routed on
 * the internet, unlikely to collide with a LAN). The pool is a two-way map name <-> address,
 * stable per name while the entry lives, and bounded: when it is full the least recently used
 * entry that no connection holds (fakeip_ref) and whose DNS answer has expired (TTL) is
 * reused; if there is none, assignment fails (-ENOSPC: the DNS server answers SERVFAIL).
 * Memory is at most capacity x (name + ~80 bytes).
 * Pure: no I/O, no clock — callers pass `now` in seconds from a monotonic clock. */
#pragma once

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAKEIP_NET_DEFAULT 0xc6120000u /* 198.18.0.0/16, host byte order */
#define FAKEIP_CAPACITY_MAX 65534u     /* .0.1 .. .255.254 */
#define FAKEIP_CAPACITY_DEFAULT 16384u
#define FAKEIP_TTL_DEFAULT 60u         /* seconds: the TTL of our DNS answers */

struct fakeip_pool;

/* net: 198.18.0.0 or 198.19.0.0 (network byte order); capacity 1..FAKEIP_CAPACITY_MAX.
 * -EINVAL for anything else. */
int fakeip_pool_new(struct in_addr net, uint32_t capacity, uint32_t ttl,
		    struct fakeip_pool **ret);
void fakeip_pool_free(struct fakeip_pool *p);

/* The address for canon_name (assigning one if needed) and marks it used at now.
 * -EINVAL if canon_name is not a canonical host name, -ENOSPC if the pool is full. */
int fakeip_assign(struct fakeip_pool *p, const char *canon_name, uint64_t now,
		  struct in_addr *ret_addr);
/* The name addr stands for, or NULL; a hit counts as a use at now. The string stays valid
 * while the entry lives: copy it, or hold a reference. */
const char *fakeip_lookup(struct fakeip_pool *p, struct in_addr addr, uint64_t now);
/* A connection holds addr's mapping: it will not be reused until released. -ENOENT if addr
 * maps to nothing. */
int fakeip_ref(struct fakeip_pool *p, struct in_addr addr);
void fakeip_unref(struct fakeip_pool *p, struct in_addr addr, uint64_t now);
/* True if addr lies in this pool's /16 (whether or not it is assigned). */
bool fakeip_in_pool(const struct fakeip_pool *p, struct in_addr addr);
size_t fakeip_count(const struct fakeip_pool *p);
