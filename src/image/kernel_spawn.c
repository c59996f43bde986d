/* kernel_spawn.c — run a host tool and capture its output (see kernel_spawn.h). */
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "image/kernel_spawn.h"

extern char **environ;

static char **env_with_c_locale(void)
{
	char **env = xcalloc(1, sizeof(char *));
	for (char **e = environ; e && *e; e++)
		if (!startswith(*e, "LC_ALL="))
			env = strv_append(env, *e);
	return strv_append(env, "LC_ALL=C");
}

static int spawn_piped(char *const argv[], const char *cwd, int out_fd, pid_t *ret_pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	posix_spawn_file_actions_adddup2(&fa, out_fd, STDERR_FILENO);
	if (cwd)
		posix_spawn_file_actions_addchdir_np(&fa, cwd);
	_cleanup_strv_ char **env = env_with_c_locale();
	int r = posix_spawnp(ret_pid, argv[0], &fa, NULL, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

/* Reads until EOF; past the cap the output is drained but not kept. */
static char *read_capped(int fd, size_t *ret_len, bool *ret_truncated)
{
	size_t len = 0, cap = 4096;
	char *buf = xmalloc(cap + 1);
	char scratch[4096];
	*ret_truncated = false;
	for (;;) {
		if (len == cap && cap < IMAGE_RUN_MAX_OUTPUT) {
			cap *= 2;
			buf = xrealloc(buf, cap + 1);
		}
		bool full = len == cap;
		ssize_t n = read(fd, full ? scratch : buf + len, full ? sizeof(scratch) : cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (full)
			*ret_truncated = true;
		else
			len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

static int wait_exit(pid_t pid, int *ret_status)
{
	while (waitpid(pid, ret_status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static const char *tail(const char *s, size_t len, size_t n)
{
	return len > n ? s + len - n : s;
}

int image_run(char *const argv[], const char *cwd, char **ret_out, pd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe for %s", argv[0]);
	_cleanup_close_ int rd = p[0], wr = p[1];
	pid_t pid;
	int r = spawn_piped(argv, cwd, wr, &pid);
	if (r < 0)
		return pd_error(err, r, "cannot run %s", argv[0]);
	closep(&wr);
	wr = -1;
	size_t len;
	bool truncated;
	_cleanup_free_ char *out = read_capped(rd, &len, &truncated);
	int status;
	r = wait_exit(pid, &status);
	if (r < 0)
		return pd_error(err, r, "cannot wait for %s", argv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return pd_error_msg(err, EIO, "%s failed (%s %d): %s", argv[0], WIFEXITED(status) ? "exit status" : "signal",
				    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), tail(out, len, 400));
	if (truncated)
		return pd_error_msg(err, EFBIG, "%s printed more than %u bytes", argv[0], IMAGE_RUN_MAX_OUTPUT);
	if (ret_out)
		*ret_out = TAKE_PTR(out);
	return 0;
}
