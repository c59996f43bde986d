/* stop.c — ending the box: killing every process in it, the graceful STOP, and the
 * descendant walk used when we are not PID 1 (the test harness). */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>

#include "guest/init.h"

#define STOP_KILL_GIVE_UP_MS 5000 /* processes stuck in D state: exit anyway */
#define STOP_FLUSH_MS 5000

static int proc_ppid(const char *pid, pid_t *ret)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	const char *p = strrchr(buf, ')'); /* comm may itself contain ')' */
	int ppid;
	if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
		return -EIO;
	*ret = ppid;
	return 0;
}

struct proc_ent {
	pid_t pid, ppid;
	bool ours;
};

static size_t proc_scan(struct proc_ent **ret)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct proc_ent *v = NULL;
	size_t n = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		pid_t ppid;
		if (de->d_name[0] < '1' || de->d_name[0] > '9' || proc_ppid(de->d_name, &ppid) < 0)
			continue;
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = (struct proc_ent){.pid = atoi(de->d_name), .ppid = ppid};
	}
	*ret = v;
	return n;
}

static bool proc_is_ours(const struct proc_ent *v, size_t n, pid_t ppid, pid_t self)
{
	if (ppid == self)
		return true;
	for (size_t i = 0; i < n; i++)
		if (v[i].ours && v[i].pid == ppid)
			return true;
	return false;
}

/* Not PID 1: kill(-1) would reach every process of our uid on the host, so only our
 * descendants are signalled (as a child subreaper, every orphan of ours is reparented to us,
 * so the tree under us is the whole box). */
static void kill_descendants(int sig)
{
	_cleanup_free_ struct proc_ent *v = NULL;
	size_t n = proc_scan(&v);
	pid_t self = getpid();
	for (bool more = true; more;) {
		more = false;
		for (size_t i = 0; i < n; i++) {
			if (v[i].ours || !proc_is_ours(v, n, v[i].ppid, self))
				continue;
			v[i].ours = more = true;
			(void)kill(v[i].pid, sig);
		}
	}
}

void kill_all(bool pid1, int sig)
{
	/* Why safe: as PID 1 of the box's pid namespace, kill(-1) reaches exactly the other
	 * processes of this namespace, and nothing outside it can be named from here. */
	if (pid1)
		(void)kill(-1, sig);
	else
		kill_descendants(sig);
}

static void wait_sigchld(struct init *in, uint64_t ms)
{
	struct pollfd p = {.fd = in->sigfd, .events = POLLIN};
	struct signalfd_siginfo si;
	(void)poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
	while (read(in->sigfd, &si, sizeof(si)) == sizeof(si))
		; /* SIGTERM again, SIGCHLD: we are stopping already, reaping happens next */
}

static void stop_wait(struct init *in, uint32_t timeout_ms)
{
	uint64_t deadline = init_now_ms() + timeout_ms;
	while (!reap_children(in)) {
		uint64_t now = init_now_ms();
		if (now >= deadline)
			return;
		wait_sigchld(in, deadline - now);
	}
}

static void stop_kill_rest(struct init *in)
{
	uint64_t give_up = init_now_ms() + STOP_KILL_GIVE_UP_MS;
	/* Repeated: in the test harness a process may fork between our /proc walk and kill. */
	for (;;) {
		kill_all(in->pid1, SIGKILL);
		if (reap_children(in) || init_now_ms() >= give_up)
			return;
		wait_sigchld(in, 100);
	}
}

static void stop_finish_sessions(struct init *in)
{
	uint64_t now = init_now_ms();
	for (size_t i = 0; i < in->n_sessions; i++) {
		struct session *s = in->sessions[i];
		/* every writer is dead: what is left in the pipes is finite */
		for (int k = 0; k < 2; k++)
			while (s->out_fd[k] >= 0 && session_pump(s, k, &in->ctl, now))
				;
		if (!s->exited) /* stuck in D state past our patience */
			session_exited(s, 128 + SIGKILL, now);
		session_finish(s, &in->ctl);
		session_free(s);
	}
	in->n_sessions = 0;
}

static void stop_flush(struct init *in)
{
	uint64_t deadline = init_now_ms() + STOP_FLUSH_MS;
	while (proto_conn_flush(&in->ctl) == -EAGAIN && init_now_ms() < deadline) {
		struct pollfd p = {.fd = in->ctl.fd, .events = POLLOUT};
		(void)poll(&p, 1, 100);
	}
}

_noreturn_ void stop_box(struct init *in, uint32_t timeout_ms, bool ack)
{
	kill_all(in->pid1, SIGTERM);
	stop_wait(in, timeout_ms);
	stop_kill_rest(in);
	stop_finish_sessions(in);
	/* The box's disks (overlay upper dir, vm image) hold the agent's work. In the test
	 * harness the filesystem is the host's: not ours to sync. */
	if (in->pid1)
		sync();
	if (ack)
		proto_conn_send(&in->ctl, PROTO_ACK, 0, 0, NULL, 0);
	stop_flush(in);
	exit(0);
}
