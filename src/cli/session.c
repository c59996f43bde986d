/* session.c — client end of an exec session. */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "cli/session.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "workspace/ws_path.h"

static int sig_pipe[2] = {-1, -1};
static struct termios saved_tio;
static bool tio_saved;

static void on_signal(int sig)
{
	int saved = errno;
	/* a box still starting (run --rm) gives up: the user asked to end it */
	if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)
		box_boot_cancel = sig;
	unsigned char c = (unsigned char)sig;
	ssize_t r = write(sig_pipe[1], &c, 1);
	(void)r;
	errno = saved;
}

static void restore_tty(void)
{
	if (tio_saved) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tio);
		tio_saved = false;
	}
}

static int enter_raw_mode(void)
{
	struct termios t;
	if (tcgetattr(STDIN_FILENO, &saved_tio) < 0)
		return -errno;
	tio_saved = true;
	atexit(restore_tty);
	t = saved_tio;
	/* fully raw: the box's own pty already turns \n into \r\n; our own messages are printed
	 * after the terminal is restored */
	cfmakeraw(&t);
	if (tcsetattr(STDIN_FILENO, TCSADRAIN, &t) < 0)
		return -errno;
	return 0;
}

static int install_signals(bool tty);

int session_catch_signals(void)
{
	return install_signals(false);
}

