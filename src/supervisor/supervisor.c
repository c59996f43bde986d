/* supervisor.c — the detached supervisor: control socket, client sessions relayed to
 * paddock-init, lifecycle and state on disk.
 *
 * Every frame from a client is hostile input: it is parsed with the protocol's decoders, only
 * the types a client may send are accepted, exec requests are re-encoded with the box's
 * defaults, and stream ids are translated so a client can only ever address its own sessions.
 * A malformed frame closes that client's connection (and hangs up its sessions).
 *
 * Flow control (proto.h): with a paddock-init that speaks windows, no connection is ever
 * left unread for one session's sake. A client that speaks them too has its grants passed
 * through both ways (its stdin within paddock-init's credit, paddock-init's output within
 * the client's); for one that does not, the supervisor grants in its place: paddock-init's
 * output again as the client's queue drains, its stdin held here until paddock-init takes
 * it. A session whose client went away has its output dropped and granted again at once. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "runtime/vm/vm.h"
#include "supervisor/net.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "util/log.h"

#define SUP_MAX_SESSIONS 256
/* one connection per exec/shell/attach, plus room for the lifecycle verbs (stop, diff) while
 * every session is taken */
#define SUP_MAX_CLIENTS (SUP_MAX_SESSIONS + 16)
#define SUP_HIGH_WATER (8u << 20)
/* Sessions that lost their client and live on (their process ignores SIGHUP) are kept up to
 * this many, their output dropped; past it the oldest is killed: such sessions would
 * otherwise hold their slots for ever, and in the end every new exec would be refused */
#define SUP_MAX_ORPHANS 32
/* A client without windows, with paddock-init on them: its stdin held here beyond which we
 * stop reading it, and its queue at or below which the output it was sent counts as drained */
#define SUP_UNWINDOWED_MAX (1u << 20)

struct sup_client {
	struct proto_conn conn;
	bool greeted;
	bool wants_stop_ack;
	bool windowed; /* it and paddock-init announced windows: its grants pass through */
};

struct sup_session {
	uint32_t global, local;
	int client; /* index into clients, -1 when the client went away */
	uint64_t orphaned; /* once it has no client: in which order it lost it (1, 2, ...) */
	bool killed;       /* an orphan past SUP_MAX_ORPHANS, sent SIGKILL */
	/* with paddock-init on windows (sup.windowed): */
	uint32_t in_credit;     /* stdin bytes paddock-init takes now */
	uint32_t out_credit[2]; /* stdout, stderr bytes paddock-init may still send */
	uint32_t owed[2];       /* a client without windows: relayed to it, not granted again yet */
	struct proto_buf in_q;  /* a client without windows: its stdin waiting for the credit, */
	size_t in_q_off;
	bool in_q_eof;          /* and its EOF(0) after it */
};

struct sup {
	struct box box;
	struct box_spec spec;
	const char *box_dir;
	struct proto_conn init;
	int listen_fd;
	struct sup_client *clients[SUP_MAX_CLIENTS];
	struct sup_session sessions[SUP_MAX_SESSIONS];
	size_t n_sessions;
	uint32_t next_global;
	uint64_t orphans; /* sessions that ever lost their client */
	bool windowed; /* paddock-init announced windows (and so did we) */
	bool stopping, box_gone, stop_killed;
	int64_t stop_deadline; /* stopping: when the box is killed if its init has not ended it */
	int last_exit;
};

static volatile sig_atomic_t got_term;
/* a TERM while the box is still starting also cancels the start (box_boot_cancel: the
 * boot's waits end within 100 ms and undo what was made), as it does for run --rm */
static void on_term(int sig) { got_term = sig, box_boot_cancel = sig; }

static struct sup_session *session_by_global(struct sup *s, uint32_t g)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (s->sessions[i].global == g)
			return &s->sessions[i];
	return NULL;
}

static struct sup_session *session_by_local(struct sup *s, int client, uint32_t local)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (s->sessions[i].client == client && s->sessions[i].local == local)
			return &s->sessions[i];
	return NULL;
}

static void session_drop(struct sup *s, struct sup_session *x)
{
	proto_buf_free(&x->in_q);
	*x = s->sessions[--s->n_sessions];
}

/* n more bytes of output i (0 stdout, 1 stderr) for paddock-init to send */
static void grant_init(struct sup *s, struct sup_session *x, int i, uint32_t n)
{
	if (n && proto_credit_grant(&x->out_credit[i], n) == 0)
		proto_send_window(&s->init, x->global, (uint8_t)(i + 1), n);
}

