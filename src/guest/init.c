/* init.c — paddock-init, PID 1 of every paddock box: the only thing in the box that talks to
 * the host. It runs exec sessions (pty or pipes) for the supervisor, reaps every orphan, and
 * takes the box down with it when the supervisor goes away (fail closed).
 *
 * Environment contract (set by the runtime; nothing else is read, and all of it is removed
 * before anything else happens):
 *   PADDOCK_CTL_FD=<n>        the control channel: a connected stream socket (ns, gvisor) or
 *                             a virtio-serial port (vm); n >= 3
 *   PADDOCK_AGENT_UID=<uid>   PADDOCK_AGENT_GID=<gid>   the "agent" user (1000 in a box)
 *   PADDOCK_ROOT_OK=0|1       whether uid 0 is mapped here, i.e. whether root sessions work
 *   PADDOCK_HOSTNAME=<name>   reported by INFO (optional)
 * We need CAP_SETUID, CAP_SETGID, CAP_SETPCAP (sessions drop their bounding set) and CAP_KILL
 * (signal sessions of another uid) in the box's user namespace, unless every session runs as
 * our own uid (the test harness).
 *
 * Exit status: 0 after STOP or SIGTERM; 1 when the supervisor is gone or startup failed;
 * 2 after a protocol error. When we exit as PID 1 the kernel kills the rest of the box. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <time.h>

#include "guest/init.h"
#include "guest/vmboot.h"
#include "guest/wstar.h"
#include "proto/tarfmt.h"
#include "util/fdio.h"

#define STOP_ON_SIGTERM_MS 2000

void init_log(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	dprintf(STDERR_FILENO, "paddock-init: %s\n", buf);
}

uint64_t init_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

_noreturn_ void init_die(struct init *in, int code)
{
	kill_all(in->pid1, SIGKILL);
	if (!in->pid1) /* a second walk catches what forked during the first */
		kill_all(false, SIGKILL);
	exit(code);
}

struct session *init_session_find(struct init *in, uint32_t id)
{
	for (size_t i = 0; i < in->n_sessions; i++)
		if (in->sessions[i]->id == id)
			return in->sessions[i];
	return NULL;
}

struct session *init_session_by_pid(struct init *in, pid_t pid)
{
	for (size_t i = 0; i < in->n_sessions; i++)
		if (in->sessions[i]->pid == pid && !in->sessions[i]->exited)
			return in->sessions[i];
	return NULL;
}

/* ---- startup ---------------------------------------------------------------------- */

