/* ns_confine.c — fds, no_new_privs, rlimits, capabilities, seccomp and exec (child side). */
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "runtime/ns/ns_confine.h"

#define FD_TMP_BASE 16

uint64_t ns_caps_keep(void)
{
	return (UINT64_C(1) << CAP_CHOWN) | (UINT64_C(1) << CAP_KILL) | (UINT64_C(1) << CAP_SETGID) |
	       (UINT64_C(1) << CAP_SETUID) | (UINT64_C(1) << CAP_SETPCAP);
}

uint64_t ns_caps_keep_build(void)
{
	return ns_caps_keep() | (UINT64_C(1) << CAP_DAC_OVERRIDE) | (UINT64_C(1) << CAP_FOWNER) |
	       (UINT64_C(1) << CAP_FSETID) | (UINT64_C(1) << CAP_SYS_CHROOT) | (UINT64_C(1) << CAP_NET_BIND_SERVICE) |
	       (UINT64_C(1) << CAP_AUDIT_WRITE) | (UINT64_C(1) << CAP_SETFCAP);
}

static struct rlimit capped(rlim_t want, const struct rlimit *now)
{
	rlim_t v = now && now->rlim_max != RLIM_INFINITY && now->rlim_max < want ? now->rlim_max : want;
	return (struct rlimit){v, v};
}

void ns_rlimits(const struct ns_limits *lim, const struct rlimit *nofile_now, const struct rlimit *nproc_now,
		const struct rlimit *fsize_now, struct ns_plan *p)
{
	p->lim_core = (struct rlimit){0, 0};
	p->lim_nofile = capped(65536, nofile_now);
	/* counted per user in the box's user namespace (Linux >= 5.14) */
	p->lim_nproc = capped(lim->pids, nproc_now);
	/* one file cannot outgrow the writable layer (nor fill a writable bind beyond it) */
	p->lim_fsize = capped(lim->disk, fsize_now);
}

/* child: moves the fds we keep to fixed numbers (through high temporaries so none clobbers
 * another), points 0,1,2 at the box's /dev/null and closes everything else: no fd of the
 * supervisor (sockets, files, the host's tree) survives into the box. */
int ns_confine_fds(const struct ns_plan *p, int *report_fd, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_FDS))
		return ns_fail(rep, NS_LAYER_FDS, EPERM, "cannot close inherited fds (injected failure)");
	int ctl = fcntl(p->ctl_fd, F_DUPFD_CLOEXEC, FD_TMP_BASE);
	int report = fcntl(p->report_fd, F_DUPFD_CLOEXEC, FD_TMP_BASE);
	int init = fcntl(p->init_fd, F_DUPFD_CLOEXEC, FD_TMP_BASE);
	if (ctl < 0 || report < 0 || init < 0)
		return ns_fail(rep, NS_LAYER_FDS, errno, "cannot duplicate fds");
	*report_fd = report;
	if (dup3(ctl, NS_CTL_FD, 0) < 0 || dup3(report, NS_REPORT_FD, O_CLOEXEC) < 0 || dup3(init, NS_INIT_FD, O_CLOEXEC) < 0)
		return ns_fail(rep, NS_LAYER_FDS, errno, "cannot place the control fds");
	int null = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (null < 0)
		return ns_fail(rep, NS_LAYER_FDS, errno, "cannot open the box's /dev/null");
	for (int fd = 0; fd < 3; fd++) {
		int r = fd == null ? fcntl(fd, F_SETFD, 0) : dup3(null, fd, 0);
		if (r < 0)
			return ns_fail(rep, NS_LAYER_FDS, errno, "cannot point fd %d at /dev/null", fd);
	}
	if (syscall(SYS_close_range, NS_INIT_FD + 1, ~0U, 0) < 0)
		return ns_fail(rep, NS_LAYER_FDS, errno, "close_range failed");
	*report_fd = NS_REPORT_FD;
	return 0;
}

/* child: from here on no execve can grant privileges (setuid bits, file capabilities) and
 * Landlock and seccomp may be applied without CAP_SYS_ADMIN. */
int ns_confine_nnp(const struct ns_plan *p, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_NNP) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return ns_fail(rep, NS_LAYER_NNP, ns_injected(p, NS_LAYER_NNP) ? EPERM : errno, "cannot set no_new_privs");
	return 0;
}

int ns_confine_rlimits(const struct ns_plan *p, struct ns_report *rep)
{
	const struct {
		int res;
		const char *name;
		const struct rlimit *v;
	} l[] = {
		{RLIMIT_CORE, "RLIMIT_CORE", &p->lim_core},
		{RLIMIT_NOFILE, "RLIMIT_NOFILE", &p->lim_nofile},
		{RLIMIT_NPROC, "RLIMIT_NPROC", &p->lim_nproc},
		{RLIMIT_FSIZE, "RLIMIT_FSIZE", &p->lim_fsize},
	};
	if (ns_injected(p, NS_LAYER_RLIMIT))
		return ns_fail(rep, NS_LAYER_RLIMIT, EPERM, "cannot set RLIMIT_CORE (injected failure)");
	for (size_t i = 0; i < ARRAY_SIZE(l); i++)
		if (setrlimit(l[i].res, l[i].v) < 0)
			return ns_fail(rep, NS_LAYER_RLIMIT, errno, "cannot set %s to %llu", l[i].name,
				       (unsigned long long)l[i].v->rlim_max);
	return 0;
}

/* child: the bounding set keeps only ns_caps_keep() (so no process in the box can ever hold
 * CAP_SYS_ADMIN, CAP_NET_ADMIN, ... over the box's namespaces), no ambient or inheritable
 * capabilities; permitted/effective are cut to the same set. */
int ns_confine_caps(const struct ns_plan *p, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_CAPS))
		return ns_fail(rep, NS_LAYER_CAPS, EPERM, "cannot drop capabilities (injected failure)");
	for (int c = 0; c <= p->cap_last; c++)
		if (!(p->caps_keep & (UINT64_C(1) << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0)
			return ns_fail(rep, NS_LAYER_CAPS, errno, "cannot drop capability %d from the bounding set", c);
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		return ns_fail(rep, NS_LAYER_CAPS, errno, "cannot clear the ambient capabilities");
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return ns_fail(rep, NS_LAYER_CAPS, errno, "capget failed");
	for (int i = 0; i < 2; i++) {
		uint32_t keep = (uint32_t)(p->caps_keep >> (32 * i));
		d[i].inheritable = 0;
		d[i].permitted &= keep;
		d[i].effective &= keep;
	}
	if (syscall(SYS_capset, &h, d) < 0)
		return ns_fail(rep, NS_LAYER_CAPS, errno, "capset failed");
	return 0;
}

/* child: loads the filter compiled by the supervisor. Last before exec, so it also covers
 * every system call paddock-init makes. */
int ns_confine_seccomp(const struct ns_plan *p, struct ns_report *rep)
{
	if (ns_injected(p, NS_LAYER_SECCOMP))
		return ns_fail(rep, NS_LAYER_SECCOMP, EPERM, "cannot load the seccomp filter (injected failure)");
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p->seccomp) < 0)
		return ns_fail(rep, NS_LAYER_SECCOMP, errno, "cannot load the seccomp filter (%u instructions)", p->seccomp.len);
	return 0;
}

int ns_exec_init(const struct ns_plan *p, struct ns_report *rep)
{
	syscall(SYS_execveat, NS_INIT_FD, "", p->argv, p->envp, AT_EMPTY_PATH);
	return ns_fail(rep, NS_LAYER_EXEC, errno, "cannot execute paddock-init");
}
