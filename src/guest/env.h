/* env.h — the pure parts of starting a session: who it runs as, its fresh environment (with
 * the request's variables merged in), where it starts, and the shell-style exit status it
 * ends with. No I/O and no global state here, so all of it is unit-tested (test-env.c). */
#pragma once

#include "util/util.h"

/* The PATH of every session; execvpe() searches it. */
#define GUEST_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct guest_user {
	const char *name; /* "agent" or "root" */
	const char *home;
	uid_t uid;
	gid_t gid;
	bool root;        /* a root session: uid 0, no supplementary groups */
};

/* Resolves a request's user ("agent", "root", or NULL for the default agent) to its ids. The
 * name was validated by proto_decode_exec(); anything but "root" is the agent. */
void guest_user_for(const char *name, uid_t agent_uid, gid_t agent_gid, struct guest_user *ret);

/* The session's environment: PATH, HOME, USER, LOGNAME, SHELL, LANG, TERM (tty only), then
 * each "KEY=VALUE" of req (may be NULL) overriding or extending it, later entries winning.
 * Nothing of PID 1's own environment leaks in. Returns a new strv. */
char **guest_env_build(const struct guest_user *u, const char *shell, bool tty, const char *const *req);
/* Sets "KEY=VALUE" in v, replacing an entry with the same KEY; returns the (new) vector. */
char **guest_env_set(char **v, const char *kv);
/* The value of key in v, or NULL. */
const char *guest_env_get(char *const *v, const char *key);

/* Where a session starts: the requested cwd if any (it must then exist), else $HOME of its
 * environment; *ret_strict says whether failing to enter it is fatal (exit 125) or falls back
 * to "/" (a missing home directory, like login(1)). */
const char *guest_cwd(const char *req_cwd, char *const *envp, bool *ret_strict);

/* Shell-style exit status from a wait status: the exit code, or 128+N for signal N; -1 for a
 * status that is not a termination. */
int guest_exit_status(int wstatus);