static int install_signals(bool tty)
{
	if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	int sigs[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		if ((tty || sigs[i] != SIGWINCH) && sigaction(sigs[i], &sa, NULL) < 0)
			return -errno;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}


static int send_exec(int fd, uint32_t stream, const struct session_req *req, bool tty)
{
	struct winsize ws = {.ws_row = 24, .ws_col = 80};
	if (tty)
		ioctl(STDIN_FILENO, TIOCGWINSZ, &ws);
	struct proto_buf b = {0};
	proto_encode_exec(&b, req->argv, req->env, req->cwd, req->user, tty, ws.ws_row, ws.ws_col);
	int r = b.len > PROTO_MAX_PAYLOAD ? -E2BIG : proto_send(fd, PROTO_EXEC, 0, stream, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
	return r;
}

struct pump {
	int fd;
	int in_fd, out_fd, err_fd;
	bool escape_err;
	struct proto_conn conn; /* non-blocking both ways: we never block sending while the box
				 * waits for us to read (that would deadlock a `cat`) */
	struct proto_flow flow; /* with windows: stdin only as the box takes it, output granted
				 * as it is written */
	uint32_t stream;
	int *start_lock;
	bool tty, stdin_open, done, sent_gone[2];
	bool quiet_since_sig;   /* an ending signal went to the box and nothing came back since */
	int64_t sig_at;         /* when that signal went */
	int status;
	pd_err *err;
	int r;
};

static void pump_send(struct pump *p, uint16_t type, const void *payload, uint32_t len)
{
	proto_conn_send(&p->conn, type, 0, p->stream, payload, len);
	int r = proto_conn_flush(&p->conn);
	if (r < 0 && r != -EAGAIN)
		p->stdin_open = false;
}

static int output(const struct pump *p, const struct proto_frame *f)
{
	if (f->hdr.type == PROTO_STDOUT)
		return fd_write_all(p->out_fd, f->payload, f->hdr.len);
	if (!p->escape_err)
		return fd_write_all(p->err_fd, f->payload, f->hdr.len);
	/* a UTF-8 sequence split across two frames comes out as \xNN escapes: harmless */
	_cleanup_free_ char *e = ws_escape((const char *)f->payload, f->hdr.len, WS_ESC_CONTENT);
	return fd_write_all(p->err_fd, e, strlen(e));
}

static void on_frame(struct pump *p, const struct proto_frame *f)
{
	int e;
	const char *msg;
	p->quiet_since_sig = false;
	if (f->hdr.stream != p->stream) {
		p->r = pd_error_msg(p->err, EPROTO, "unexpected frame for stream %u", f->hdr.stream);
		return;
	}
	int fl = proto_flow_recv(&p->flow, f);
	if (fl < 0)
		p->r = pd_error_msg(p->err, EPROTO, "the sandbox broke the flow control (a %s frame)",
				    proto_type_name(f->hdr.type));
	if (fl != 0)
		return; /* an error, or a grant for stdin */
	switch (f->hdr.type) {
	case PROTO_STDOUT:
	case PROTO_STDERR:
		/* a reader that went away (EPIPE) is not our failure: the box closes that pipe's
		 * read end, so the command's writer gets SIGPIPE, as in a shell pipeline (`yes |
		 * head` ends; the rest of a script goes on), and we keep draining for its status */
		if (output(p, f) < 0) {
			int which = f->hdr.type == PROTO_STDOUT ? 0 : 1;
			if (errno != EPIPE)
				p->r = pd_error(p->err, errno, "cannot write the command's output");
			else if (!p->sent_gone[which] && !p->tty && sup_peer_minor >= PROTO_MINOR_OUTPUT_GONE) {
				uint8_t fdno = (uint8_t)(which + 1);
				pump_send(p, PROTO_EOF, &fdno, 1);
				p->sent_gone[which] = true;
			} else if (!p->sent_gone[0] && !p->sent_gone[1]) {
				/* a terminal's output has no pipe to close in the box, and a peer of
				 * minor 0 knows no such EOF: the session's process group gets SIGPIPE */
				uint8_t sig[4];
				proto_put_u32(sig, SIGPIPE);
				pump_send(p, PROTO_SIGNAL, sig, 4);
				p->sent_gone[0] = p->sent_gone[1] = true;
			}
		}
		/* written, or gone for good: the box may send that much more */
		proto_flow_delivered(&p->flow, &p->conn, p->stream, f->hdr.type == PROTO_STDERR, f->hdr.len);
		break;
	case PROTO_EXIT:
		if (f->hdr.len != 4) {
			p->r = pd_error_msg(p->err, EPROTO, "malformed exit status");
			return;
		}
		p->status = (int)proto_get_u32(f->payload);
		p->done = true;
		break;
	case PROTO_ERROR:
		if (proto_decode_error(f, &e, &msg) < 0)
			p->r = pd_error_msg(p->err, EPROTO, "malformed error from the sandbox");
		else
			p->r = pd_error_msg(p->err, e ? e : EIO, "%s", msg);
		break;
	case PROTO_STARTED: /* the process exists: a snapshot may pause it from now on */
		if (p->start_lock && *p->start_lock >= 0)
			close(TAKE_FD(*p->start_lock));
		break;
	case PROTO_EOF:
		break;
	default:
		p->r = pd_error_msg(p->err, EPROTO, "unexpected %s frame", proto_type_name(f->hdr.type));
	}
}

static void on_stdin(struct pump *p)
{
	uint8_t buf[65536];
	size_t room = proto_flow_stdin_room(&p->flow, sizeof(buf));
	if (room == 0)
		return; /* not read(…, 0): that reads as EOF */
	ssize_t n = read(p->in_fd, buf, room);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		p->stdin_open = false;
		uint8_t zero = 0;
		if (!p->tty)
			pump_send(p, PROTO_EOF, &zero, 1);
		return;
	}
	proto_flow_stdin_sent(&p->flow, (size_t)n);
	pump_send(p, PROTO_STDIN, buf, (uint32_t)n);
}

static void on_sig(struct pump *p)
{
	unsigned char c;
	while (read(sig_pipe[0], &c, 1) == 1) {
		uint8_t s[4];
		struct winsize ws;
		if (c == SIGWINCH) {
			if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) < 0)
				continue;
			proto_put_u16(s, ws.ws_row);
			proto_put_u16(s + 2, ws.ws_col);
			pump_send(p, PROTO_RESIZE, s, 4);
			continue;
		}
		bool ending = c == SIGINT || c == SIGTERM || c == SIGHUP || c == SIGQUIT;
		proto_put_u32(s, c);
		pump_send(p, PROTO_SIGNAL, s, 4); /* the second one too: a program may want it */
		/* a second one, a second or more after the first, while the box has said nothing
		 * since: it cannot answer (a frozen guest, a session not started) — stop waiting for
		 * it (the supervisor ends the session when this connection goes). Two at once (a
		 * TERM and a HUP from a service manager) are not that. */
		if (ending && p->quiet_since_sig && mono_ms() - p->sig_at >= 1000) {
			restore_tty();
			fprintf(stderr, "paddock: the sandbox did not answer the signal; gave up waiting for it\n");
			p->status = 128 + c;
			p->done = true;
			return;
		}
		if (ending && !p->quiet_since_sig) {
			p->quiet_since_sig = true;
			p->sig_at = mono_ms();
		}
	}
}