/* A client without windows: its queued stdin goes to paddock-init as far as the credit goes,
 * then its EOF(0). */
static void stdin_flush(struct sup *s, struct sup_session *x)
{
	while (x->in_q_off < x->in_q.len && x->in_credit > 0) {
		size_t n = x->in_q.len - x->in_q_off;
		n = n < x->in_credit ? n : x->in_credit;
		n = n < PROTO_MAX_PAYLOAD ? n : PROTO_MAX_PAYLOAD;
		proto_conn_send(&s->init, PROTO_STDIN, 0, x->global, x->in_q.data + x->in_q_off, (uint32_t)n);
		x->in_credit -= (uint32_t)n;
		x->in_q_off += n;
	}
	if (x->in_q_off < x->in_q.len)
		return;
	x->in_q.len = x->in_q_off = 0;
	if (x->in_q_eof) {
		uint8_t zero = 0;
		proto_conn_send(&s->init, PROTO_EOF, 0, x->global, &zero, 1);
		x->in_q_eof = false;
	}
}

static void stdin_queue(struct sup *s, struct sup_session *x, const struct proto_frame *f)
{
	if (f->hdr.type == PROTO_EOF) {
		x->in_q_eof = true;
	} else {
		if (x->in_q_off > 0 && x->in_q_off >= x->in_q.len / 2) {
			memmove(x->in_q.data, x->in_q.data + x->in_q_off, x->in_q.len - x->in_q_off);
			x->in_q.len -= x->in_q_off;
			x->in_q_off = 0;
		}
		proto_buf_put(&x->in_q, f->payload, f->hdr.len);
	}
	stdin_flush(s, x);
}

static void session_signal(struct sup *s, const struct sup_session *x, int sig)
{
	uint8_t p[4];
	proto_put_u32(p, (uint32_t)sig);
	proto_conn_send(&s->init, PROTO_SIGNAL, 0, x->global, p, 4);
}

/* Kills the oldest orphans while there are more than SUP_MAX_ORPHANS alive. */
static void orphans_bound(struct sup *s)
{
	for (;;) {
		struct sup_session *oldest = NULL;
		size_t alive = 0;
		for (size_t i = 0; i < s->n_sessions; i++) {
			struct sup_session *x = &s->sessions[i];
			if (!x->orphaned || x->killed)
				continue;
			alive++;
			if (!oldest || x->orphaned < oldest->orphaned)
				oldest = x;
		}
		if (alive <= SUP_MAX_ORPHANS)
			return;
		fprintf(stderr, "paddock supervisor: session %u lost its client and outlived its SIGHUP; killed "
			"(more than %d such sessions)\n", oldest->global, SUP_MAX_ORPHANS);
		session_signal(s, oldest, SIGKILL);
		oldest->killed = true;
	}
}

/* The session lost its client: what it still had queued is dropped, and paddock-init may
 * send its output (dropped as it comes) a whole window ahead again. */
static void session_orphan(struct sup *s, struct sup_session *x)
{
	x->client = -1;
	x->orphaned = ++s->orphans;
	proto_buf_free(&x->in_q);
	x->in_q_off = 0;
	x->in_q_eof = false;
	for (int i = 0; s->windowed && i < 2; i++) {
		x->owed[i] = 0;
		if (x->out_credit[i] < PROTO_FLOW_WINDOW)
			grant_init(s, x, i, PROTO_FLOW_WINDOW - x->out_credit[i]);
	}
}

