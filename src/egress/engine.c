/* engine.c — the egress engine's connections (see engine.h for the rules). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <time.h>

#include "egress/engine.h"
#include "egress/httpreq.h"
#include "egress/resolver.h"
#include "egress/sni.h"
#include "net/dns.h"
#include "util/fdio.h"
#include "util/log.h"

enum conn_state { S_HEAD, S_DIAL, S_RELAY, S_DRAIN, S_DEAD };
enum conn_mode { M_NONE, M_TLS, M_HTTP, M_RAW };

struct buf {
	uint8_t *d;
	size_t len, cap;
};

struct conn {
	struct conn *next;
	uint64_t id;
	enum egress_conn_kind kind;
	enum conn_state state;
	enum conn_mode mode;
	int bfd, ufd;
	int bidx, uidx;            /* their pollfd slots in the current round, -1 if none */
	struct in_addr addr;       /* what the box connected to */
	uint16_t box_port;
	char name[EGRESS_NAME_MAX + 1];
	uint16_t port;             /* upstream port */
	char rule[EGRESS_RULE_TEXT_MAX + 16];
	const char *reason;        /* why refused, or NULL */
	bool fip_held, b_eof, u_eof, u_shut, b_shut, connected, logged;
	bool resolving;            /* S_DIAL waiting for the resolver, no ufd yet */
	/* box -> upstream: up[0..up_ok) is checked and may be forwarded */
	struct buf up, down;
	size_t up_ok;
	/* upstream -> box once a connection carries bulk: a pipe the bytes are spliced through
	 * (pages moved, not copied through our buffer) */
	int dpipe[2];
	size_t dpipe_len, dpipe_cap;
	/* HTTP: per-request parsing */
	struct egress_httpreq_state hs;
	bool in_body, proxy_abs;
	int64_t body_left;
	bool connect_reply; /* CONNECT: "200" to send once connected */
	bool after_upgrade; /* HTTP: the last request asked for an Upgrade */
	uint32_t nreq;      /* HTTP: requests let through so far */
	int64_t t0, deadline;
	bool explicit_addr; /* the upstream address came from --resolve */
	uint64_t nup, ndown;
};

struct egress_engine {
	char *box;
	struct egress_audit *audit;
	const struct egress_resolve_map *resolve;
	struct fakeip_pool *pool;
	const struct egress_policy *policy;
	struct conn *conns;
	size_t n, max;
	uint64_t next_id;
	struct egress_resolver *resolver; /* started by the first name --resolve does not map */
	egress_resolve_fn resolve_fn;     /* what its workers call; NULL: egress_resolve */
	int ridx;                         /* its fd's pollfd slot this round, -1 if none */
	void (*fd_hook)(void *opaque, int fd);
	void *fd_hook_opaque;
};

static int64_t wall_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct egress_engine *egress_engine_new(const char *box, struct egress_audit *audit,
					const struct egress_resolve_map *resolve, struct fakeip_pool *pool)
{
	struct egress_engine *e = xcalloc(1, sizeof(*e));
	e->box = xstrdup(box);
	e->audit = audit;
	e->resolve = resolve;
	e->pool = pool;
	e->max = EGRESS_CONNS_MAX;
	e->ridx = -1;
	return e;
}

void egress_engine_set_fd_hook(struct egress_engine *e, void (*fn)(void *opaque, int fd), void *opaque)
{
	e->fd_hook = fn;
	e->fd_hook_opaque = opaque;
}

void egress_engine_set_max_conns(struct egress_engine *e, size_t n)
{
	e->max = n < EGRESS_CONNS_MAX ? n : EGRESS_CONNS_MAX;
}

static void refuse(struct conn *c, const char *reason);

/* A new policy applies to what is open too: a connection to a name:port it no longer
 * allows is closed (a keep-alive connection or a raw stream kept a revoked host reachable
 * for as long as the box held it). Each is logged as refused, with the rule that did it. */
void egress_engine_set_policy(struct egress_engine *e, const struct egress_policy *p)
{
	bool first = !e->policy;
	e->policy = p;
	if (first || !p)
		return;
	for (struct conn *c = e->conns; c; c = c->next) {
		if (c->kind == EGRESS_CONN_DNS || c->state == S_DEAD || c->reason || !c->name[0])
			continue;
		const char *rule = NULL;
		if (egress_policy_check(p, c->name, c->port, &rule) == EGRESS_ALLOW)
			continue;
		snprintf(c->rule, sizeof(c->rule), "%s", rule ? rule : "");
		refuse(c, "denied-by-policy-change");
	}
}

void egress_engine_set_resolve_fn(struct egress_engine *e, egress_resolve_fn fn)
{
	e->resolve_fn = fn;
}
const struct egress_policy *egress_engine_policy(const struct egress_engine *e) { return e->policy; }
size_t egress_engine_count(const struct egress_engine *e) { return e->n; }

static const char *kind_str(enum egress_conn_kind k)
{
	return k == EGRESS_CONN_DNS ? "dns-tcp" : k == EGRESS_CONN_PROXY ? "proxy" : "tcp";
}

/* --- audit ----------------------------------------------------------------------------- */

static void log_conn(struct egress_engine *e, struct conn *c)
{
	if (c->logged || c->kind == EGRESS_CONN_DNS)
		return;
	c->logged = true;
	struct egress_audit_rec r = {
		.time_ms = wall_ms(), .box = e->box, .kind = kind_str(c->kind), .name = c->name,
		.port = c->port, .rule = c->rule, .verdict = c->reason ? "deny" : "allow",
		.reason = c->reason ? c->reason : "", .bytes_up = c->nup, .bytes_down = c->ndown,
		.duration_ms = mono_ms() - c->t0,
	};
	egress_audit_write(e->audit, &r);
}

