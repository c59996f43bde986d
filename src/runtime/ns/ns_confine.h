/* ns_confine.h — the last layers before paddock-init runs, in this order: file descriptors,
 * no_new_privs, resource limits, capabilities, Landlock, seccomp, exec. All child-side. */
#pragma once

#include "runtime/ns/ns.h"

/* fds the child holds after ns_confine_fds */
#define NS_REPORT_FD 4
#define NS_INIT_FD 5

/* Pure: the capabilities paddock-init keeps in its bounding set (it needs to switch to the
 * agent or root user for each session, signal its sessions, and drop capabilities per
 * session; CAP_CHOWN for files it copies in). Everything else is gone for good. */
uint64_t ns_caps_keep(void);
/* A build box (runtime.h rootfs_upper): Docker's default set minus NET_RAW and MKNOD. */
uint64_t ns_caps_keep_build(void);
/* Pure: the rlimits of a box (core 0, nofile 65536, nproc = pids, fsize = disk), each capped
 * at the hard limit the caller has (a limit can only be lowered). */
void ns_rlimits(const struct ns_limits *lim, const struct rlimit *nofile_now, const struct rlimit *nproc_now,
		const struct rlimit *fsize_now, struct ns_plan *p);

/* child: 0,1,2 = /dev/null, NS_CTL_FD = control socket, NS_REPORT_FD and NS_INIT_FD kept
 * close-on-exec, everything else closed. *report_fd always names an open copy of the report
 * pipe (the original, a temporary, then NS_REPORT_FD). */
int ns_confine_fds(const struct ns_plan *p, int *report_fd, struct ns_report *rep);
int ns_confine_nnp(const struct ns_plan *p, struct ns_report *rep);
int ns_confine_rlimits(const struct ns_plan *p, struct ns_report *rep);
int ns_confine_caps(const struct ns_plan *p, struct ns_report *rep);
int ns_confine_seccomp(const struct ns_plan *p, struct ns_report *rep);
/* child: execveat(NS_INIT_FD, "", argv, envp, AT_EMPTY_PATH); returns only on failure. */
int ns_exec_init(const struct ns_plan *p, struct ns_report *rep);