static void client_error(struct sup_client *c, uint32_t stream, int e, const char *msg)
{
	struct proto_buf b = {0};
	proto_encode_error(&b, e, msg);
	proto_conn_send(&c->conn, PROTO_ERROR, 0, stream, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
}

static void client_close(struct sup *s, int idx)
{
	struct sup_client *c = s->clients[idx];
	for (size_t i = 0; i < s->n_sessions; i++) {
		if (s->sessions[i].client != idx)
			continue;
		/* the client hung up: hang up its session like a closed terminal would */
		session_signal(s, &s->sessions[i], SIGHUP);
		session_orphan(s, &s->sessions[i]);
	}
	orphans_bound(s);
	proto_conn_free(&c->conn);
	free(c);
	s->clients[idx] = NULL;
}

static int handle_exec(struct sup *s, int idx, const struct proto_frame *f)
{
	struct sup_client *c = s->clients[idx];
	if (session_by_local(s, idx, f->hdr.stream) || f->hdr.stream == 0)
		return -EBADMSG;
	if (s->n_sessions >= SUP_MAX_SESSIONS || s->stopping) {
		client_error(c, f->hdr.stream, EBUSY, s->stopping ? "the sandbox is stopping" : "too many sessions");
		return 0;
	}
	_cleanup_free_ struct proto_exec *req = xmalloc(sizeof(*req));
	if (proto_decode_exec(f, req) < 0)
		return -EBADMSG;
	struct proto_buf b = {0};
	sup_merge_exec(&s->spec, req, &b);
	/* the request with the box's -e and the proxy's variables added may pass the protocol's
	 * limits (PROTO_MAX_ENV entries, PROTO_MAX_PAYLOAD bytes): checked by paddock-init's own
	 * decoder here, before it reaches paddock-init, which would end the box on it */
	struct proto_frame merged = {.hdr = {.type = PROTO_EXEC, .stream = 1, .len = (uint32_t)b.len}, .payload = b.data};
	if (b.len > PROTO_MAX_PAYLOAD || proto_decode_exec(&merged, req) < 0) {
		proto_buf_free(&b);
		client_error(c, f->hdr.stream, E2BIG, "the command and its environment, with the sandbox's own, are too large");
		return 0;
	}
	uint32_t g = ++s->next_global;
	struct sup_session *x = &s->sessions[s->n_sessions++];
	*x = (struct sup_session){.global = g, .local = f->hdr.stream, .client = idx};
	proto_conn_send(&s->init, PROTO_EXEC, 0, g, b.data, (uint32_t)b.len);
	/* a client without windows: we grant its output in its place (grant_drained) */
	for (int i = 0; s->windowed && !c->windowed && i < 2; i++)
		grant_init(s, x, i, PROTO_FLOW_WINDOW);
	pd_debug("session %u: %s (client %d stream %u)", g, req->argv[0], idx, f->hdr.stream);
	proto_buf_free(&b); /* req points into it since the check above */
	return 0;
}

static void handle_info(struct sup *s, struct sup_client *c)
{
	struct proto_buf b = {0};
	char kv[128];
	snprintf(kv, sizeof(kv), "supervisor_pid=%d", (int)getpid());
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	snprintf(kv, sizeof(kv), "box_pid=%d", (int)s->box.h.pid);
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	snprintf(kv, sizeof(kv), "backend=%s", s->box.rt->name);
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	snprintf(kv, sizeof(kv), "sessions=%zu", s->n_sessions);
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	proto_conn_send(&c->conn, PROTO_INFO, 0, 0, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
}

static void begin_stop(struct sup *s, uint32_t timeout_ms)
{
	if (s->stopping)
		return;
	s->stopping = true;
	/* paddock-init TERMs, KILLs after timeout_ms and exits; a box that cannot do that (a
	 * guest or a QEMU that is frozen, an init that no longer reads) is killed from here a
	 * little later — a stop never waits for the box's cooperation for ever */
	s->stop_deadline = mono_ms() + timeout_ms + SUP_STOP_GRACE_MS;
	uint8_t t[4];
	proto_put_u32(t, timeout_ms);
	proto_conn_send(&s->init, PROTO_STOP, 0, 0, t, 4);
}

/* A client's input for its session x, passed on to paddock-init. With windows: a client
 * that speaks them sends stdin within paddock-init's credit and grants output within the
 * protocol's cap (or is closed); one that does not has its stdin (and its EOF after it)
 * held until paddock-init takes it. */
static int relay_input(struct sup *s, struct sup_client *c, struct sup_session *x, const struct proto_frame *f)
{
	uint8_t fd;
	uint32_t n;
	bool in = f->hdr.type == PROTO_STDIN || (f->hdr.type == PROTO_EOF && f->payload[0] == 0);
	if (s->windowed && !c->windowed && in) {
		stdin_queue(s, x, f);
		return 0;
	}
	if (s->windowed && f->hdr.type == PROTO_STDIN && proto_credit_take(&x->in_credit, f->hdr.len) < 0)
		return -EBADMSG;
	if (f->hdr.type == PROTO_WINDOW &&
	    (proto_decode_window(f, &fd, &n) < 0 || proto_credit_grant(&x->out_credit[fd - 1], n) < 0))
		return -EBADMSG;
	proto_conn_send(&s->init, f->hdr.type, 0, x->global, f->payload, f->hdr.len);
	return 0;
}

/* One frame from a client. Returns <0 to close that client. */
static int client_frame(struct sup *s, int idx, const struct proto_frame *f)
{
	struct sup_client *c = s->clients[idx];
	uint16_t ma, mi;
	if (!c->greeted) {
		if (proto_decode_hello(f, &ma, &mi) < 0 || ma != PROTO_VERSION_MAJOR)
			return -EPROTO;
		c->greeted = true;
		c->windowed = s->windowed && mi >= PROTO_MINOR_WINDOW;
		return 0;
	}
	struct sup_session *x;
	uint32_t u;
	switch (f->hdr.type) {
	case PROTO_EXEC:
		return handle_exec(s, idx, f);
	case PROTO_STDIN:
	case PROTO_EOF:
	case PROTO_RESIZE:
	case PROTO_SIGNAL:
	case PROTO_WINDOW:
		/* paddock-init ends the whole box on a malformed frame: a client's bad one closes
		 * that client only */
		if (proto_check_input(f) < 0 || (f->hdr.type == PROTO_WINDOW && !c->windowed))
			return -EBADMSG;
		x = session_by_local(s, idx, f->hdr.stream);
		if (!x)
			return 0; /* the session already ended: late input is dropped */
		return relay_input(s, c, x, f);
	case PROTO_STOP:
		if (f->hdr.stream != 0 || proto_decode_u32(f, &u) < 0)
			return -EBADMSG;
		c->wants_stop_ack = true;
		begin_stop(s, u > 600000 ? 600000 : u);
		return 0;
	case PROTO_INFO:
		handle_info(s, c);
		return 0;
	default:
		return -EBADMSG;
	}
}

/* paddock-init's grant for a session's stdin: passed to a client that speaks windows, used
 * here for one that does not (and kept for none). */
static int init_window(struct sup *s, struct sup_session *x, const struct proto_frame *f)
{
	uint8_t fd;
	uint32_t n;
	if (!s->windowed || proto_decode_window(f, &fd, &n) < 0 || fd != 0 || proto_credit_grant(&x->in_credit, n) < 0)
		return -EBADMSG;
	struct sup_client *c = x->client >= 0 ? s->clients[x->client] : NULL;
	if (c && c->windowed)
		proto_conn_send(&c->conn, PROTO_WINDOW, 0, x->local, f->payload, f->hdr.len);
	else if (c)
		stdin_flush(s, x);
	return 0;
}

/* Output of a session from paddock-init with windows: within the credit, and granted again
 * at once when nobody reads it, or once relayed when its client does not grant (grant_drained). */
static int init_output(struct sup *s, struct sup_session *x, const struct proto_frame *f)
{
	int i = f->hdr.type == PROTO_STDERR;
	if (proto_credit_take(&x->out_credit[i], f->hdr.len) < 0)
		return -EBADMSG;
	if (x->client < 0)
		grant_init(s, x, i, f->hdr.len);
	else if (!s->clients[x->client]->windowed)
		x->owed[i] += f->hdr.len;
	return 0;
}

/* One frame from paddock-init. Returns <0 when init misbehaves (the box is then killed). */
static int init_frame(struct sup *s, const struct proto_frame *f)
{
	if (f->hdr.stream == 0) {
		if (f->hdr.type == PROTO_ACK && s->stopping)
			return 0;
		if (f->hdr.type == PROTO_INFO || f->hdr.type == PROTO_ACK)
			return 0;
		return -EBADMSG;
	}
	struct sup_session *x = session_by_global(s, f->hdr.stream);
	if (!x)
		return 0; /* a session whose client left long ago */
	switch (f->hdr.type) {
	case PROTO_STDOUT: case PROTO_STDERR:
		if (s->windowed && init_output(s, x, f) < 0)
			return -EBADMSG;
		break;
	case PROTO_STARTED: case PROTO_EOF: case PROTO_EXIT: case PROTO_ERROR:
		break;
	case PROTO_WINDOW:
		return init_window(s, x, f);
	default:
		return -EBADMSG;
	}
	if (f->hdr.type == PROTO_EXIT && f->hdr.len == 4)
		s->last_exit = (int)proto_get_u32(f->payload);
	if (x->client >= 0)
		proto_conn_send(&s->clients[x->client]->conn, f->hdr.type, 0, x->local, f->payload, f->hdr.len);
	if (f->hdr.type == PROTO_EXIT || f->hdr.type == PROTO_ERROR)
		session_drop(s, x);
	return 0;
}

static void accept_client(struct sup *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	/* the socket lives in a 0700 directory; the peer check is defence in depth */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 ||
	    (cred.uid != getuid() && cred.uid != 0)) {
		close(fd);
		return;
	}
	for (int i = 0; i < SUP_MAX_CLIENTS; i++) {
		if (s->clients[i])
			continue;
		struct sup_client *c = xcalloc(1, sizeof(*c));
		proto_conn_init(&c->conn, fd);
		uint8_t p[8];
		proto_put_u32(p, PROTO_MAGIC);
		proto_put_u16(p + 4, PROTO_VERSION_MAJOR);
		/* what this supervisor and its box's init both speak: frames are relayed as they are */
		proto_put_u16(p + 6, sup_peer_minor);
		proto_conn_send(&c->conn, PROTO_HELLO, 0, 0, p, 8);
		s->clients[i] = c;
		return;
	}
	/* too many clients: said in place of the greeting (the client reports it), then closed */
	struct proto_buf b = {0};
	proto_encode_error(&b, EBUSY, "too many connections to this sandbox; retry when some have ended");
	(void)proto_send(fd, PROTO_ERROR, 0, 0, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
	close(fd);
}

static void pump_client(struct sup *s, int idx)
{
	struct sup_client *c = s->clients[idx];
	int r = proto_conn_read(&c->conn);
	struct proto_frame f;
	while (r >= 0 || r == -EAGAIN) {
		int q = proto_conn_next(&c->conn, &f);
		if (q == 0)
			break;
		if (q < 0 || client_frame(s, idx, &f) < 0) {
			pd_debug("client %d: protocol error, closing", idx);
			client_close(s, idx);
			return;
		}
	}
	if (c->conn.eof || (r < 0 && r != -EAGAIN))
		client_close(s, idx);
}

static int pump_init(struct sup *s)
{
	int r = proto_conn_read(&s->init);
	struct proto_frame f;
	int q;
	while ((q = proto_conn_next(&s->init, &f)) == 1)
		if (init_frame(s, &f) < 0)
			return -EPROTO;
	if (q < 0)
		return -EPROTO;
	if (s->init.eof || (r < 0 && r != -EAGAIN))
		return -EPIPE;
	return 0;
}

static size_t max_client_backlog(struct sup *s)
{
	size_t m = 0;
	for (int i = 0; i < SUP_MAX_CLIENTS; i++)
		if (s->clients[i] && proto_conn_pending(&s->clients[i]->conn) > m)
			m = proto_conn_pending(&s->clients[i]->conn);
	return m;
}

/* Whether a client without windows has more stdin held here than we take from it. */
static bool client_stdin_full(const struct sup *s, int idx)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (s->sessions[i].client == idx && s->sessions[i].in_q.len - s->sessions[i].in_q_off > SUP_UNWINDOWED_MAX)
			return true;
	return false;
}

/* Clients without windows whose queue drained: the output they were sent is granted to
 * paddock-init again. */
static void grant_drained(struct sup *s)
{
	for (size_t i = 0; s->windowed && i < s->n_sessions; i++) {
		struct sup_session *x = &s->sessions[i];
		struct sup_client *c = x->client >= 0 ? s->clients[x->client] : NULL;
		if (!c || c->windowed || proto_conn_pending(&c->conn) > SUP_UNWINDOWED_MAX)
			continue;
		for (int k = 0; k < 2; k++) {
			grant_init(s, x, k, x->owed[k]);
			x->owed[k] = 0;
		}
	}
}

static void flush_all(struct sup *s)
{
	for (int i = 0; i < SUP_MAX_CLIENTS; i++)
		if (s->clients[i]) {
			int r = proto_conn_flush(&s->clients[i]->conn);
			if (r < 0 && r != -EAGAIN)
				client_close(s, i);
			/* with windows a client's queue only holds what it granted: one past the
			 * high-water mark granted more than it reads, and is closed rather than
			 * have paddock-init left unread (without windows, loop() stops reading it) */
			else if (s->windowed && proto_conn_pending(&s->clients[i]->conn) > SUP_HIGH_WATER) {
				fprintf(stderr, "paddock supervisor: a client granted more output than it reads; closed\n");
				client_close(s, i);
			}
		}
	grant_drained(s);
	proto_conn_flush(&s->init);
}

static void notify_gone(struct sup *s, const char *why)
{
	for (size_t i = 0; i < s->n_sessions; i++)
		if (s->sessions[i].client >= 0)
			client_error(s->clients[s->sessions[i].client], s->sessions[i].local, EPIPE, why);
	while (s->n_sessions)
		session_drop(s, &s->sessions[0]);
	for (int i = 0; i < SUP_MAX_CLIENTS; i++)
		if (s->clients[i] && s->clients[i]->wants_stop_ack)
			proto_conn_send(&s->clients[i]->conn, PROTO_ACK, 0, 0, NULL, 0);
}

static int loop(struct sup *s)
{
	while (!s->box_gone) {
		if (got_term) {
			got_term = 0;
			begin_stop(s, SUP_STOP_TIMEOUT_MS);
		}
		if (s->stopping && !s->stop_killed && mono_ms() > s->stop_deadline) {
			fprintf(stderr, "paddock supervisor: the sandbox did not stop within its time; killed\n");
			box_kill(&s->box);
			s->stop_killed = true;
		}
		if (s->box.rt == &runtime_vm)
			vm_box_tick(&s->box.h, mono_ms());
		struct pollfd p[SUP_MAX_CLIENTS + 3];
		int map[SUP_MAX_CLIENTS + 3], n = 0;
		bool throttle = !s->windowed && max_client_backlog(s) > SUP_HIGH_WATER;
		p[n] = (struct pollfd){.fd = s->listen_fd, .events = s->stopping ? 0 : POLLIN}; map[n++] = -1;
		p[n] = (struct pollfd){.fd = s->init.fd,
			.events = (throttle ? 0 : POLLIN) | (proto_conn_pending(&s->init) ? POLLOUT : 0)}; map[n++] = -2;
		p[n] = (struct pollfd){.fd = s->box.h.pidfd, .events = POLLIN}; map[n++] = -3;
		bool init_throttle = proto_conn_pending(&s->init) > SUP_HIGH_WATER;
		for (int i = 0; i < SUP_MAX_CLIENTS; i++)
			if (s->clients[i]) {
				bool full = init_throttle || (s->windowed && !s->clients[i]->windowed && client_stdin_full(s, i));
				p[n] = (struct pollfd){.fd = s->clients[i]->conn.fd,
					.events = (full ? 0 : POLLIN) |
						  (proto_conn_pending(&s->clients[i]->conn) ? POLLOUT : 0)};
				map[n++] = i;
			}
		if (poll(p, (nfds_t)n, 1000) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int k = 0; k < n; k++) {
			if (!p[k].revents)
				continue;
			if (map[k] == -1)
				accept_client(s);
			else if (map[k] == -2 && (p[k].revents & (POLLIN | POLLHUP | POLLERR))) {
				if (pump_init(s) < 0)
					s->box_gone = true;
			} else if (map[k] == -3)
				s->box_gone = true;
			else if (map[k] >= 0 && s->clients[map[k]] && (p[k].revents & (POLLIN | POLLHUP | POLLERR)))
				pump_client(s, map[k]);
		}
		flush_all(s);
	}
	return 0;
}

static int listen_ctl(const char *box_dir, pd_err *err)
{
	_cleanup_close_ int dfd = open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return pd_error(err, errno, "cannot open %s", box_dir);
	/* bind through /proc/self/fd so long PADDOCK_HOME paths never hit sun_path's limit */
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/ctl.sock", dfd);
	unlinkat(dfd, "ctl.sock", 0);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0)
		return pd_error(err, errno, "cannot listen on %s/ctl.sock", box_dir);
	return TAKE_FD(fd);
}