void egress_engine_log_refused(struct egress_engine *e, const char *name, uint16_t port,
			       const char *rule, const char *reason)
{
	struct egress_audit_rec r = {.time_ms = wall_ms(), .box = e->box, .kind = "tcp", .name = name,
				     .port = port, .rule = rule, .verdict = "deny", .reason = reason};
	egress_audit_write(e->audit, &r);
}

/* --- DNS ------------------------------------------------------------------------------- */

static int fake_ip_cb(void *opaque, const char *name, struct in_addr *ret)
{
	struct egress_engine *e = opaque;
	return fakeip_assign(e->pool, name, (uint64_t)(mono_ms() / 1000), ret);
}

int egress_engine_dns(struct egress_engine *e, const uint8_t *q, size_t qlen, uint8_t *out,
		      size_t cap, size_t *ret_len)
{
	struct dns_ctx ctx = {.policy = e->policy, .fake_ip = fake_ip_cb, .opaque = e};
	struct dns_event ev;
	int r = dns_answer(q, qlen, &ctx, out, cap, ret_len, &ev);
	const char *qt = dns_qtype_str(ev.qtype);
	char reason[64];
	snprintf(reason, sizeof(reason), "%s %s", qt ? qt : "TYPE", r < 0 ? "DROPPED" : dns_rcode_str(ev.rcode));
	struct egress_audit_rec rec = {.time_ms = wall_ms(), .box = e->box, .kind = "dns", .name = ev.name,
				       .port = 53, .rule = ev.rule ? ev.rule : "",
				       .verdict = ev.verdict == EGRESS_ALLOW ? "allow" : "deny", .reason = reason};
	egress_audit_write(e->audit, &rec);
	return r;
}

/* --- buffers --------------------------------------------------------------------------- */

static size_t buf_room(const struct buf *b) { return EGRESS_BUF_MAX - b->len; }

/* Room for want more bytes, never beyond EGRESS_BUF_MAX: false (nothing changed) when the
 * buffer cannot take them. Every writer into a buffer goes through here or buf_room. */
static bool buf_reserve(struct buf *b, size_t want)
{
	if (want > EGRESS_BUF_MAX - b->len)
		return false;
	if (b->cap - b->len >= want)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap - b->len < want)
		cap *= 2;
	if (cap > EGRESS_BUF_MAX)
		cap = EGRESS_BUF_MAX;
	b->d = xrealloc(b->d, cap);
	b->cap = cap;
	return true;
}

static bool buf_append(struct buf *b, const void *p, size_t n)
{
	if (!buf_reserve(b, n))
		return false;
	memcpy(b->d + b->len, p, n);
	b->len += n;
	return true;
}

static void buf_consume(struct buf *b, size_t n)
{
	memmove(b->d, b->d + n, b->len - n);
	b->len -= n;
	if (b->len == 0) { /* idle connections hold no memory */
		free(b->d);
		b->d = NULL;
		b->cap = 0;
	}
}

