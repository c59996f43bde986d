/* engine.h — the egress engine of one box: every TCP connection the box opens to a fake IP,
 * to the explicit proxy or to the DNS server over TCP ends here (libslirp hands each one over
 * as a unix-socket connection), is checked, and is relayed to a dialled upstream or refused.
 *
 *   transparent (fake IP F, port P): name = fakeip_lookup(F); policy(name, P) again (live);
 *     ports 80/443: the first bytes must be a TLS ClientHello whose SNI equals name (no SNI,
 *     another SNI, ECH => refused) or HTTP/1.x requests whose Host equals name — every request
 *     of a keep-alive connection is parsed and checked (httpreq.h), chunked request bodies are
 *     refused; other ports: raw relay after the policy check (server-first protocols work).
 *   proxy (gateway:3128): CONNECT host:port or absolute-form requests (httpreq.h); the same
 *     policy; refusals are "403 + X-Paddock-Reason" and the connection is closed; bytes
 *     pipelined behind a CONNECT head are refused; the tunnel's first bytes get the transparent
 *     checks (SNI == host); absolute-form requests are rewritten to origin-form and every later
 *     request on the connection must name the same host:port.
 *   dns (198.19.0.3:53/tcp): DNS over TCP through the same answerer as UDP.
 * Upstream: egress_resolve() (dial.h) then a non-blocking connect with a timeout. Buffers are
 * bounded (EGRESS_BUF_MAX each way, allocated only while holding data); heads must arrive
 * within EGRESS_HEAD_TIMEOUT_MS; at most EGRESS_CONNS_MAX connections per box. One audit line
 * per connection at close, one per DNS question. Single-threaded: call from one poll loop. */
#pragma once

#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>

#include "egress/audit.h"
#include "egress/dial.h"
#include "egress/policy.h"
#include "egress/resolver.h"
#include "net/fakeip.h"

#define EGRESS_BUF_MAX (256u * 1024)
#define EGRESS_HEAD_TIMEOUT_MS 10000
#define EGRESS_DIAL_TIMEOUT_MS 10000
#define EGRESS_CONNS_MAX 4096

enum egress_conn_kind {
	EGRESS_CONN_INVALID = 0,
	EGRESS_CONN_DNS,
	EGRESS_CONN_TRANSPARENT,
	EGRESS_CONN_PROXY,
	EGRESS_CONN_KIND_MAX,
};

struct egress_engine;

struct egress_engine *egress_engine_new(const char *box, struct egress_audit *audit,
					const struct egress_resolve_map *resolve, struct fakeip_pool *pool);
void egress_engine_free(struct egress_engine *e);
/* The policy in force from now on (the engine does not own it; swap it whole). */
void egress_engine_set_policy(struct egress_engine *e, const struct egress_policy *p);
/* What resolves names --resolve does not map (before the first one is resolved): tests give
 * a fake; the default is egress_resolve (the host's resolver, vetted answers). */
void egress_engine_set_resolve_fn(struct egress_engine *e, egress_resolve_fn fn);
const struct egress_policy *egress_engine_policy(const struct egress_engine *e);

/* fn(opaque, fd) for every fd the engine itself creates (an upstream socket), before it is
 * first polled: the caller's poller must not trust what it cached for a reused fd number. */
void egress_engine_set_fd_hook(struct egress_engine *e, void (*fn)(void *opaque, int fd), void *opaque);

/* At most n connections at once (default and ceiling EGRESS_CONNS_MAX): the caller's fd
 * budget (each costs libslirp's socket and the engine's two). */
void egress_engine_set_max_conns(struct egress_engine *e, size_t n);

/* Takes ownership of fd, a connection the box made to addr:port. */
void egress_engine_add(struct egress_engine *e, int fd, enum egress_conn_kind kind,
		       struct in_addr addr, uint16_t port);
size_t egress_engine_count(const struct egress_engine *e);

/* Answers one DNS query (UDP or TCP) and logs it. */
int egress_engine_dns(struct egress_engine *e, const uint8_t *q, size_t qlen, uint8_t *out,
		      size_t cap, size_t *ret_len);
/* Logs a refused connection attempt decided before it reached the engine (a SYN answered with
 * RST by the frame filter). */
void egress_engine_log_refused(struct egress_engine *e, const char *name, uint16_t port,
			       const char *rule, const char *reason);

void egress_engine_fill(struct egress_engine *e, struct pollfd *pfd, size_t *n, size_t cap, int *timeout_ms);
void egress_engine_dispatch(struct egress_engine *e, struct pollfd *pfd);
