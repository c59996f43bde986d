/* reap.c — PID 1 inherits every orphan of the box: reap them all (no zombie survives), and
 * report an exit only for session leaders. */
#include <sys/wait.h>

#include "guest/init.h"

static void reap_one(struct init *in, pid_t pid, int wstatus, uint64_t now)
{
	struct session *s = init_session_by_pid(in, pid);
	if (s)
		session_exited(s, guest_exit_status(wstatus), now);
}

bool reap_children(struct init *in)
{
	uint64_t now = init_now_ms();
	for (;;) {
		int wstatus;
		/* __WALL: also children whose exit signal is not SIGCHLD (raw clone()). */
		pid_t pid = waitpid(-1, &wstatus, WNOHANG | __WALL);
		if (pid > 0) {
			reap_one(in, pid, wstatus, now);
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		return pid < 0 && errno == ECHILD;
	}
}