#define SUP_GREET_TIMEOUT_S 10

int sup_connect(const char *box_dir, pd_err *err)
{
	_cleanup_close_ int dfd = open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return pd_error(err, errno, "cannot open %s", box_dir);
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/ctl.sock", dfd);
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return pd_error(err, errno, "cannot connect to the sandbox's supervisor");
	uint8_t buf[PROTO_HDR_SIZE + 256];
	uint8_t hdr[PROTO_HDR_SIZE];
	struct proto_frame f;
	uint16_t ma, mi;
	/* the greeting comes at once from a live supervisor; one stuck (a box's start that
	 * hangs) has the socket bound and never greets: give up instead of waiting with it */
	struct timeval tv = {.tv_sec = SUP_GREET_TIMEOUT_S}, none = {0};
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	int r = fd_read_exact(fd, hdr, PROTO_HDR_SIZE);
	if (r == 0 && (proto_decode_hdr(hdr, &f.hdr) < 0 || f.hdr.len > 256))
		r = -EPROTO;
	if (r == 0) {
		memcpy(buf, hdr, PROTO_HDR_SIZE);
		r = fd_read_exact(fd, buf + PROTO_HDR_SIZE, f.hdr.len);
		f.payload = buf + PROTO_HDR_SIZE;
	}
	int code;
	const char *msg;
	if (r == 0 && f.hdr.type == PROTO_ERROR && proto_decode_error(&f, &code, &msg) == 0)
		return pd_error_msg(err, code ? code : EBUSY, "the sandbox's supervisor refused the connection: %s", msg);
	if (r == 0 && (proto_decode_hello(&f, &ma, &mi) < 0 || ma != PROTO_VERSION_MAJOR))
		r = -EPROTO;
	if (r == 0)
		sup_peer_minor = mi < proto_minor() ? mi : proto_minor();
	if (r == 0)
		r = proto_send_hello(fd);
	if (r == -EAGAIN)
		return pd_error_msg(err, ETIMEDOUT, "the sandbox's supervisor did not answer within %d s", SUP_GREET_TIMEOUT_S);
	if (r < 0)
		return pd_error(err, r, "the sandbox's supervisor did not greet us properly");
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none)); /* sessions wait as long as they run */
	return TAKE_FD(fd);
}

