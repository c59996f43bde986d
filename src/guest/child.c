/* child.c — what a session's process does between fork() and execve(): become a session
 * leader with its stdio, reset signals, take the session user's ids, lose every capability,
 * close every inherited fd, enter its directory, exec. Any setup failure ends it with 125
 * before the requested program runs: a session never starts half-dropped.
 *
 * A session that execs a program runs this in a child that borrows PID 1's memory
 * (clone(CLONE_VM), session.c) while PID 1 waits for the execve(): so the path to the
 * execve() allocates nothing and changes no global (a failure message is formatted on the
 * stack and written with write(2); environ is PID 1's to restore, errno PID 1 does not read
 * meanwhile). Kernel state —
 * credentials, capabilities, signal dispositions and mask, fds, cwd, session — is the
 * child's own (no CLONE_FILES, CLONE_FS, CLONE_SIGHAND, CLONE_THREAD). The built-ins run in
 * a forked copy of PID 1, which is single-threaded, so they may allocate. */
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "guest/child.h"
#include "guest/wsalias.h"
#include "guest/wsscan.h"
#include "guest/wstar.h"
#include "proto/tarfmt.h"
#include "proto/wsscan.h"
#include "guest/env.h"

static _noreturn_ void child_fail(int code, const char *what, const char *arg, int err)
{
	/* snprintf into a stack buffer and write(2): no stdio stream, no allocation (dprintf
	 * would malloc its buffer in PID 1's heap); strerrordesc_np returns a constant */
	char msg[512];
	const char *desc = strerrordesc_np(err);
	int n = snprintf(msg, sizeof(msg), "paddock-init: %s%s%s: %s\n", what, arg ? " " : "", arg ? arg : "",
			 desc ? desc : "unknown error");
	if (n > (int)sizeof(msg) - 1)
		n = (int)sizeof(msg) - 1, msg[n - 1] = '\n';
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)n);
	_exit(code);
}

static int child_stdio(const struct child_spec *s)
{
	/* setsid() just made us a session leader without a terminal: take the pty as ours, so
	 * job control, ^C and SIGHUP-on-close work inside the session. */
	if (s->tty && ioctl(s->stdio[0], TIOCSCTTY, 0) < 0)
		return -errno;
	for (int i = 0; i < 3; i++)
		if (dup2(s->stdio[i], i) < 0) /* dup2 clears O_CLOEXEC on the copy */
			return -errno;
	return 0;
}

static void child_signals(void)
{
	/* PID 1 blocks nearly everything (it reads signals through a signalfd) and ignores
	 * SIGPIPE; a session starts with the ordinary defaults. Blocked-then-pending signals
	 * (a SIGNAL that raced with our setsid()) are delivered right here. */
	struct sigaction sa = {.sa_handler = SIG_DFL};
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig < _NSIG; sig++)
		(void)sigaction(sig, &sa, NULL); /* SIGKILL, SIGSTOP and libc's own refuse: fine */
	sigset_t none;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
}

static bool cap_effective(int cap)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[cap / 32].effective & (1u << (cap % 32));
}

static int caps_drop_bounding(void)
{
	/* Needs CAP_SETPCAP, hence before the uid change (which may clear it). Without it (the
	 * unprivileged test harness) the drops cannot be done, and need not be: the session gets
	 * empty permitted/effective/inheritable/ambient sets and no_new_privs, so no execve()
	 * can bring a bounding-set capability back. With it, every drop must succeed. */
	bool must = cap_effective(CAP_SETPCAP);
	for (unsigned long cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && must)
			return -errno;
	return 0;
}

static int caps_clear(void)
{
	/* Lowering capabilities needs no privilege. This is what makes a root session root
	 * in name only: uid 0 without a single capability, in the box's user namespace. */
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	if (syscall(SYS_capset, &h, d) < 0 || syscall(SYS_capget, &h, d) < 0)
		return -errno;
	for (int i = 0; i < 2; i++)
		if (d[i].effective || d[i].permitted || d[i].inheritable)
			return -EPERM;
	return 0;
}

static int child_groups(const struct child_spec *s)
{
	/* The agent keeps exactly its own group; root gets none. setgroups() fails with EPERM
	 * when we lack CAP_SETGID (the unprivileged test harness) or when the runtime wrote
	 * "deny" to /proc/PID/setgroups (a single-uid user namespace): then the groups are
	 * whatever the runtime gave PID 1 and cannot be changed by anyone in the box either.
	 * Any other failure is fatal. */
	gid_t g = s->gid;
	if (setgroups(s->root ? 0 : 1, &g) == 0)
		return 0;
	if (errno == EPERM && (s->setgroups_deny || !cap_effective(CAP_SETGID)))
		return 0;
	return -errno;
}

