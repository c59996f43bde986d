/* resolver.h — host-name resolution off the network thread.
 *
 * getaddrinfo blocks for as long as the host's resolver takes (seconds when a server is slow
 * or gone). On the network thread that would stall every connection and every DNS answer of
 * the box; here it runs on a few worker threads (egress_resolve with no --resolve map: the
 * host's answer, vetted), and the answers come back through an eventfd the network thread
 * polls. Names the --resolve map knows never come here (the engine looks those up itself).
 *
 * Workers start on demand (at most EGRESS_RESOLVER_THREADS) and are detached: freeing the
 * resolver never waits for a getaddrinfo in progress (a box's teardown must not); queued
 * requests are dropped and the last thread out frees the shared state. Every worker blocks
 * all signals (they stay with the supervisor's main thread). */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define EGRESS_RESOLVER_THREADS 4
#define EGRESS_RESOLVER_QUEUE_MAX 4096

struct egress_resolver;

struct egress_resolved {
	uint64_t id;
	int err;              /* 0, -ENOENT (does not resolve), -EHOSTUNREACH (every answer refused) */
	const char *reason;   /* static: why refused, when err */
	struct sockaddr_storage addr;
	socklen_t len;
};

/* What a worker calls (egress_resolve with no map, by default; tests give a fake). */
typedef int (*egress_resolve_fn)(const char *canon_name, uint16_t port, struct sockaddr_storage *ret,
				 socklen_t *ret_len, const char **ret_reason);

int egress_resolver_new(struct egress_resolver **ret);
int egress_resolver_new_with(egress_resolve_fn fn, struct egress_resolver **ret);
void egress_resolver_free(struct egress_resolver *r);
/* Readable when answers wait (poll it; egress_resolver_next drains it). */
int egress_resolver_fd(const struct egress_resolver *r);
/* Queues canon_name:port under id. -EAGAIN when the queue is full, -errno when no worker
 * could be started. */
int egress_resolver_submit(struct egress_resolver *r, uint64_t id, const char *canon_name, uint16_t port);
/* The next answer into *ret: 1, or 0 when there is none. */
int egress_resolver_next(struct egress_resolver *r, struct egress_resolved *ret);