/* Reads what fits into b. 1 data, 0 EOF, -EAGAIN, <0 error. */
static int buf_read(struct buf *b, int fd, uint64_t *count)
{
	size_t room = buf_room(b);
	if (room == 0)
		return -EAGAIN;
	buf_reserve(b, room < 16384 ? room : 16384);
	ssize_t n = read(fd, b->d + b->len, b->cap - b->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
	if (n == 0)
		return 0;
	b->len += (size_t)n;
	*count += (uint64_t)n;
	return 1;
}

/* Writes up to lim bytes of b. */
static int buf_write(struct buf *b, int fd, size_t lim)
{
	if (lim == 0)
		return 0;
	ssize_t n = send(fd, b->d, lim, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	buf_consume(b, (size_t)n);
	return (int)n;
}

/* --- splicing the download ------------------------------------------------------------ */

/* A connection starts splicing after this much downloaded (an idle or chatty connection
 * never holds a pipe), with a pipe of EGRESS_SPLICE_PIPE bytes. */
#define EGRESS_SPLICE_AFTER (256u * 1024)
#define EGRESS_SPLICE_PIPE (256 * 1024)

static bool splicing(const struct conn *c) { return c->dpipe[0] >= 0; }

/* Relaying, nothing of ours queued before the upstream's bytes, enough to be worth a pipe: a
 * pipe (any failure, the fd limit for one, keeps the buffered path). */
static void maybe_splice(struct conn *c)
{
	if (splicing(c) || c->state != S_RELAY || c->down.len || c->ndown < EGRESS_SPLICE_AFTER)
		return;
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0)
		return;
	/* the size asked for, or what the pipe quota allows */
	int cap = fcntl(p[1], F_SETPIPE_SZ, EGRESS_SPLICE_PIPE);
	if (cap < 0)
		cap = fcntl(p[1], F_GETPIPE_SZ);
	if (cap <= 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	c->dpipe_cap = (size_t)cap;
	c->dpipe[0] = p[0];
	c->dpipe[1] = p[1];
}

static size_t dpipe_room(const struct conn *c)
{
	return c->dpipe_len < c->dpipe_cap ? c->dpipe_cap - c->dpipe_len : 0;
}

/* upstream -> pipe: 1 data, 0 EOF, -EAGAIN, <0 error */
static int splice_in(struct conn *c)
{
	if (dpipe_room(c) == 0) /* a length of 0 would read as EOF */
		return -EAGAIN;
	ssize_t n = splice(c->ufd, NULL, c->dpipe[1], NULL, dpipe_room(c), SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
	if (n == 0)
		return 0;
	c->dpipe_len += (size_t)n;
	c->ndown += (uint64_t)n;
	return 1;
}

/* pipe -> box */
static int splice_out(struct conn *c)
{
	if (c->dpipe_len == 0)
		return 0;
	ssize_t n = splice(c->dpipe[0], NULL, c->bfd, NULL, c->dpipe_len, SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 0 : -errno;
	c->dpipe_len -= (size_t)n;
	return 0;
}

/* what waits to go to the box */
static bool down_pending(const struct conn *c) { return c->down.len || c->dpipe_len; }

/* --- refusals -------------------------------------------------------------------------- */

static void refuse(struct conn *c, const char *reason)
{
	if (!c->reason)
		c->reason = reason;
	/* a proxy client gets an HTTP answer until its request is relayed or its tunnel is up
	 * (a CONNECT whose upstream failed gets one too: curl said only "CONNECT aborted"), and
	 * so does plain HTTP on a transparent connection refused at its first request (later,
	 * an upstream response may be under way: the connection is only closed) */
	bool http_first = c->kind == EGRESS_CONN_TRANSPARENT && c->mode == M_HTTP && c->nreq == 0;
	if ((c->kind == EGRESS_CONN_PROXY && !c->connected) || http_first) {
		size_t n;
		/* the policy allowed it and the upstream side failed: 502, not a refusal */
		bool denied = startswith(reason, "denied");
		bool upstream = (c->kind == EGRESS_CONN_PROXY && (c->state == S_DIAL || c->resolving) && !denied) ||
				streq(reason, "connect-failed") || streq(reason, "connect-timeout") ||
				streq(reason, "socket-failed") || startswith(reason, "resolve");
		_cleanup_free_ char *resp = egress_http_response(upstream ? 502 : 403, reason, &n);
		/* what the box may still see: only the refusal */
		c->down.len = 0;
		(void)buf_append(&c->down, resp, n);
		c->state = S_DRAIN;
	} else {
		c->state = S_DEAD;
	}
	c->up.len = 0;
	c->up_ok = 0;
}


static bool check_policy(struct egress_engine *e, struct conn *c)
{
	const char *rule = NULL;
	enum egress_verdict v = egress_policy_check(e->policy, c->name, c->port, &rule);
	snprintf(c->rule, sizeof(c->rule), "%s", rule ? rule : "");
	if (v != EGRESS_ALLOW) {
		refuse(c, "denied-by-policy");
		return false;
	}
	return true;
}

/* --- dialling -------------------------------------------------------------------------- */

static void dial(struct egress_engine *e, struct conn *c, const struct sockaddr_storage *sa, socklen_t len)
{
	c->resolving = false;
	int fd = socket(sa->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		refuse(c, "socket-failed");
		return;
	}
	if (e->fd_hook)
		e->fd_hook(e->fd_hook_opaque, fd);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, (const struct sockaddr *)sa, len) < 0 && errno != EINPROGRESS) {
		close(fd);
		refuse(c, "connect-failed");
		return;
	}
	c->ufd = fd;
	c->state = S_DIAL;
	c->deadline = mono_ms() + EGRESS_DIAL_TIMEOUT_MS;
}

/* A --resolve name is dialled at once; any other goes to the resolver's workers (the host's
 * resolver may take seconds: never on this thread) and is dialled when its answer is back. */
static void start_dial(struct egress_engine *e, struct conn *c)
{
	struct sockaddr_storage sa;
	socklen_t len;
	if (egress_resolve_map_lookup(e->resolve, c->name, c->port, &sa, &len)) {
		c->explicit_addr = true; /* --resolve named it: any address, the host's own too */
		dial(e, c, &sa, len);
		return;
	}
	if (!e->resolver) {
		if ((e->resolve_fn ? egress_resolver_new_with(e->resolve_fn, &e->resolver)
				   : egress_resolver_new(&e->resolver)) < 0) {
			refuse(c, "resolver-failed");
			return;
		}
		if (e->fd_hook)
			e->fd_hook(e->fd_hook_opaque, egress_resolver_fd(e->resolver));
	}
	if (egress_resolver_submit(e->resolver, c->id, c->name, c->port) < 0) {
		refuse(c, "resolver-busy");
		return;
	}
	c->resolving = true;
	c->state = S_DIAL;
	c->deadline = mono_ms() + EGRESS_DIAL_TIMEOUT_MS;
}

static struct conn *conn_by_id(struct egress_engine *e, uint64_t id)
{
	for (struct conn *c = e->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

/* Answers from the resolver: dial, or refuse with its reason. A connection that went away
 * meanwhile has no one to take its answer. */
static void resolved(struct egress_engine *e)
{
	struct egress_resolved a;
	while (egress_resolver_next(e->resolver, &a) == 1) {
		struct conn *c = conn_by_id(e, a.id);
		if (!c || !c->resolving || c->state != S_DIAL)
			continue;
		if (a.err < 0)
			refuse(c, a.reason);
		else
			dial(e, c, &a.addr, a.len);
	}
}

static bool same_host_ends(int fd)
{
	struct sockaddr_storage l, p;
	socklen_t ll = sizeof(l), pl = sizeof(p);
	if (getsockname(fd, (struct sockaddr *)&l, &ll) < 0 || getpeername(fd, (struct sockaddr *)&p, &pl) < 0)
		return true; /* cannot tell: fail closed */
	if (l.ss_family != p.ss_family)
		return false;
	if (l.ss_family == AF_INET)
		return ((struct sockaddr_in *)&l)->sin_addr.s_addr == ((struct sockaddr_in *)&p)->sin_addr.s_addr;
	return l.ss_family == AF_INET6 &&
	       IN6_ARE_ADDR_EQUAL(&((struct sockaddr_in6 *)&l)->sin6_addr, &((struct sockaddr_in6 *)&p)->sin6_addr);
}

static void dial_done(struct conn *c)
{
	int soerr = 0;
	socklen_t sl = sizeof(soerr);
	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0 || soerr) {
		refuse(c, "connect-failed");
		return;
	}
	/* a connection whose two ends have the same address stayed on this host: an address the
	 * host answers for without it being on an interface (a local route, AnyIP) got past the
	 * resolver's check, and reaches what listens on 0.0.0.0 or :: here */
	if (!c->explicit_addr && same_host_ends(c->ufd)) {
		refuse(c, "host-address");
		return;
	}
	c->connected = true;
	c->state = S_RELAY;
	c->deadline = 0;
	if (c->connect_reply) {
		static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
		(void)buf_append(&c->down, ok, sizeof(ok) - 1); /* the first bytes down: it fits */
		c->connect_reply = false;
	}
}

/* --- checks on the box's bytes --------------------------------------------------------- */

static bool port_is_web(uint16_t p) { return p == 80 || p == 443; }

/* TLS: the ClientHello must name exactly c->name. 1 ok, 0 need more, -1 refused. */
static int check_tls(struct conn *c)
{
	char sni[EGRESS_NAME_MAX + 1];
	enum egress_sni_result r = egress_sni_extract(c->up.d, c->up.len, sni);
	if (r == EGRESS_SNI_NEED_MORE)
		return 0;
	if (r != EGRESS_SNI_FOUND) {
		refuse(c, r == EGRESS_SNI_NO_SNI ? "no-sni" : r == EGRESS_SNI_ECH ? "ech" : "bad-client-hello");
		return -1;
	}
	if (!streq(sni, c->name)) {
		refuse(c, "sni-mismatch");
		return -1;
	}
	c->mode = M_TLS;
	c->up_ok = c->up.len;
	return 1;
}

/* Rewrites an absolute-form request line in the unchecked part of up to origin-form; with
 * add_host (an HTTP/1.0 request that named its host only in the URL) a Host header follows
 * it, so the origin-form request is complete. False when the rewritten request would not fit
 * the buffer (a box that pipelines a full buffer of such requests without reading): the
 * caller refuses it, as the buffer's bound is never crossed. */
static bool rewrite_origin(struct conn *c, const struct egress_httpreq *q, bool add_host)
{
	uint8_t *h = c->up.d + c->up_ok;
	const char *eol = memchr(h, '\n', q->head_len);
	if (!eol)
		return false;
	size_t line_end = (size_t)((const uint8_t *)eol - h) + 1;
	const char *path = (const char *)h + q->path_off;
	size_t plen = q->path_len;
	char port[8] = "";
	if (q->port != 80)
		snprintf(port, sizeof(port), ":%u", q->port);
	_cleanup_free_ char *line = xasprintf("%s %s%.*s HTTP/%u.%u\r\n%s%s%s%s", q->method,
					      plen == 0 || path[0] == '?' ? "/" : "", (int)plen, path,
					      q->http_major, q->http_minor, add_host ? "Host: " : "",
					      add_host ? q->host : "", add_host ? port : "", add_host ? "\r\n" : "");
	size_t nl = strlen(line), rest = c->up.len - c->up_ok - line_end;
	if (!buf_reserve(&c->up, nl > line_end ? nl - line_end : 0))
		return false;
	h = c->up.d + c->up_ok;
	memmove(h + nl, h + line_end, rest);
	memcpy(h, line, nl);
	c->up.len = c->up_ok + nl + rest;
	c->hs.fed = 0;
	return true;
}

static bool drop_empty_lines(struct conn *c);

/* One request head at up[up_ok..). 1 accepted (up_ok advanced), 0 need more, -1 refused. */
static int check_http_head(struct egress_engine *e, struct conn *c, bool first)
{
	struct egress_httpreq q;
	const char *why = NULL;
	if (c->hs.fed == 0 && !drop_empty_lines(c))
		return 0;
	if (c->up_ok == c->up.len)
		return 0;
	int r = egress_httpreq_feed(&c->hs, (const char *)c->up.d + c->up_ok, c->up.len - c->up_ok, &q, &why);
	if (r == 0)
		return 0;
	if (r < 0) {
		refuse(c, why ? why : "bad-request");
		return -1;
	}
	if (c->kind == EGRESS_CONN_PROXY && c->proxy_abs) {
		if (q.form != EGRESS_HTTP_ABSOLUTE || !streq(q.host, c->name) || q.port != c->port) {
			refuse(c, "proxy-request-for-another-host");
			return -1;
		}
		if (!rewrite_origin(c, &q, c->hs.n_host == 0)) {
			refuse(c, "request-too-large");
			return -1;
		}
		egress_httpreq_init(&c->hs);
		r = egress_httpreq_feed(&c->hs, (const char *)c->up.d + c->up_ok, c->up.len - c->up_ok, &q, &why);
		if (r != 1) {
			refuse(c, "bad-request");
			return -1;
		}
	} else if (q.form != EGRESS_HTTP_ORIGIN || !streq(q.host, c->name)) {
		refuse(c, q.form == EGRESS_HTTP_ORIGIN ? "host-mismatch" : "not-origin-form");
		return -1;
	} else if (q.port && q.port != c->port) {
		/* "Host: name:9999" on a connection to name:80: a front that routes by Host and port
		 * would take it elsewhere (the proxy refuses the same) */
		refuse(c, "host-port-mismatch");
		return -1;
	}
	if (q.chunked) {
		refuse(c, "chunked-request-body");
		return -1;
	}
	if (q.expect_len) {
		/* "Expect: 100-continue" goes no further: a front that answered 100 (or anything)
		 * before the body arrived could take the body for the next request; the box's
		 * client sends its body after its own short wait instead */
		uint8_t *h = c->up.d + c->up_ok;
		memmove(h + q.expect_off, h + q.expect_off + q.expect_len, c->up.len - c->up_ok - q.expect_off - q.expect_len);
		c->up.len -= q.expect_len;
		q.head_len -= q.expect_len;
	}
	(void)e, (void)first;
	c->nreq++;
	if (c->state == S_RELAY)
		c->deadline = 0; /* the next head gets its own time (relay_deadline) */
	c->up_ok += q.head_len;
	c->body_left = q.content_length > 0 ? q.content_length : 0;
	c->in_body = true;
	egress_httpreq_init(&c->hs);
	/* websocket & co: what follows is another protocol only if the server agreed (101),
	 * which we do not see; so the box's next bytes decide: another HTTP request is checked
	 * as one (an Upgrade header must not switch the Host check off for a server that
	 * ignores it), anything else is the upgraded protocol, relayed raw */
	c->after_upgrade = q.upgrade;
	return 1;
}

static int looks_http(const uint8_t *d, size_t len);

/* HTTP mode: vet as much of up as possible, request by request. */
static int advance_http(struct egress_engine *e, struct conn *c)
{
	while (c->mode == M_HTTP && c->up_ok < c->up.len) {
		if (c->in_body) {
			size_t n = c->up.len - c->up_ok;
			if ((int64_t)n > c->body_left)
				n = (size_t)c->body_left;
			c->up_ok += n;
			c->body_left -= (int64_t)n;
			if (c->body_left > 0)
				return 1;
			c->in_body = false;
			continue;
		}
		if (c->after_upgrade) {
			int h = looks_http(c->up.d + c->up_ok, c->up.len - c->up_ok);
			if (h == 0)
				return 1; /* need more to tell */
			c->after_upgrade = false;
			if (h < 0) {
				c->mode = M_RAW;
				break;
			}
		}
		int r = check_http_head(e, c, false);
		if (r <= 0)
			return r;
	}
	if (c->mode == M_RAW)
		c->up_ok = c->up.len;
	return 1;
}

#define LEADING_EMPTY_MAX 64

static bool http_space(uint8_t b) { return b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == '\v' || b == '\f'; }
static bool ascii_alpha(uint8_t b) { return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z'); }

/* Whether the stream starts like an HTTP/1.x request ("METHOD "), as the most lenient server
 * would take it: after any whitespace (RFC 9112 2.2 has servers skip empty lines; Python's
 * http.server splits the line on any whitespace, so " GET / …" is a request to it) and with
 * a method in any case. 1 yes, 0 need more, -1 no. What this calls HTTP, the strict request
 * parser then judges: a request it refuses closes the connection; raw relaying of anything
 * a server could read as a request would let the box pick another Host (a leading space or
 * a lowercase method was relayed unchecked on non-web ports and after an Upgrade). So much
 * whitespace that only a parser can tell counts as HTTP (and the head timeout ends it). */
#define LOOKS_LINE_MAX 8192

/* RFC 9110 tchar: what a method may be made of (Go's server takes any token as a method,
 * nginx takes '_' and '-') */
static bool tchar(uint8_t b)
{
	return ascii_alpha(b) || (b >= '0' && b <= '9') || (b && strchr("!#$%&'*+-.^_`|~", b));
}

/* What separates a method from its target for the most lenient server: Python's str.split()
 * also splits on VT, FF and the separators 0x1c-0x1f (CR and LF end the line instead) */
static bool http_sep(uint8_t b) { return b == ' ' || b == '\t' || b == '\v' || b == '\f' || (b >= 0x1c && b <= 0x1f); }

static int looks_http(const uint8_t *d, size_t len)
{
	size_t k = 0;
	while (k < len && http_space(d[k]))
		if (++k >= LEADING_EMPTY_MAX)
			return 1;
	size_t i = k;
	bool letters = true;
	for (; i < len && tchar(d[i]); i++) {
		letters = letters && ascii_alpha(d[i]);
		if (i - k >= LOOKS_LINE_MAX)
			return 1; /* a token that long only a parser can judge */
	}
	if (i == len)
		return 0;
	if (i == k || !http_sep(d[i]))
		return -1; /* not "TOKEN SP …": another protocol */
	if (letters && i - k >= 3 && i - k <= 11)
		return 1; /* a method as servers know them: at once */
	/* another token ("X_Y", "M-SEARCH", "SSH-2.0-OpenSSH_9.2p1 Debian"): a request line only
	 * if the line names an HTTP version after whitespace — SSH's banner does not */
	for (size_t j = i; j < len && j < k + LOOKS_LINE_MAX; j++) {
		if (d[j] == '\n')
			return -1;
		if (j + 5 <= len && http_sep(d[j - 1]) && memcmp(d + j, "HTTP/", 5) == 0)
			return 1;
	}
	return len >= k + LOOKS_LINE_MAX ? 1 : 0;
}

/* Empty lines (CRLF) before a request head: servers skip them (RFC 9112 2.2), the strict
 * parser does not take them, so they are dropped here, never forwarded. false when a lone
 * CR at the end leaves it open whether one more follows. */
static bool drop_empty_lines(struct conn *c)
{
	size_t at = c->up_ok, k = 0;
	while (k < LEADING_EMPTY_MAX && at + k + 1 < c->up.len && c->up.d[at + k] == '\r' && c->up.d[at + k + 1] == '\n')
		k += 2;
	if (k) {
		memmove(c->up.d + at, c->up.d + at + k, c->up.len - at - k);
		c->up.len -= k;
	}
	return !(c->up.len == at + 1 && c->up.d[at] == '\r');
}

/* The first bytes the box sends on a connection (transparent, or inside a CONNECT tunnel):
 * a TLS ClientHello gets the SNI check and HTTP requests the Host check, whatever the port;
 * anything else is relayed raw, except on 80 and 443 where it is refused. Nothing from the
 * box is forwarded before this decision. 1 decided, 0 need more, -1 refused. */
static int classify(struct egress_engine *e, struct conn *c)
{
	if (c->up.len == 0)
		return 0;
	if (c->up.d[0] == 0x16)
		return check_tls(c);
	int h = looks_http(c->up.d, c->up.len);
	if (h == 0)
		return 0;
	if (h > 0) {
		c->mode = M_HTTP;
		c->in_body = false;
		egress_httpreq_init(&c->hs);
		return advance_http(e, c);
	}
	if (port_is_web(c->port)) {
		refuse(c, "neither-tls-nor-http");
		return -1;
	}
	c->mode = M_RAW;
	c->up_ok = c->up.len;
	return 1;
}

/* --- proxy head ------------------------------------------------------------------------ */

/* For the audit line of a request the parser refused: the host and port its request line
 * names, as far as they can be told ("CONNECT h:p", "GET http://h:p/…"), bytes outside a
 * host name's shown as '?'. Never used for anything but the log. */
static void proxy_target_guess(struct conn *c)
{
	const uint8_t *d = c->up.d, *end = d + (c->up.len < 2048 ? c->up.len : 2048);
	const uint8_t *sp = d ? memchr(d, ' ', (size_t)(end - d)) : NULL;
	if (!sp)
		return;
	const uint8_t *t = sp + 1, *te = t;
	while (te < end && *te != ' ' && *te != '\r' && *te != '\n')
		te++;
	const uint8_t *scheme = te - t > 3 ? memmem(t, (size_t)(te - t), "://", 3) : NULL;
	if (scheme)
		t = scheme + 3;
	size_t n = 0;
	const uint8_t *p = t;
	for (; p < te && *p != '/' && *p != '?' && *p != '#' && n < EGRESS_NAME_MAX; p++) {
		uint8_t b = *p;
		bool ok = ascii_alpha(b) || (b >= '0' && b <= '9') || b == '.' || b == '-' || b == ':' || b == '[' ||
			  b == ']' || b == '@' || b == '_';
		c->name[n++] = ok ? (char)b : '?';
	}
	c->name[n] = '\0';
	char *colon = strrchr(c->name, ':');
	if (colon && !strchr(colon, ']')) {
		unsigned long port = strtoul(colon + 1, NULL, 10);
		*colon = '\0';
		c->port = port > 0 && port < 65536 ? (uint16_t)port : 0;
	} else {
		c->port = sp - d == 7 && memcmp(d, "CONNECT", 7) == 0 ? 0 : 80;
	}
}

static void proxy_head(struct egress_engine *e, struct conn *c)
{
	struct egress_httpreq q;
	const char *why = NULL;
	if ((c->hs.fed == 0 && !drop_empty_lines(c)) || c->up.len == 0)
		return;
	int r = egress_httpreq_feed(&c->hs, (const char *)c->up.d, c->up.len, &q, &why);
	if (r == 0)
		return;
	if (r < 0) {
		proxy_target_guess(c);
		refuse(c, why ? why : "bad-request");
		return;
	}
	snprintf(c->name, sizeof(c->name), "%s", q.host);
	c->port = q.port;
	if (q.form == EGRESS_HTTP_ORIGIN) {
		refuse(c, "not-a-proxy-request");
		return;
	}
	if (!check_policy(e, c))
		return;
	if (q.form == EGRESS_HTTP_CONNECT) {
		if (c->up.len > q.head_len) { /* nothing may ride behind the CONNECT head */
			refuse(c, "pipelined-after-connect");
			return;
		}
		buf_consume(&c->up, q.head_len);
		c->connect_reply = true;
		c->mode = M_NONE;
	} else {
		c->proxy_abs = true;
		c->mode = M_HTTP;
		c->in_body = false;
		egress_httpreq_init(&c->hs);
		if (check_http_head(e, c, true) <= 0)
			return;
		/* a later pipelined request refused: the connection only drains its 403 */
		if (advance_http(e, c) < 0 || c->state != S_HEAD)
			return;
	}
	start_dial(e, c);
}

/* --- connection life ------------------------------------------------------------------- */

void egress_engine_add(struct egress_engine *e, int fd, enum egress_conn_kind kind,
		       struct in_addr addr, uint16_t port)
{
	if (e->n >= e->max) {
		close(fd);
		egress_engine_log_refused(e, "", port, "", "too-many-connections");
		return;
	}
	fd_set_nonblock(fd, true);
	struct conn *c = xcalloc(1, sizeof(*c));
	c->id = ++e->next_id;
	c->kind = kind;
	c->bfd = fd;
	c->ufd = -1;
	c->dpipe[0] = c->dpipe[1] = -1;
	c->addr = addr;
	c->box_port = c->port = port;
	c->t0 = mono_ms();
	c->deadline = c->t0 + EGRESS_HEAD_TIMEOUT_MS;
	c->state = S_HEAD;
	egress_httpreq_init(&c->hs);
	c->next = e->conns;
	e->conns = c;
	e->n++;
	if (kind != EGRESS_CONN_TRANSPARENT)
		return;
	const char *name = fakeip_lookup(e->pool, addr, (uint64_t)(c->t0 / 1000));
	if (!name) {
		refuse(c, "unknown-address");
		return;
	}
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->fip_held = fakeip_ref(e->pool, addr) == 0;
	if (!check_policy(e, c))
		return;
	/* other ports may carry server-first protocols: dial now, classify the box's first
	 * bytes when they come (nothing is forwarded before) */
	if (!port_is_web(port))
		start_dial(e, c);
}

static void conn_free(struct egress_engine *e, struct conn *c)
{
	log_conn(e, c);
	if (c->fip_held)
		fakeip_unref(e->pool, c->addr, (uint64_t)(mono_ms() / 1000));
	if (c->bfd >= 0)
		close(c->bfd);
	if (c->ufd >= 0)
		close(c->ufd);
	for (int i = 0; i < 2; i++)
		if (c->dpipe[i] >= 0)
			close(c->dpipe[i]);
	free(c->up.d);
	free(c->down.d);
	free(c);
}

void egress_engine_free(struct egress_engine *e)
{
	if (!e)
		return;
	while (e->conns) {
		struct conn *c = e->conns;
		e->conns = c->next;
		conn_free(e, c);
	}
	egress_resolver_free(e->resolver);
	free(e->box);
	free(e);
}

/* DNS over TCP: answer every complete message in up. */
static void dns_tcp(struct egress_engine *e, struct conn *c)
{
	const uint8_t *msg;
	size_t mlen;
	int n;
	while ((n = dns_tcp_next(c->up.d, c->up.len, &msg, &mlen)) > 0) {
		uint8_t ans[DNS_ANSWER_MAX + 2];
		size_t alen;
		if (egress_engine_dns(e, msg, mlen, ans + 2, DNS_ANSWER_MAX, &alen) == 0 &&
		    dns_tcp_prefix(ans, alen) == 0 && buf_room(&c->down) >= alen + 2)
			buf_append(&c->down, ans, alen + 2);
		buf_consume(&c->up, (size_t)n);
	}
	if (n < 0)
		c->state = S_DEAD;
}

/* New bytes from the box: run the checks of the current state. */
static void box_bytes(struct egress_engine *e, struct conn *c)
{
	if (c->kind == EGRESS_CONN_DNS) {
		dns_tcp(e, c);
		return;
	}
	if (c->state == S_HEAD && c->kind == EGRESS_CONN_PROXY) {
		proxy_head(e, c);
		return;
	}
	if (c->mode == M_NONE) {
		int r = classify(e, c);
		if (r > 0 && c->state == S_HEAD)
			start_dial(e, c);
		return;
	}
	if (c->mode == M_HTTP) {
		/* a first head that arrived in pieces: classified at its first bytes, complete
		 * now — dialled now (it waited for ever) */
		if (advance_http(e, c) > 0 && c->state == S_HEAD && c->up_ok > 0)
			start_dial(e, c);
	} else {
		c->up_ok = c->up.len;
	}
}

static void on_box(struct egress_engine *e, struct conn *c, short rev)
{
	if (rev & (POLLIN | POLLHUP | POLLERR)) {
		int r = buf_read(&c->up, c->bfd, &c->nup);
		if (r == 0)
			c->b_eof = true;
		else if (r < 0 && r != -EAGAIN)
			c->state = S_DEAD;
		else if (r > 0)
			box_bytes(e, c);
	}
	if (c->state != S_DEAD && (rev & POLLOUT) && buf_write(&c->down, c->bfd, c->down.len) < 0)
		c->state = S_DEAD;
	if (c->state != S_DEAD && (rev & POLLOUT) && c->down.len == 0 && splicing(c) && splice_out(c) < 0)
		c->state = S_DEAD;
}

static void on_up(struct conn *c, short rev)
{
	if (c->state == S_DIAL) {
		if (rev & (POLLOUT | POLLERR | POLLHUP))
			dial_done(c);
		return;
	}
	if (rev & (POLLIN | POLLHUP | POLLERR)) {
		maybe_splice(c);
		int r = splicing(c) ? splice_in(c) : buf_read(&c->down, c->ufd, &c->ndown);
		if (r == 0)
			c->u_eof = true;
		else if (r < 0 && r != -EAGAIN)
			c->state = S_DEAD;
	}
	if (c->state != S_DEAD && (rev & POLLOUT)) {
		int w = buf_write(&c->up, c->ufd, c->up_ok);
		if (w < 0)
			c->state = S_DEAD;
		else
			c->up_ok -= (size_t)w;
	}
}

/* A message the box began and has not finished while relaying — a first message not yet
 * classified (on any port, in a CONNECT tunnel too), an HTTP head not yet complete — must be
 * finished within EGRESS_HEAD_TIMEOUT_MS like the first head of a connection. Checked bytes,
 * a body, a TLS or raw stream have no deadline. */
static void relay_deadline(struct conn *c, int64_t now)
{
	if (c->state != S_RELAY || c->kind == EGRESS_CONN_DNS)
		return;
	/* a full buffer is ours to drain (the upstream reads slowly), not the box's delay */
	bool open_head = c->up_ok < c->up.len && buf_room(&c->up) > 0;
	c->deadline = !open_head ? 0 : c->deadline ? c->deadline : now + EGRESS_HEAD_TIMEOUT_MS;
}

/* Half-closes and the end of a connection. */
static void settle(struct conn *c, int64_t now)
{
	if (c->state == S_DRAIN && c->down.len == 0)
		c->state = S_DEAD;
	if (c->state == S_DEAD)
		return;
	relay_deadline(c, now);
	if (c->deadline && now > c->deadline) {
		refuse(c, c->resolving ? "resolve-timeout" : c->state == S_DIAL ? "connect-timeout" : "head-timeout");
		return;
	}
	if (c->state != S_RELAY) {
		/* closed before its first message was checked: nothing was allowed through */
		if (c->b_eof && c->state == S_HEAD && c->kind != EGRESS_CONN_DNS) {
			if (!c->reason)
				c->reason = c->up.len ? "closed-mid-request" : "closed-before-request";
			c->state = S_DEAD;
		}
		if (c->kind == EGRESS_CONN_DNS && c->b_eof && c->down.len == 0)
			c->state = S_DEAD;
		return;
	}
	/* closed with an unfinished message that can never be checked now */
	if (c->b_eof && c->up_ok == 0 && c->up.len > 0) {
		refuse(c, "closed-mid-request");
		return;
	}
	if (c->b_eof && c->up.len == 0 && !c->u_shut) {
		shutdown(c->ufd, SHUT_WR);
		c->u_shut = true;
	}
	if (c->u_eof && !down_pending(c) && !c->b_shut) {
		shutdown(c->bfd, SHUT_WR);
		c->b_shut = true;
	}
	if (c->u_shut && c->b_shut)
		c->state = S_DEAD;
}

void egress_engine_fill(struct egress_engine *e, struct pollfd *pfd, size_t *n, size_t cap, int *timeout_ms)
{
	int64_t now = mono_ms();
	e->ridx = -1;
	if (e->resolver && *n < cap) {
		e->ridx = (int)*n;
		pfd[(*n)++] = (struct pollfd){.fd = egress_resolver_fd(e->resolver), .events = POLLIN};
	}
	for (struct conn *c = e->conns; c; c = c->next) {
		c->bidx = c->uidx = -1;
		if (*n + 2 > cap)
			continue;
		short bev = 0, uev = 0;
		bool relay = c->state == S_RELAY;
		if (!c->b_eof && buf_room(&c->up) > 0 && c->state != S_DRAIN && c->state != S_DIAL)
			bev |= POLLIN;
		if (down_pending(c) && (relay || c->state == S_DRAIN || c->kind == EGRESS_CONN_DNS))
			bev |= POLLOUT;
		/* a side with nothing to wait for is left out of the round: poll reports POLLHUP
		 * and POLLERR even for events 0, and with no room to read into nothing would
		 * consume them, so a box (or an upstream) that closes while its peer's buffer is
		 * full would spin this thread; it is looked at again once there is room */
		if (bev || !relay) {
			c->bidx = (int)*n;
			pfd[(*n)++] = (struct pollfd){.fd = c->bfd, .events = bev};
		}
		if (c->ufd >= 0 && (relay || c->state == S_DIAL)) {
			if (c->state == S_DIAL)
				uev = POLLOUT;
			else {
				if (!c->u_eof && (splicing(c) ? dpipe_room(c) > 0 : buf_room(&c->down) > 0))
					uev |= POLLIN;
				if (c->up_ok)
					uev |= POLLOUT;
			}
			if (uev) {
				c->uidx = (int)*n;
				pfd[(*n)++] = (struct pollfd){.fd = c->ufd, .events = uev};
			}
		}
		if (c->deadline) {
			int64_t d = c->deadline - now;
			if (d < *timeout_ms)
				*timeout_ms = d < 0 ? 0 : (int)d;
		}
	}
}

void egress_engine_dispatch(struct egress_engine *e, struct pollfd *pfd)
{
	int64_t now = mono_ms();
	if (e->ridx >= 0 && pfd[e->ridx].revents)
		resolved(e);
	for (struct conn **pc = &e->conns; *pc;) {
		struct conn *c = *pc;
		if (c->bidx >= 0 && pfd[c->bidx].revents && c->state != S_DEAD)
			on_box(e, c, pfd[c->bidx].revents);
		if (c->uidx >= 0 && pfd[c->uidx].revents && c->state != S_DEAD)
			on_up(c, pfd[c->uidx].revents);
		/* bytes that arrived while dialling are checked once the upstream is there */
		if (c->state == S_RELAY && c->mode == M_NONE && c->up.len)
			box_bytes(e, c);
		settle(c, now);
		if (c->state == S_DEAD) {
			*pc = c->next;
			e->n--;
			conn_free(e, c);
			continue;
		}
		pc = &c->next;
	}
}
