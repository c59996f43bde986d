/* ns_child.c — the box's first process, from clone3 to execveat of paddock-init. Child side
 * only: system calls on the plan, no malloc (see ns.h). */
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "runtime/ns/ns_cgroup.h"
#include "runtime/ns/ns_confine.h"
#include "runtime/ns/ns_landlock.h"
#include "runtime/ns/ns_rootfs.h"

/* Nothing the supervisor blocked or ignored (SIGPIPE, SIGCHLD for a signalfd) leaks into
 * paddock-init: dispositions set to SIG_IGN would survive execve. */
static void reset_signals(void)
{
	sigset_t none;
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int s = 1; s < _NSIG; s++)
		sigaction(s, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Waits for the supervisor to finish the cgroup and the id maps. EOF: it gave up. */
static int wait_for_parent(const struct ns_plan *p)
{
	char c;
	for (;;) {
		ssize_t n = read(p->sync_fd, &c, 1);
		if (n == 1)
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		_exit(1);
	}
}

/* Becomes root of the box (or the agent when root is not mapped) and sheds the caller's
 * supplementary groups when the kernel lets us (setgroups "allow"). Safe: ids only refer to
 * the box's user namespace, whose maps the supervisor wrote and verified. */
static int become_box_user(const struct ns_plan *p, struct ns_report *rep)
{
	/* Raw system calls, not glibc's wrappers: those apply the change to every thread of the
	 * process, and this child of clone3 inherited glibc's list of the supervisor's threads
	 * (its network thread, the workspace producer) without the threads themselves; the
	 * wrapper would signal them and wait forever. The child is one thread, so the raw call
	 * changes all of it. */
	if (p->may_setgroups && syscall(SYS_setgroups, 0, NULL) < 0)
		return ns_fail(rep, NS_LAYER_USERNS, errno, "cannot drop supplementary groups");
	if (syscall(SYS_setresgid, p->gid, p->gid, p->gid) < 0 || syscall(SYS_setresuid, p->uid, p->uid, p->uid) < 0)
		return ns_fail(rep, NS_LAYER_USERNS, errno, "cannot become uid %u in the box", (unsigned)p->uid);
	return 0;
}

/* The box dies with the supervisor's thread that started it. Set after the uid change (which
 * clears it); the poll catches a supervisor that died before the prctl. */
static int die_with_parent(const struct ns_plan *p, struct ns_report *rep)
{
	struct pollfd pfd = {.fd = p->sync_fd, .events = POLLIN};
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		return ns_fail(rep, NS_LAYER_NS, errno, "cannot set the parent-death signal");
	if (poll(&pfd, 1, 0) != 0)
		_exit(1);
	return 0;
}

/* A cgroup namespace rooted at the box's cgroup (the supervisor moved us there): the box sees
 * "/" as its cgroup and nothing of the host's hierarchy. */
static int cgroup_ns(const struct ns_plan *p, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_NS))
		return ns_fail(rep, NS_LAYER_NS, EPERM, "cannot create the cgroup namespace (injected failure)");
	if (unshare(CLONE_NEWCGROUP) < 0)
		return ns_fail(rep, NS_LAYER_NS, errno, "cannot create the cgroup namespace");
	return 0;
}

/* Hostname (own UTS namespace) and loopback up (own network namespace: nothing else in it). */
static int uts_and_net(const struct ns_plan *p, struct ns_report *rep)
{
	struct ifreq ifr = {0};
	if (sethostname(p->hostname, strlen(p->hostname)) < 0)
		return ns_fail(rep, NS_LAYER_NS, errno, "cannot set the hostname");
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return ns_fail(rep, NS_LAYER_NS, errno, "cannot open a socket in the box's network namespace");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	int r = ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP;
	if (r == 0)
		r = ioctl(s, SIOCSIFFLAGS, &ifr);
	int e = errno;
	close(s);
	return r < 0 ? ns_fail(rep, NS_LAYER_NS, e, "cannot bring up the loopback interface") : 0;
}

static int confine(const struct ns_plan *p, int *report_fd, struct ns_report *rep)
{
	ns_trace(p, "confine");
	if (ns_confine_fds(p, report_fd, rep) < 0 || ns_confine_nnp(p, rep) < 0 || ns_confine_rlimits(p, rep) < 0)
		return -1;
	if (ns_confine_caps(p, rep) < 0 || ns_landlock_apply(p, rep) < 0 || ns_confine_seccomp(p, rep) < 0)
		return -1;
	return 0;
}

static int setup(const struct ns_plan *p, int bind_fds[], int *report_fd, struct ns_report *rep)
{
	ns_trace(p, "start");
	/* first, so that everything from here on is charged to the box and limited */
	if (ns_cgroup_join_self(p, rep) < 0)
		return -1;
	ns_trace(p, "cgroup joined");
	umask(0);
	reset_signals();
	if (ns_rootfs_open_binds(p, bind_fds, rep) < 0)
		return -1;
	wait_for_parent(p);
	ns_trace(p, "parent done");
	/* before the uid change, which drops CAP_NET_ADMIN over the box's namespaces */
	if (ns_net_tap(p, rep) < 0)
		return -1;
	ns_trace(p, "tap");
	if (become_box_user(p, rep) < 0 || die_with_parent(p, rep) < 0 || cgroup_ns(p, rep) < 0)
		return -1;
	ns_trace(p, "user");
	if (ns_rootfs_build(p, bind_fds, rep) < 0 || uts_and_net(p, rep) < 0 || ns_ws_send(p, rep) < 0)
		return -1;
	ns_trace(p, "rootfs");
	umask(022);
	if (confine(p, report_fd, rep) < 0)
		return -1;
	return ns_exec_init(p, rep);
}

_noreturn_ void ns_child_main(const struct ns_plan *p)
{
	struct ns_report rep = {0};
	int bind_fds[NS_MAX_BINDS + 2];  /* + the image tree and its build upper */
	int report_fd = p->report_fd;
	setup(p, bind_fds, &report_fd, &rep);
	/* one write of less than PIPE_BUF bytes: the parent reads all of it or nothing */
	(void)!write(report_fd, &rep, sizeof(rep));
	_exit(127);
}