static int pump_loop(struct pump *p)
{
	struct proto_conn *conn = &p->conn;
	struct proto_frame f;
	while (!p->done && p->r == 0) {
		/* stdin is read while the box takes it: with windows, while it has credit; without,
		 * while our queue to the box is short */
		bool backlog = proto_conn_pending(conn) > (1u << 20) || !proto_flow_stdin_room(&p->flow, 1);
		struct pollfd pf[3] = {
			{.fd = p->fd, .events = POLLIN | (proto_conn_pending(conn) ? POLLOUT : 0)},
			{.fd = sig_pipe[0], .events = POLLIN},
			{.fd = p->stdin_open && !backlog ? p->in_fd : -1, .events = POLLIN},
		};
		if (poll(pf, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return pd_error(p->err, errno, "poll");
		}
		if (pf[1].revents)
			on_sig(p);
		if (pf[2].revents)
			on_stdin(p);
		if (pf[0].revents & POLLOUT)
			proto_conn_flush(conn);
		if (!(pf[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		int r = proto_conn_read(conn);
		while (p->r == 0 && !p->done && proto_conn_next(conn, &f) == 1)
			on_frame(p, &f);
		(void)proto_conn_flush(conn); /* the grants for what was written, at once */
		if (p->r == 0 && !p->done && (conn->eof || (r < 0 && r != -EAGAIN)))
			p->r = pd_error_msg(p->err, EPIPE, "the sandbox went away before the command finished");
	}
	return p->r;
}

int session_run(int fd, uint32_t stream, const struct session_req *req, int *ret_status, pd_err *err)
{
	bool tty = !req->redirect &&
		   (req->tty == 1 || (req->tty < 0 && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)));
	int r = install_signals(tty);
	if (r < 0)
		return pd_error(err, r, "cannot install signal handlers");
	if (tty && (r = enter_raw_mode()) < 0)
		return pd_error(err, r, "cannot put the terminal in raw mode");
	r = send_exec(fd, stream, req, tty);
	if (r < 0) {
		restore_tty();
		return pd_error(err, r, "cannot send the command to the sandbox");
	}
	struct pump p = {.fd = fd, .stream = stream, .tty = tty, .stdin_open = true, .err = err,
			 .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO, .err_fd = STDERR_FILENO,
			 .start_lock = req->start_lock};
	if (req->redirect) {
		p.in_fd = req->in_fd;
		p.out_fd = req->out_fd;
		p.err_fd = req->err_fd;
		p.escape_err = req->escape_err;
		if (p.in_fd < 0) {
			uint8_t zero = 0;
			p.stdin_open = false;
			proto_send(fd, PROTO_EOF, 0, stream, &zero, 1);
		}
	}
	proto_conn_init(&p.conn, fd);
	proto_flow_start(&p.flow, &p.conn, stream, sup_peer_minor >= PROTO_MINOR_WINDOW);
	fd_set_nonblock(fd, true);
	r = pump_loop(&p);
	p.conn.fd = -1; /* the caller owns fd */
	proto_conn_free(&p.conn);
	if (req->start_lock && *req->start_lock >= 0)
		close(TAKE_FD(*req->start_lock));
	restore_tty();
	if (r < 0)
		return r;
	*ret_status = p.status;
	return 0;
}

int session_run_on(int conn, char **argv, int in_fd, int out_fd, pd_err *err)
{
	struct session_req req = {.argv = argv, .redirect = true, .in_fd = in_fd, .out_fd = out_fd,
				  .err_fd = STDERR_FILENO, .user = "agent", .escape_err = true};
	int status;
	int r = session_run(conn, 1, &req, &status, err);
	return r < 0 ? r : status;
}

int session_run_in(const char *box_dir, char **argv, int in_fd, int out_fd, pd_err *err)
{
	_cleanup_close_ int fd = sup_connect(box_dir, err);
	return fd < 0 ? fd : session_run_on(fd, argv, in_fd, out_fd, err);
}
