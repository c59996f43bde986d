/* session.c — stdio, fork and I/O of one exec session (see session.h). */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "guest/child.h"
#include "guest/session.h"
#include "proto/tarfmt.h"
#include "proto/wsscan.h"
#include "util/fdio.h"

static void close_fds3(int fds[3])
{
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0 && (i == 0 || fds[i] != fds[i - 1]))
			close(fds[i]);
		fds[i] = -1;
	}
}

static int pty_peer(int master)
{
	/* TIOCGPTPEER opens the slave through the master itself: no path lookup in a /dev/pts
	 * that processes in the box could have tampered with. */
	int fd = ioctl(master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 || (errno != EINVAL && errno != ENOTTY))
		return fd >= 0 ? fd : -errno;
	unsigned int n; /* kernels before 4.13 */
	if (ioctl(master, TIOCGPTN, &n) < 0)
		return -errno;
	char path[32];
	snprintf(path, sizeof(path), "/dev/pts/%u", n);
	fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* Opens the slave in PID 1 before the fork, so the master never sees "no slave open" (EIO,
 * POLLHUP) in the window before the child would have opened it. */
static int stdio_pty(const struct session_req *req, int child[3], int ours[3])
{
	_cleanup_close_ int m = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
	if (m < 0)
		return -errno;
	int unlock = 0;
	struct winsize ws = {.ws_row = req->rows, .ws_col = req->cols};
	if (ioctl(m, TIOCSPTLCK, &unlock) < 0 || ioctl(m, TIOCSWINSZ, &ws) < 0)
		return -errno;
	int s = pty_peer(m);
	if (s < 0)
		return s;
	child[0] = child[1] = child[2] = s;
	ours[0] = ours[1] = TAKE_FD(m);
	ours[2] = -1;
	return 0;
}

static int stdio_pipes(int child[3], int ours[3])
{
	int p[3][2];
	for (int i = 0; i < 3; i++) {
		if (pipe2(p[i], O_CLOEXEC) < 0) {
			int r = -errno;
			for (int j = 0; j < i; j++)
				close(p[j][0]), close(p[j][1]);
			return r;
		}
	}
	child[0] = p[0][0], ours[0] = p[0][1]; /* stdin: the child reads */
	child[1] = p[1][1], ours[1] = p[1][0];
	child[2] = p[2][1], ours[2] = p[2][0];
	for (int i = 0; i < 3; i++)
		(void)fd_set_nonblock(ours[i], true); /* cannot fail on a fresh pipe */
	return 0;
}

static bool is_builtin(const char *argv0)
{
	return streq(argv0, WSSCAN_BUILTIN) || streq(argv0, WSALIAS_BUILTIN) || streq(argv0, WSTAR_BUILTIN);
}

static int spawn_child(void *spec)
{
	child_exec(spec);
}

/* The child's state letter in /proc/PID/stat ('T': stopped, 't': traced), 0 if unknown.
 * A stack buffer and plain syscalls: the child may be using the heap's memory too. */
static char proc_state(pid_t pid)
{
	char path[32], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *paren = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

/* True once the pipe has reported EOF (or anything) within ms. No errno is read: the child
 * runs on our thread's TLS, so errno is shared with it while it lives; a failed poll (EINTR
 * cannot happen, PID 1 blocks its signals) is simply polled again. */
static bool exec_pipe_done(int rfd, int64_t ms)
{
	struct pollfd p = {.fd = rfd, .events = POLLIN};
	int64_t end = mono_ms() + ms;
	for (int64_t left = ms; left > 0; left = end - mono_ms())
		if (poll(&p, 1, (int)left) > 0)
			return true;
	return false;
}

/* Waits until the child that shares our memory has let go of it: the write end of the pipe
 * it holds is O_CLOEXEC, so EOF comes with its execve() or its exit (the kernel drops the old
 * memory before it closes the fds, in both). A child found stopped after
 * SESSION_EXEC_DEADLINE_MS — a process of the box with the session's uid can SIGSTOP it once
 * it has dropped to that uid, and PID 1 must not freeze with it — or still not through after
 * SESSION_EXEC_MAX_MS (a filesystem that hangs) is killed, and waited for the same way: only
 * then is the memory ours again (a child stuck in uninterruptible sleep holds PID 1 until
 * the kernel lets it die; nothing shorter is safe while the memory is shared).
 * Returns 0 or -ETIMEDOUT. */
static int spawn_wait_exec(pid_t pid, int rfd)
{
	if (exec_pipe_done(rfd, SESSION_EXEC_DEADLINE_MS))
		return 0;
	for (int64_t waited = SESSION_EXEC_DEADLINE_MS; waited < SESSION_EXEC_MAX_MS; waited += 1000) {
		char st = proc_state(pid);
		if (st == 'T' || st == 't')
			break;
		if (exec_pipe_done(rfd, 1000))
			return 0;
	}
	(void)kill(pid, SIGKILL); /* our own unreaped child: the pid cannot have been reused */
	while (!exec_pipe_done(rfd, 60000))
		;
	return -ETIMEDOUT;
}

/* Starts the session's process. A program is started by a child that shares PID 1's memory
 * until its execve() (clone(CLONE_VM), as glibc's posix_spawn does), on a stack of its own:
 * no page tables copied, no page copied on write. Where page faults are slow (a PVM-style
 * nested host: ~11 µs each) a fork() of PID 1 costs ~0.85 ms, this ~25 µs.
 * PID 1 does nothing but wait (spawn_wait_exec) until the child has exec'd or exited: one
 * child on the stack at a time, and nothing of PID 1 runs while the child uses its memory.
 * Not CLONE_VFORK: that wait cannot be bounded, and a stopped child would hold PID 1 forever.
 * child.c keeps that path free of allocation and global writes but environ (restored here)
 * and errno (not read while the child lives). Sharing the memory gives a process of the box
 * no way in: PID 1's memory is non-dumpable (init.c process_setup), and that is a property of
 * the memory, so the child — even after it drops to the session's uid — cannot be ptraced,
 * nor its /proc/PID/mem opened, until its execve() has left that memory. The built-ins run
 * long, allocate and must not hold PID 1: they get a fork(). Returns the pid or -errno. */
static pid_t spawn(struct child_spec *spec)
{
	static uint8_t stack[256u << 10] __attribute__((aligned(64))); /* execvpe's PATH buffers, a script's argv */
	if (is_builtin(spec->argv[0])) {
		pid_t pid = fork();
		if (pid == 0)
			child_exec(spec);
		return pid < 0 ? -errno : pid;
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	/* The write end must survive the child's dup2() onto 0-2 (init.c keeps 0-2 open, so this
	 * is only a guarantee): an early EOF would let PID 1 run beside the child. */
	if (p[1] < 3) {
		int hi = fcntl(p[1], F_DUPFD_CLOEXEC, 3);
		int e = errno;
		close(p[1]);
		if (hi < 0) {
			close(p[0]);
			return -e;
		}
		p[1] = hi;
	}
	spec->exec_fd = p[1];
	char **env = environ;
	pid_t pid = clone(spawn_child, stack + sizeof(stack), CLONE_VM | SIGCHLD, (void *)spec);
	int r = pid < 0 ? -errno : 0;
	close(p[1]);
	if (pid > 0)
		r = spawn_wait_exec(pid, p[0]);
	close(p[0]);
	environ = env;
	return r < 0 ? r : pid;
}

static struct session *session_new(uint32_t id, pid_t pid, bool tty, const int ours[3])
{
	struct session *s = xcalloc(1, sizeof(*s));
	s->id = id;
	s->pid = pid;
	s->tty = tty;
	s->master = tty ? ours[0] : -1;
	s->in_fd = ours[0];
	s->out_fd[0] = ours[1];
	s->out_fd[1] = ours[2];
	return s;
}

int session_spawn(const struct session_req *req, uint32_t id, struct session **ret)
{
	int child[3] = {-1, -1, -1}, ours[3] = {-1, -1, -1};
	int r = req->tty ? stdio_pty(req, child, ours) : stdio_pipes(child, ours);
	if (r < 0)
		return r;
	struct child_spec spec = {
		.argv = req->argv, .envp = req->envp, .cwd = req->cwd,
		.uid = req->user.uid, .gid = req->user.gid, .root = req->user.root,
		.tty = req->tty, .setgroups_deny = req->setgroups_deny, .keep_caps = req->keep_caps,
		.stdio = {child[0], child[1], child[2]}, .exec_fd = -1,
	};
	pid_t pid = spawn(&spec);
	r = pid < 0 ? pid : 0;
	close_fds3(child);
	if (pid < 0) {
		close_fds3(ours);
		return r;
	}
	*ret = session_new(id, pid, req->tty, ours);
	return 0;
}

static void session_close(struct session *s, int *fd)
{
	if (*fd >= 0 && *fd != s->master)
		close(*fd);
	*fd = -1;
}

void session_free(struct session *s)
{
	if (!s)
		return;
	session_close(s, &s->in_fd);
	session_close(s, &s->out_fd[0]);
	session_close(s, &s->out_fd[1]);
	if (s->master >= 0)
		close(s->master);
	free(s->in.data);
	free(s);
}

static void stdin_drop(struct session *s)
{
	free(s->in.data);
	s->in.data = NULL;
	s->in.len = s->in.off = 0;
}

static void stdin_append(struct session *s, const uint8_t *p, size_t n)
{
	if (s->in.off == s->in.len)
		s->in.off = s->in.len = 0;
	else if (s->in.off > 0 && s->in.off >= s->in.len / 2) {
		memmove(s->in.data, s->in.data + s->in.off, s->in.len - s->in.off);
		s->in.len -= s->in.off;
		s->in.off = 0;
	}
	s->in.data = xrealloc(s->in.data, s->in.len + n);
	memcpy(s->in.data + s->in.len, p, n);
	s->in.len += n;
}

size_t session_stdin_pending(const struct session *s)
{
	return s->in.len - s->in.off;
}

void session_stdin(struct session *s, const uint8_t *p, size_t n)
{
	if (s->in_fd < 0 || s->in_eof || n == 0)
		return; /* stdin is closed (by the peer, the child, or its exit): drop */
	stdin_append(s, p, n);
	session_flush_stdin(s);
}

void session_flush_stdin(struct session *s)
{
	while (s->in_fd >= 0 && session_stdin_pending(s) > 0) {
		ssize_t n = write(s->in_fd, s->in.data + s->in.off, session_stdin_pending(s));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) { /* EPIPE: nobody will read it any more; EIO: the pty slave is gone */
			stdin_drop(s);
			if (!s->tty)
				session_close(s, &s->in_fd);
			return;
		}
		s->in.off += (size_t)n;
	}
	stdin_drop(s);
	if (s->in_eof)
		session_close(s, &s->in_fd);
}

void session_stdin_eof(struct session *s)
{
	if (s->tty)
		return; /* a terminal has no EOF of its own: the user types ^D */
	s->in_eof = true;
	session_flush_stdin(s);
}

void session_resize(struct session *s, uint16_t rows, uint16_t cols)
{
	struct winsize ws = {.ws_row = rows, .ws_col = cols};
	if (s->master >= 0) /* the kernel sends SIGWINCH to the foreground process group */
		(void)ioctl(s->master, TIOCSWINSZ, &ws);
}

void session_signal(struct session *s, int sig)
{
	/* Once the leader is reaped its process group may be empty and its number reused by
	 * another session: signals for an exited session are dropped. */
	if (s->exited)
		return;
	/* Why safe: s->pid is our own child, not yet reaped, so the number still names it. If it
	 * has not reached setsid() yet the group does not exist: signal the process itself; the
	 * signal stays blocked and pending until the child resets its mask, then acts. */
	if (kill(-s->pid, sig) < 0 && errno == ESRCH)
		(void)kill(s->pid, sig);
}

static void session_close_out(struct session *s, int i, struct proto_conn *c)
{
	uint8_t fdno = (uint8_t)(i + 1);
	session_close(s, &s->out_fd[i]);
	if (!s->eof_sent[i])
		proto_conn_send(c, PROTO_EOF, 0, s->id, &fdno, 1);
	s->eof_sent[i] = true;
}

void session_output_gone(struct session *s, int i)
{
	if (s->tty || i < 0 || i > 1)
		return;
	/* the reader on the far side went away: our read end goes, so the session's writer gets
	 * EPIPE (SIGPIPE) on its next write, as in a shell pipeline, and only the writer does */
	session_close(s, &s->out_fd[i]);
	s->eof_sent[i] = true;
}

int session_stdin_take(struct session *s, uint32_t n)
{
	return s->windowed ? proto_credit_take(&s->in_credit, n) : 0;
}

void session_stdin_grant(struct session *s, struct proto_conn *c)
{
	/* nothing may follow an exited session's EXIT, and after EOF(0) no more stdin comes */
	if (!s->windowed || s->exited || s->in_eof)
		return;
	/* bytes already in the pipe are delivered; dropped ones (stdin closed) are gone too */
	size_t held = s->in_credit + session_stdin_pending(s);
	if (held + SESSION_STDIN_WINDOW / 4 > SESSION_STDIN_WINDOW)
		return;
	uint32_t n = (uint32_t)(SESSION_STDIN_WINDOW - held);
	s->in_credit += n;
	proto_send_window(c, s->id, 0, n);
}

int session_output_grant(struct session *s, int i, uint32_t n)
{
	return s->windowed ? proto_credit_grant(&s->out_credit[i], n) : -EBADMSG;
}

bool session_output_held(const struct session *s, int i)
{
	return s->windowed && s->out_fd[i] >= 0 && s->out_credit[i] == 0;
}

bool session_pump(struct session *s, int i, struct proto_conn *c, uint64_t now)
{
	static uint8_t buf[SESSION_CHUNK];
	size_t max = s->windowed && s->out_credit[i] < sizeof(buf) ? s->out_credit[i] : sizeof(buf);
	if (max == 0)
		return false; /* not read(…, 0): that would read as EOF */
	ssize_t n = read(s->out_fd[i], buf, max);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return false;
	if (n > 0) {
		proto_conn_send(c, i == 0 ? PROTO_STDOUT : PROTO_STDERR, 0, s->id, buf, (uint32_t)n);
		if (s->windowed)
			s->out_credit[i] -= (uint32_t)n;
		if (s->exited)
			s->deadline = now + SESSION_DRAIN_MS;
		return true;
	}
	/* 0: EOF of a pipe. EIO: a pty master once every slave fd is closed. Anything else is
	 * as final. */
	session_close_out(s, i, c);
	return false;
}

void session_exited(struct session *s, int status, uint64_t now)
{
	s->exited = true;
	s->status = status;
	s->deadline = now + SESSION_DRAIN_MS;
	stdin_drop(s); /* EXIT ends the stream: later stdin has nowhere to go */
	if (!s->tty)
		session_close(s, &s->in_fd);
}

bool session_done(const struct session *s, uint64_t now)
{
	return s->exited && ((s->out_fd[0] < 0 && s->out_fd[1] < 0) || now >= s->deadline);
}

void session_finish(struct session *s, struct proto_conn *c)
{
	uint8_t p[4];
	session_close_out(s, 0, c);
	session_close_out(s, 1, c);
	proto_put_u32(p, (uint32_t)s->status);
	proto_conn_send(c, PROTO_EXIT, 0, s->id, p, sizeof(p));
}