/* "E<errno> <message>" when the start failed, else "OK", then on its next lines the start's
 * notes (box_boot_notes) when it has any: supervisor_spawn reads it. */
static void report_ready(int ready_fd, int r, const pd_err *err, const char *notes)
{
	if (ready_fd < 0)
		return;
	_cleanup_free_ char *msg = r < 0 ? xasprintf("E%d %s", -r, err->msg)
					 : notes ? xasprintf("OK\n%s", notes) : xstrdup("OK");
	fd_write_all(ready_fd, msg, strlen(msg));
	close(ready_fd);
}

static void save_final_state(struct sup *s)
{
	struct box_state st;
	store_load_state(s->box_dir, &st);
	/* an init that exits unasked died (killed: the OOM killer, a crash): its box did not
	 * stop cleanly and nothing of it was saved, so it reads "dead", never "stopped" */
	st.status = s->stopping ? BOX_STATUS_STOPPED : BOX_STATUS_DEAD;
	st.stopped = time(NULL);
	st.last_exit = s->last_exit;
	store_save_state(s->box_dir, &st, NULL);
}

/* An init (vm: its QEMU) that ended unasked, said with what is known of how. */
static void died(const struct sup *s)
{
	bool vm = s->spec.backend && streq(s->spec.backend, "vm");
	const char *who = vm ? "its QEMU" : "its init";
	int st = s->box.exit_status;
	char how[160];
	if (st == -1)
		snprintf(how, sizeof(how), "%s ended unasked", who);
	else if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
		snprintf(how, sizeof(how), "%s was killed (SIGKILL: a kill from outside%s)", who,
			 vm ? "" : ", or the kernel's OOM killer when the box's processes outgrow --memory");
	else if (WIFSIGNALED(st))
		snprintf(how, sizeof(how), "%s was killed by signal %d (%s)", who, WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		snprintf(how, sizeof(how), "%s exited with status %d%s", who, WEXITSTATUS(st),
			 vm ? " (the guest powered off, or QEMU failed: logs --console)" : "");
	fprintf(stderr, "paddock supervisor: sandbox %s died: %s; %s\n", s->spec.name, how,
		vm ? "its disk is kept (start brings it back)"
		   : "what its writable layer held since it last stopped is gone (start brings back what that stop saved)");
}

/* The supervisor's life. Runs in the detached grandchild; never returns. */
static _noreturn_ void supervisor_main(const char *box_dir, int ready_fd)
{
	pd_err err = {0};
	struct sup s = {.box_dir = box_dir, .listen_fd = -1, .last_exit = -1};
	int lock = store_lock(box_dir, "supervisor.lock", false);
	int r = lock < 0 ? pd_error(&err, lock, "another supervisor already runs this sandbox") : 0;
	if (r == 0)
		r = store_load_spec(box_dir, &s.spec, &err);
	if (r == 0)
		r = s.listen_fd = listen_ctl(box_dir, &err);
	struct sup_net *net = NULL;
	if (r >= 0)
		r = box_boot(&s.spec, box_dir, &s.box, &net, &err);
	if (r < 0) {
		fprintf(stderr, "paddock supervisor: %s\n", err.msg);
		report_ready(ready_fd, r, &err, NULL);
		_exit(125);
	}
	struct box_state st = {.status = BOX_STATUS_RUNNING, .supervisor_pid = getpid(),
			       .started = time(NULL), .last_exit = -1};
	store_save_state(box_dir, &st, NULL);
	fd_set_nonblock(s.box.h.ctl_fd, true);
	proto_conn_init(&s.init, s.box.h.ctl_fd);
	s.windowed = sup_peer_minor >= PROTO_MINOR_WINDOW; /* both announced it */
	char *notes = box_boot_notes(&s.box, s.spec.name);
	report_ready(ready_fd, 0, NULL, notes);
	free(notes);
	fprintf(stderr, "paddock supervisor: sandbox %s running (box pid %d)\n", s.spec.name, (int)s.box.h.pid);
	loop(&s);
	notify_gone(&s, s.stopping ? "the sandbox was stopped" : "the sandbox's init exited");
	flush_all(&s);
	s.box.h.ctl_fd = -1; /* owned by s.init now */
	proto_conn_free(&s.init);
	box_shutdown(&s.box, false, 0);
	sup_net_stop(net);
	save_final_state(&s);
	if (s.stopping)
		fprintf(stderr, "paddock supervisor: sandbox %s stopped\n", s.spec.name);
	else
		died(&s);
	for (int i = 0; i < SUP_MAX_CLIENTS; i++)
		if (s.clients[i])
			client_close(&s, i);
	_cleanup_free_ char *sock = xasprintf("%s/ctl.sock", box_dir);
	unlink(sock);
	if (s.spec.rm)
		store_remove(box_dir, NULL);
	_exit(0);
}

static void detach_stdio(const char *box_dir)
{
	_cleanup_free_ char *log = xasprintf("%s/supervisor.log", box_dir);
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	dup2(null, STDIN_FILENO);
	dup2(lfd >= 0 ? lfd : null, STDOUT_FILENO);
	dup2(lfd >= 0 ? lfd : null, STDERR_FILENO);
	if (null > 2)
		close(null);
	if (lfd > 2)
		close(lfd);
}

int supervisor_spawn(const char *box_dir, pd_err *err)
{
	int pipefd[2];
	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return pd_error(err, errno, "cannot fork the supervisor");
	}
	if (pid == 0) {
		/* first child: new session, then fork again so the supervisor is reparented and
		 * never becomes a zombie of the CLI */
		setsid();
		if (fork() != 0)
			_exit(0);
		close(pipefd[0]);
		/* drop every fd the CLI held (including its flock on the box's `lock`) */
		int keep = fcntl(pipefd[1], F_DUPFD_CLOEXEC, 3);
		fd_close_all_but(keep);
		detach_stdio(box_dir);
		signal(SIGPIPE, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		struct sigaction sa = {.sa_handler = on_term};
		sigaction(SIGTERM, &sa, NULL);
		supervisor_main(box_dir, keep);
	}
	close(pipefd[1]);
	waitpid(pid, NULL, 0);
	char buf[4096];
	ssize_t n = 0;
	size_t len = 0;
	bool told = false;
	for (;;) {
		struct pollfd p = {.fd = pipefd[0], .events = POLLIN};
		int pr = poll(&p, 1, 100);
		if (pr < 0 && errno != EINTR)
			break;
		/* the caller's Ctrl-C or TERM (box_boot_cancel, set by its handler) is passed on to
		 * the supervisor, whose process group the first child made (setsid: its pid): the
		 * supervisor undoes the start and reports, so a long boot is not waited out. Only
		 * while its end of the pipe is open, so the group still has the supervisor in it
		 * (its number cannot have gone to another process) */
		if (box_boot_cancel && !told && !(pr > 0 && (p.revents & POLLHUP))) {
			(void)kill(-pid, SIGTERM);
			told = true;
		}
		if (pr <= 0)
			continue;
		n = read(pipefd[0], buf + len, sizeof(buf) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(pipefd[0]);
	buf[len] = '\0';
	if (startswith(buf, "OK") && (buf[2] == '\0' || buf[2] == '\n')) {
		/* the start's notes: the supervisor's stderr is the box's log, which nobody reads
		 * at create; said here once (the supervisor wrote them, box_boot_notes) */
		if (buf[2])
			fputs(buf + 3, stderr);
		return 0;
	}
	if (len > 1 && buf[0] == 'E') {
		char *sp = strchr(buf, ' ');
		return pd_error_msg(err, atoi(buf + 1), "%s", sp ? sp + 1 : "supervisor failed");
	}
	/* the caller removes a box that did not start, its log with it: the log's last line here */
	_cleanup_free_ char *logp = xasprintf("%s/supervisor.log", box_dir), *log = NULL;
	size_t ll = 0;
	if (read_file_at(AT_FDCWD, logp, 1u << 20, &log, &ll) == 0 && ll) {
		while (ll && (log[ll - 1] == '\n' || log[ll - 1] == '\0'))
			log[--ll] = '\0';
		const char *last = memrchr(log, '\n', ll);
		return pd_error_msg(err, EIO, "the supervisor died during start; its log ended: %s", last ? last + 1 : log);
	}
	return pd_error_msg(err, EIO, "the supervisor died during start (it logged nothing)");
}
