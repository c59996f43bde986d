/* applybranch.c — `paddock apply NAME --branch[=BRANCH]`: the box's commits (and, with
 * --uncommitted, its uncommitted changes as one more commit) become a branch of the host
 * repository. A git bundle made inside the box crosses over as a file (size-capped) and is
 * fetched into refs/heads/BRANCH: git objects are data; nothing is checked out, and every
 * hook is disabled for the host-side git commands (core.hooksPath=/dev/null). */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "cli/applybranch.h"
#include "cli/session.h"
#include "supervisor/supervisor.h"
#include "util/fdio.h"
#include "workspace/ws_path.h"

#define BUNDLE_MAX (UINT64_C(4) << 30)

static const char export_script[] =
	"set -e; cd /workspace; git rev-parse --verify -q HEAD >/dev/null || { echo 'no commits in the box' >&2; exit 3; }\n"
	"if [ \"$1\" = 1 ] && [ -n \"$(git status --porcelain)\" ]; then\n"
	"  export GIT_INDEX_FILE=$(mktemp); git read-tree HEAD; git add -A; t=$(git write-tree)\n"
	"  c=$(git -c user.name=paddock -c user.email=paddock@localhost commit-tree \"$t\" -p HEAD -m 'paddock: uncommitted changes')\n"
	"  rm -f \"$GIT_INDEX_FILE\"\n"
	"else c=$(git rev-parse HEAD); fi\n"
	"git update-ref refs/paddock/export \"$c\"; exec git bundle create -q - refs/paddock/export\n";

/* The child: the bundle from the box to out_fd (a file capped by RLIMIT_FSIZE). */
static _noreturn_ void bundle_out(const char *box_dir, bool uncommitted, int out_fd)
{
	pd_err err = {0};
	struct rlimit rl = {BUNDLE_MAX, BUNDLE_MAX};
	setrlimit(RLIMIT_FSIZE, &rl);
	signal(SIGXFSZ, SIG_IGN);
	char *argv[] = {"sh", "-c", (char *)export_script, "sh", uncommitted ? "1" : "0", NULL};
	int status = session_run_in(box_dir, argv, -1, out_fd, &err);
	if (status < 0)
		pd_err_print(&err);
	_exit(status < 0 ? 125 : status);
}

/* git's exit status; what it printed (stdout and stderr, the first msgn-1 bytes) in msg, shown
 * only when it failed ("bundle verify -q" still says "is okay") */
static int run_git_env(char *const *argv, char *const *envp, char *msg, size_t msgn);

static int run_git(char *const *argv, char *msg, size_t msgn)
{
	/* only what git needs: no inherited GIT_* that could point it elsewhere */
	char *envp[] = {"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "HOME=/nonexistent", NULL};
	return run_git_env(argv, envp, msg, msgn);
}

static int run_git_env(char *const *argv, char *const *envp, char *msg, size_t msgn)
{
	int p[2];
	msg[0] = '\0';
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid_t pid = fork();
	if (pid == 0) {
		if (dup2(p[1], 1) >= 0 && dup2(p[1], 2) >= 0)
			execve("/usr/bin/git", argv, envp);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	char sink[512];
	for (;;) { /* read all of it (git must not block on a full pipe); keep the start */
		bool keep = n + 1 < msgn;
		ssize_t k = read(p[0], keep ? msg + n : sink, keep ? msgn - 1 - n : sizeof(sink));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (keep)
			n += (size_t)k;
	}
	msg[n] = '\0';
	close(p[0]);
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -errno;
	/* one line for the error message */
	for (char *c = msg; *c; c++)
		if (*c == '\n')
			*c = ' ';
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int apply_branch(const char *box_dir, const char *project, const char *branch, bool uncommitted, pd_err *err)
{
	_cleanup_free_ char *gitdir = xasprintf("%s/.git", project);
	struct stat st;
	if (stat(gitdir, &st) < 0)
		return pd_error_msg(err, ENOTDIR, "%s is not a git repository", project);
	_cleanup_free_ char *bundle = xasprintf("%s/export.bundle", box_dir);
	_cleanup_close_ int fd = open(bundle, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return pd_error(err, errno, "cannot create %s", bundle);
	pid_t pid = fork();
	if (pid == 0)
		bundle_out(box_dir, uncommitted, fd);
	int w = 0;
	waitpid(pid, &w, 0);
	if (!(WIFEXITED(w) && WEXITSTATUS(w) == 0))
		return pd_error_msg(err, EIO, "cannot export the sandbox's commits (status %d)", WIFEXITED(w) ? WEXITSTATUS(w) : -1);
	_cleanup_free_ char *refspec = xasprintf("refs/paddock/export:refs/heads/%s", branch);
	_cleanup_free_ char *gd = xasprintf("--git-dir=%s", gitdir);
	char *verify[] = {"git", gd, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
			  "bundle", "verify", "-q", bundle, NULL};
	char *fetch[] = {"git", gd, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
			 "-c", "transfer.fsckObjects=true", "fetch", "--no-tags", "--no-write-fetch-head",
			 bundle, refspec, NULL};
	char said[400];
	int r = run_git(verify, said, sizeof(said));
	if (r == 0)
		r = run_git(fetch, said, sizeof(said));
	unlink(bundle);
	if (r != 0) {
		/* git echoes the bundle's own lines, which the box wrote: escaped for the terminal */
		_cleanup_free_ char *shown = ws_escape(said, strlen(said), WS_ESC_CONTENT);
		return pd_error_msg(err, EIO, "git could not take the sandbox's commits into branch '%s' (status %d; "
				    "an existing branch is only fast-forwarded): %s", branch, r, said[0] ? shown : "no reason given");
	}
	printf("branch %s now holds the sandbox's commits (nothing was checked out)\n", branch);
	return 0;
}

char **cli_git_hook_dirs(const char *project)
{
	/* the user's own effective configuration (global and system included: a global
	 * core.hooksPath=.githooks applies to every repository), read by git itself; `config
	 * --get` runs no hook, filter or fsmonitor. No git, no value, no repository: nothing. */
	const char *home = getenv("HOME");
	_cleanup_free_ char *henv = xasprintf("HOME=%s", home && *home ? home : "/nonexistent");
	char *envp[] = {"PATH=/usr/bin:/bin", henv, NULL};
	char *argv[] = {"git", "-C", (char *)project, "-c", "core.fsmonitor=false", "config", "--get", "core.hooksPath", NULL};
	char out[PATH_MAX + 64];
	if (access("/usr/bin/git", X_OK) < 0 || run_git_env(argv, envp, out, sizeof(out)) != 0)
		return NULL;
	size_t n = strlen(out);
	while (n > 0 && (out[n - 1] == ' ' || out[n - 1] == '\n'))
		out[--n] = '\0';
	if (n == 0)
		return NULL;
	_cleanup_free_ char *abs = NULL;
	const char *v = out;
	if (v[0] == '~' && v[1] == '/' && home && *home)
		v = abs = xasprintf("%s/%s", home, v + 2);
	if (v[0] == '/') { /* inside the project or not the box's to write */
		size_t pl = strlen(project);
		if (strncmp(v, project, pl) != 0 || (v[pl] != '/' && v[pl] != '\0'))
			return NULL;
		v += pl;
		while (*v == '/')
			v++;
		if (!*v)
			v = "."; /* the project's root itself: every file is a hook */
	}
	return strv_append(NULL, v);
}
