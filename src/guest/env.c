/* env.c — users, environments, working directories and exit statuses of sessions (pure). */
#include <sys/wait.h>

#include "guest/env.h"

void guest_user_for(const char *name, uid_t agent_uid, gid_t agent_gid, struct guest_user *ret)
{
	if (name && streq(name, "root")) {
		*ret = (struct guest_user){.name = "root", .home = "/root", .uid = 0, .gid = 0, .root = true};
		return;
	}
	*ret = (struct guest_user){.name = "agent", .home = "/home/agent", .uid = agent_uid, .gid = agent_gid};
}

static ssize_t env_find(char *const *v, const char *key, size_t klen)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strncmp(v[i], key, klen) == 0 && v[i][klen] == '=')
			return (ssize_t)i;
	return -1;
}

char **guest_env_set(char **v, const char *kv)
{
	const char *eq = strchr(kv, '=');
	ssize_t i = env_find(v, kv, eq ? (size_t)(eq - kv) : strlen(kv));
	if (i < 0)
		return strv_append(v, kv);
	free(v[i]);
	v[i] = xstrdup(kv);
	return v;
}

const char *guest_env_get(char *const *v, const char *key)
{
	size_t klen = strlen(key);
	ssize_t i = env_find(v, key, klen);
	return i < 0 ? NULL : v[i] + klen + 1;
}

static char **env_put(char **v, const char *key, const char *value)
{
	_cleanup_free_ char *kv = xasprintf("%s=%s", key, value);
	return guest_env_set(v, kv);
}

char **guest_env_build(const struct guest_user *u, const char *shell, bool tty, const char *const *req)
{
	char **v = NULL;
	v = env_put(v, "PATH", GUEST_PATH);
	v = env_put(v, "HOME", u->home);
	v = env_put(v, "USER", u->name);
	v = env_put(v, "LOGNAME", u->name);
	v = env_put(v, "SHELL", shell);
	v = env_put(v, "LANG", "C.UTF-8");
	if (tty)
		v = env_put(v, "TERM", "xterm-256color");
	for (size_t i = 0; req && req[i]; i++)
		v = guest_env_set(v, req[i]);
	return v;
}

const char *guest_cwd(const char *req_cwd, char *const *envp, bool *ret_strict)
{
	const char *home = guest_env_get(envp, "HOME");
	*ret_strict = req_cwd != NULL;
	if (req_cwd)
		return req_cwd;
	return home && home[0] == '/' ? home : "/";
}

int guest_exit_status(int wstatus)
{
	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return -1;
}
