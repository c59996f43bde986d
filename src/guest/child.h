/* child.h — the forked side of a session: everything between fork() and execve(). */
#pragma once

#include "util/util.h"

struct child_spec {
	char *const *argv;
	char *const *envp;    /* the complete environment (guest_env_build) */
	const char *cwd;      /* requested cwd, or NULL for $HOME (falling back to /) */
	uid_t uid;
	gid_t gid;
	bool root;            /* root session: no supplementary groups at all */
	bool tty;             /* stdio[0] is a pty slave that becomes the controlling terminal */
	bool setgroups_deny;  /* /proc/self/setgroups is "deny": setgroups() cannot work here */
	bool keep_caps;       /* root of a build box: keep the capabilities the runtime left */
	int stdio[3];         /* become fds 0, 1, 2; all >= 3 (PID 1 keeps 0-2 occupied) */
	int exec_fd;          /* O_CLOEXEC, kept open until the execve() (session.c), or -1 */
};

/* Sets the session up and execs it. Never returns: on failure it writes one line
 * "paddock-init: ..." to the session's stderr and exits 125 (setup), 127 (program not found)
 * or 126 (found but not runnable), like a shell. */
_noreturn_ void child_exec(const struct child_spec *s);