static int child_ids(const struct child_spec *s)
{
	int r = child_groups(s);
	if (r < 0)
		return r;
	/* All three ids, so no saved id lets the session switch back. Setting the ids we
	 * already have is allowed without privilege (the test harness runs as itself). */
	if (setresgid(s->gid, s->gid, s->gid) < 0 || setresuid(s->uid, s->uid, s->uid) < 0)
		return -errno;
	uid_t ru, eu, su;
	if (getresuid(&ru, &eu, &su) < 0 || ru != s->uid || eu != s->uid || su != s->uid)
		return -EPERM;
	return 0;
}

static int child_privileges(const struct child_spec *s)
{
	/* no_new_privs: nothing the session execs (setuid binaries, file capabilities) can
	 * raise its privileges. The runtime set it already; repeating it costs nothing and
	 * covers the test harness and backends that cannot set it for us. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return -errno;
	/* A build box's root keeps what the runtime left in the bounding set (ns: Docker's
	 * default set minus NET_RAW and MKNOD, all of it confined to the box's user namespace):
	 * package managers chown, chmod and drop to their own users. Only the runtime sets
	 * root_caps, and only for a box that runs a profile's install commands with no
	 * workspace; every other session is uid 0 without a single capability. */
	int r = s->keep_caps ? 0 : caps_drop_bounding();
	if (r == 0)
		r = child_ids(s);
	if (r == 0 && !s->keep_caps)
		r = caps_clear();
	return r;
}

static int close_from_to(unsigned int lo, unsigned int hi)
{
	if (lo > hi || close_range(lo, hi, 0) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	long max = sysconf(_SC_OPEN_MAX);
	unsigned int end = max > 0 ? (unsigned int)max : 65536;
	for (unsigned int fd = lo; fd <= hi && fd < end; fd++)
		(void)close((int)fd);
	return 0;
}

static int child_close_fds(const struct child_spec *s)
{
	/* The control channel, the signalfd and every other session's fds are O_CLOEXEC
	 * already; closing them all before exec makes that a guarantee, not a convention. The
	 * one kept, exec_fd, is O_CLOEXEC too: it tells PID 1 when the execve() happened. */
	if (s->exec_fd < 3)
		return close_from_to(3, ~0u);
	int r = close_from_to(3, (unsigned int)s->exec_fd - 1);
	return r < 0 ? r : close_from_to((unsigned int)s->exec_fd + 1, ~0u);
}

static void child_chdir(const struct child_spec *s)
{
	bool strict;
	const char *dir = guest_cwd(s->cwd, s->envp, &strict);
	if (chdir(dir) == 0)
		return;
	if (strict || chdir("/") < 0)
		child_fail(125, "cannot chdir to", dir, errno);
}

static _noreturn_ void child_run(const struct child_spec *s)
{
	/* glibc's execvpe() searches the PATH of environ, not of its envp argument: point
	 * environ at the session's environment so the search uses the session's PATH (in a
	 * CLONE_VM child this is PID 1's variable: session.c puts it back) */
	environ = (char **)s->envp;
	execvpe(s->argv[0], s->argv, s->envp);
	int e = errno;
	child_fail(e == ENOENT ? 127 : 126, "cannot run", s->argv[0], e);
}

_noreturn_ void child_exec(const struct child_spec *s)
{
	int r;
	if (setsid() < 0)
		child_fail(125, "cannot create a session", NULL, errno);
	r = child_stdio(s);
	if (r < 0)
		child_fail(125, "cannot set up stdio", NULL, -r);
	child_signals();
	if (streq(s->argv[0], WSSCAN_BUILTIN)) {
		/* the box's scan of its own workspace: it keeps PID 1's credentials to pause every
		 * process of the box, and only reads metadata (wsscan.c) */
		if ((r = child_close_fds(s)) < 0)
			child_fail(125, "cannot close inherited fds", NULL, -r);
		_exit(guest_wsscan_main(s->argv));
	}
	r = child_privileges(s);
	if (r < 0)
		child_fail(125, "cannot drop privileges", NULL, -r);
	r = child_close_fds(s);
	if (r < 0)
		child_fail(125, "cannot close inherited fds", NULL, -r);
	if (streq(s->argv[0], WSALIAS_BUILTIN)) /* with the session's own credentials */
		_exit(guest_wsalias_main(s->argv));
	child_chdir(s);
	if (streq(s->argv[0], WSTAR_BUILTIN)) /* likewise, in the session's directory */
		_exit(guest_wstar_main(s->argv));
	child_run(s);
}
