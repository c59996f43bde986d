/* dispatch.c — frames from the supervisor: one handler per type. The peer is the host side,
 * but every frame is still checked for shape: a malformed or unexpected frame is a protocol
 * error, and the connection (and with it the box) ends. Frames for a stream that has already
 * ended (a SIGNAL racing an EXIT) are not errors: they are dropped. */
#include <signal.h>
#include <stdarg.h>

#include "guest/init.h"

typedef int (*frame_fn)(struct init *in, const struct proto_frame *f);

static void send_error(struct init *in, uint32_t stream, int errnum, const char *fmt, ...) _printf_(4, 5);
static void send_error(struct init *in, uint32_t stream, int errnum, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	struct proto_buf b = {0};
	proto_encode_error(&b, errnum, msg);
	proto_conn_send(&in->ctl, PROTO_ERROR, 0, stream, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
}

static int on_hello(struct init *in, const struct proto_frame *f)
{
	uint16_t major, minor;
	if (f->hdr.stream != 0 || proto_decode_hello(f, &major, &minor) < 0)
		return -EBADMSG;
	if (major != PROTO_VERSION_MAJOR) {
		init_log("supervisor speaks protocol %u.%u, we speak %u.%u", major, minor,
			 PROTO_VERSION_MAJOR, PROTO_VERSION_MINOR);
		return -EPROTONOSUPPORT;
	}
	in->hello_seen = true;
	in->windowed = minor >= PROTO_MINOR_WINDOW;
	return 0;
}

static const char *session_shell(void)
{
	return access("/bin/bash", X_OK) == 0 ? "/bin/bash" : "/bin/sh";
}

static void exec_start(struct init *in, uint32_t id, const struct proto_exec *req, const struct guest_user *u)
{
	_cleanup_strv_ char **envp = guest_env_build(u, session_shell(), req->tty, req->envp);
	struct session_req sr = {
		.argv = (char *const *)req->argv, .envp = envp, .cwd = req->cwd, .user = *u,
		.tty = req->tty, .rows = req->rows, .cols = req->cols,
		.setgroups_deny = in->setgroups_deny, .keep_caps = u->root && in->env.root_caps,
	};
	struct session *s;
	int r = session_spawn(&sr, id, &s);
	if (r == -ETIMEDOUT) {
		send_error(in, id, ETIMEDOUT, "cannot start session: its process did not reach execve() "
			   "(stopped by a process of the box, or its filesystem hangs) and was killed");
		return;
	}
	if (r < 0) {
		send_error(in, id, -r, "cannot start session: %s", strerror(-r));
		return;
	}
	s->windowed = in->windowed; /* its stdin's first credit goes after STARTED (init.c) */
	in->sessions[in->n_sessions++] = s;
	uint8_t p[4];
	proto_put_u32(p, (uint32_t)s->pid);
	proto_conn_send(&in->ctl, PROTO_STARTED, 0, id, p, sizeof(p));
}

static int on_exec(struct init *in, const struct proto_frame *f)
{
	uint32_t id = f->hdr.stream;
	_cleanup_free_ struct proto_exec *req = xmalloc(sizeof(*req)); /* ~64 KiB of pointers */
	struct guest_user u;
	if (id == 0 || proto_decode_exec(f, req) < 0)
		return -EBADMSG;
	guest_user_for(req->user, in->env.agent_uid, in->env.agent_gid, &u);
	if (init_session_find(in, id))
		send_error(in, id, EEXIST, "session %u already exists", id);
	else if (in->n_sessions >= INIT_MAX_SESSIONS)
		send_error(in, id, EMFILE, "too many sessions (at most %d)", INIT_MAX_SESSIONS);
	else if (u.root && !in->env.root_ok)
		send_error(in, id, EPERM, "root sessions need a subordinate uid range");
	else
		exec_start(in, id, req, &u);
	return 0;
}

static int on_stdin(struct init *in, const struct proto_frame *f)
{
	if (f->hdr.stream == 0)
		return -EBADMSG;
	struct session *s = init_session_find(in, f->hdr.stream);
	if (s && session_stdin_take(s, f->hdr.len) < 0)
		return -EBADMSG; /* more than the supervisor was allowed */
	if (s)
		session_stdin(s, f->payload, f->hdr.len);
	return 0;
}

static int on_window(struct init *in, const struct proto_frame *f)
{
	uint8_t fd;
	uint32_t n;
	/* only from a supervisor that announced windows, and only for our output: stdin's
	 * credit is ours to give */
	if (!in->windowed || f->hdr.stream == 0 || proto_decode_window(f, &fd, &n) < 0 || fd == 0)
		return -EBADMSG;
	struct session *s = init_session_find(in, f->hdr.stream);
	return s ? session_output_grant(s, fd - 1, n) : 0;
}

static int on_eof(struct init *in, const struct proto_frame *f)
{
	/* the peer closes the session's stdin (0), or says its reader of stdout (1) or stderr (2)
	 * went away */
	if (f->hdr.stream == 0 || f->hdr.len != 1 || f->payload[0] > 2)
		return -EBADMSG;
	struct session *s = init_session_find(in, f->hdr.stream);
	if (s && f->payload[0] == 0)
		session_stdin_eof(s);
	else if (s)
		session_output_gone(s, f->payload[0] - 1);
	return 0;
}

static int on_resize(struct init *in, const struct proto_frame *f)
{
	uint16_t rows, cols;
	if (f->hdr.stream == 0 || proto_decode_resize(f, &rows, &cols) < 0)
		return -EBADMSG;
	struct session *s = init_session_find(in, f->hdr.stream);
	if (s)
		session_resize(s, rows, cols);
	return 0;
}

static int on_signal(struct init *in, const struct proto_frame *f)
{
	uint32_t sig;
	if (proto_decode_u32(f, &sig) < 0 || sig == 0 || sig >= _NSIG)
		return -EBADMSG;
	struct session *s = f->hdr.stream ? init_session_find(in, f->hdr.stream) : NULL;
	if (s) /* stream 0 (the box itself): ignored, STOP is the way to end a box */
		session_signal(s, (int)sig);
	return 0;
}

static int on_stop(struct init *in, const struct proto_frame *f)
{
	uint32_t timeout_ms;
	if (f->hdr.stream != 0 || proto_decode_u32(f, &timeout_ms) < 0)
		return -EBADMSG;
	stop_box(in, timeout_ms, true);
}

static int on_info(struct init *in, const struct proto_frame *f)
{
	struct proto_tlv_iter it = {f->payload, f->hdr.len};
	uint16_t tag;
	const uint8_t *v;
	uint32_t len;
	int r;
	while ((r = proto_tlv_next(&it, &tag, &v, &len)) > 0)
		; /* no request keys are defined yet: the payload must merely be well-formed */
	if (f->hdr.stream != 0 || r < 0)
		return -EBADMSG;
	struct proto_buf b = {0};
	char kv[128];
	proto_tlv_put_str(&b, PROTO_TAG_KV, "pid1=ok");
	snprintf(kv, sizeof(kv), "sessions=%zu", in->n_sessions);
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	snprintf(kv, sizeof(kv), "hostname=%s", in->env.hostname);
	proto_tlv_put_str(&b, PROTO_TAG_KV, kv);
	proto_conn_send(&in->ctl, PROTO_INFO, 0, 0, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
	return 0;
}

/* Types not listed (HELLO after the first, STARTED, STDOUT, STDERR, EXIT, ERROR, ACK) are
 * ours to send, never to receive. */
static const frame_fn handlers[PROTO_TYPE_MAX] = {
	[PROTO_EXEC] = on_exec,     [PROTO_STDIN] = on_stdin, [PROTO_EOF] = on_eof,
	[PROTO_RESIZE] = on_resize, [PROTO_SIGNAL] = on_signal, [PROTO_STOP] = on_stop,
	[PROTO_INFO] = on_info,     [PROTO_WINDOW] = on_window,
};

int dispatch_frame(struct init *in, const struct proto_frame *f)
{
	if (!in->hello_seen)
		return on_hello(in, f);
	frame_fn fn = f->hdr.type < PROTO_TYPE_MAX ? handlers[f->hdr.type] : NULL;
	return fn ? fn(in, f) : -EBADMSG;
}