static int env_uint(const char *name, unsigned long max, unsigned long *ret)
{
	const char *s = getenv(name);
	char *end;
	if (!s || s[0] < '0' || s[0] > '9') {
		init_log("%s is missing or not a number: paddock-init is started by paddock", name);
		return -EINVAL;
	}
	errno = 0;
	unsigned long v = strtoul(s, &end, 10);
	if (errno || *end || v > max) {
		init_log("%s=%s is out of range", name, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int contract_parse(struct init_contract *c)
{
	unsigned long fd, uid, gid, root_ok;
	if (env_uint("PADDOCK_CTL_FD", INT_MAX, &fd) < 0 || env_uint("PADDOCK_AGENT_UID", UINT32_MAX - 1, &uid) < 0 ||
	    env_uint("PADDOCK_AGENT_GID", UINT32_MAX - 1, &gid) < 0 || env_uint("PADDOCK_ROOT_OK", 1, &root_ok) < 0)
		return -EINVAL;
	if (fd < 3 || fcntl((int)fd, F_GETFD) < 0) {
		init_log("PADDOCK_CTL_FD=%lu is not an open fd above stderr", fd);
		return -EBADF;
	}
	const char *host = getenv("PADDOCK_HOSTNAME");
	const char *caps = getenv("PADDOCK_ROOT_CAPS");
	*c = (struct init_contract){.ctl_fd = (int)fd, .agent_uid = (uid_t)uid, .agent_gid = (gid_t)gid,
				    .root_ok = root_ok == 1, .root_caps = caps && streq(caps, "1")};
	snprintf(c->hostname, sizeof(c->hostname), "%s", host ? host : "");
	return 0;
}

/* Sessions dup2() their fds onto 0, 1 and 2, and every fd we open must land above them. */
static void stdio_ensure(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) < 0)
			init_log("cannot open /dev/null as fd %d: %s", fd, strerror(errno));
}

static bool setgroups_denied(void)
{
	_cleanup_free_ char *buf = NULL;
	return read_file_at(AT_FDCWD, "/proc/self/setgroups", 64, &buf, NULL) == 0 && startswith(buf, "deny");
}

static int signals_setup(void)
{
	/* Everything is blocked and read from a signalfd, except faults (which must still kill
	 * us) and SIGPIPE (ignored: a closed channel shows up as EPIPE). As PID 1 of a pid
	 * namespace, the kernel never lets SIGKILL or SIGSTOP from inside the box reach us, and
	 * what does reach the signalfd is only acted upon when safe (sig_read): nothing in the
	 * box can kill, stop or end us. */
	static const int keep[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS, SIGPIPE};
	sigset_t set;
	sigfillset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(keep); i++)
		sigdelset(&set, keep[i]);
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || sigprocmask(SIG_SETMASK, &set, NULL) < 0)
		return -errno;
	int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static int process_setup(struct init *in)
{
	/* Non-dumpable: processes of the box (even of our uid) cannot ptrace us or open
	 * /proc/1/mem, /proc/1/environ or our fds; the control channel stays ours. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -errno;
	in->pid1 = getpid() == 1;
	/* Not PID 1 (the test harness): orphans of our sessions must still come to us. */
	if (!in->pid1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return -errno;
	in->sigfd = signals_setup();
	return in->sigfd < 0 ? in->sigfd : 0;
}

static int init_setup(struct init *in)
{
	int r = contract_parse(&in->env);
	if (r < 0)
		return r;
	clearenv(); /* nothing of the runtime's environment may reach a session */
	stdio_ensure();
	in->setgroups_deny = setgroups_denied();
	r = process_setup(in);
	if (r < 0)
		return r;
	int fd = in->env.ctl_fd;
	if ((r = fd_set_cloexec(fd, true)) < 0 || (r = proto_send_hello(fd)) < 0 ||
	    (r = fd_set_nonblock(fd, true)) < 0)
		return r;
	proto_conn_init(&in->ctl, fd);
	return 0;
}

/* ---- the event loop --------------------------------------------------------------- */

enum { POLL_CTL, POLL_SIG, POLL_FIXED };
#define POLL_MAX (POLL_FIXED + 3 * INIT_MAX_SESSIONS)

struct poll_set {
	struct pollfd fds[POLL_MAX];
	struct session *who[POLL_MAX];
	int what[POLL_MAX]; /* -1: the session's stdin (writable); 0/1: its stdout/stderr */
	size_t n;
};

static void poll_add(struct poll_set *ps, int fd, short events, struct session *s, int what)
{
	ps->fds[ps->n] = (struct pollfd){.fd = fd, .events = events};
	ps->who[ps->n] = s;
	ps->what[ps->n++] = what;
}

static bool stdin_backlogged(const struct init *in)
{
	for (size_t i = 0; i < in->n_sessions; i++)
		if (session_stdin_pending(in->sessions[i]) > INIT_BACKLOG_MAX)
			return true;
	return false;
}

static void poll_build(struct init *in, struct poll_set *ps, bool out_ok)
{
	short ctl = (stdin_backlogged(in) ? 0 : POLLIN) | (proto_conn_pending(&in->ctl) ? POLLOUT : 0);
	ps->n = 0;
	poll_add(ps, in->ctl.fd, ctl, NULL, 0);
	poll_add(ps, in->sigfd, POLLIN, NULL, 0);
	for (size_t i = 0; i < in->n_sessions; i++) {
		struct session *s = in->sessions[i];
		if (s->in_fd >= 0 && session_stdin_pending(s) > 0)
			poll_add(ps, s->in_fd, POLLOUT, s, -1);
		for (int k = 0; k < 2 && out_ok; k++)
			if (s->out_fd[k] >= 0 && !session_output_held(s, k))
				poll_add(ps, s->out_fd[k], POLLIN, s, k);
	}
}

/* Output of s waits for the supervisor's credit (windows): it is not over yet. */
static bool output_held(const struct session *s)
{
	return session_output_held(s, 0) || session_output_held(s, 1);
}

static int poll_timeout(struct init *in, uint64_t now, bool out_ok)
{
	int64_t t = -1;
	for (size_t i = 0; i < in->n_sessions; i++) {
		struct session *s = in->sessions[i];
		if (!s->exited)
			continue;
		/* while output is held back, its drain deadline must not run out */
		if ((!out_ok || output_held(s)) && s->deadline < now + SESSION_DRAIN_MS)
			s->deadline = now + SESSION_DRAIN_MS;
		int64_t d = s->deadline > now ? (int64_t)(s->deadline - now) : 0;
		if (t < 0 || d < t)
			t = d;
	}
	return (int)t;
}

static void ctl_read(struct init *in)
{
	struct proto_frame f;
	int r = proto_conn_read(&in->ctl);
	if (r == -EAGAIN)
		return;
	if (r <= 0) {
		init_log("control channel %s: the supervisor is gone, ending the box", r == 0 ? "closed" : strerror(-r));
		init_die(in, 1);
	}
	while ((r = proto_conn_next(&in->ctl, &f)) > 0) {
		if (dispatch_frame(in, &f) < 0) {
			init_log("protocol error: bad %s frame (%u bytes) on stream %u, closing",
				 proto_type_name(f.hdr.type), f.hdr.len, f.hdr.stream);
			init_die(in, 2);
		}
	}
	if (r < 0) {
		init_log("protocol error: malformed frame header (%s), closing", strerror(-r));
		init_die(in, 2);
	}
}

/* Blocked signals are queued even for a PID 1 without handlers, so a box process of our uid
 * (or with CAP_KILL) can reach our signalfd. A SIGTERM only stops the box when it comes from
 * outside: a sender in an ancestor pid namespace (the runtime, the host) shows up with
 * pid 0. Not PID 1 (the test harness), every sender counts. */
static bool sig_from_outside(const struct init *in, const struct signalfd_siginfo *si)
{
	return !in->pid1 || si->ssi_pid == 0;
}

static void sig_read(struct init *in)
{
	struct signalfd_siginfo si;
	while (read(in->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			reap_children(in); /* also when faked: reaping is always safe */
		else if (si.ssi_signo == SIGTERM && sig_from_outside(in, &si))
			stop_box(in, STOP_ON_SIGTERM_MS, false);
		/* anything else (SIGINT, SIGHUP, SIGUSR1, SIGTERM from inside, ...) is ignored */
	}
}

static void poll_handle(struct init *in, const struct poll_set *ps)
{
	uint64_t now = init_now_ms();
	for (size_t i = POLL_FIXED; i < ps->n; i++) {
		if (!ps->fds[i].revents)
			continue;
		if (ps->what[i] < 0)
			session_flush_stdin(ps->who[i]);
		else if (ps->who[i]->out_fd[ps->what[i]] >= 0)
			session_pump(ps->who[i], ps->what[i], &in->ctl, now);
	}
	if (ps->fds[POLL_SIG].revents)
		sig_read(in);
	if (ps->fds[POLL_CTL].revents & (POLLIN | POLLHUP | POLLERR))
		ctl_read(in);
}

static void sessions_finish(struct init *in)
{
	uint64_t now = init_now_ms();
	/* while output is held back its drain deadline means nothing: a session that still has
	 * output open waits, or what is left in its pipe would be lost (a tar stream cut short) */
	bool held = proto_conn_pending(&in->ctl) > INIT_BACKLOG_MAX;
	for (size_t i = 0; i < in->n_sessions;) {
		struct session *s = in->sessions[i];
		bool open = s->out_fd[0] >= 0 || s->out_fd[1] >= 0;
		if (!session_done(s, now) || (held && open) || output_held(s)) {
			i++;
			continue;
		}
		session_finish(s, &in->ctl);
		session_free(s);
		in->sessions[i] = in->sessions[--in->n_sessions];
	}
}

/* With windows: each session's stdin credit topped up as its bytes went into its pipe (a
 * new session's first, after its STARTED). */
static void sessions_grant(struct init *in)
{
	for (size_t i = 0; i < in->n_sessions; i++)
		session_stdin_grant(in->sessions[i], &in->ctl);
}

static void ctl_flush(struct init *in)
{
	int r = proto_conn_flush(&in->ctl);
	if (r < 0 && r != -EAGAIN) {
		init_log("control channel: %s: the supervisor is gone, ending the box", strerror(-r));
		init_die(in, 1);
	}
}

static _noreturn_ void init_loop(struct init *in)
{
	static struct poll_set ps;
	for (;;) {
		bool out_ok = proto_conn_pending(&in->ctl) <= INIT_BACKLOG_MAX;
		poll_build(in, &ps, out_ok);
		if (poll(ps.fds, ps.n, poll_timeout(in, init_now_ms(), out_ok)) < 0 && errno != EINTR) {
			init_log("poll: %s", strerror(errno));
			init_die(in, 1);
		}
		poll_handle(in, &ps);
		sessions_grant(in);
		sessions_finish(in);
		ctl_flush(in);
	}
}

int main(int argc, char **argv)
{
	static struct init in = {.sigfd = -1};
	/* `paddock-init paddock-init:tar ...`: the tar built-in on its own, as the benchmarks run
	 * it; only the caller's own credentials, so nothing a box could not do with its own tar */
	if (argc > 1 && streq(argv[1], WSTAR_BUILTIN))
		return guest_wstar_main(argv + 1);
	/* only a vm guest starts us as PID 1 without a control fd: stage 1 takes the guest from
	 * the initramfs to the box's root and opens the control port (vmboot.h) */
	if (getpid() == 1 && !getenv("PADDOCK_CTL_FD") && vmboot() < 0)
		return 1;
	int r = init_setup(&in);
	if (r < 0) {
		init_log("cannot start: %s", strerror(-r));
		return 1;
	}
	init_loop(&in);
}
