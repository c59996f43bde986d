/* wsnap.c — snapshots of a box's workspace for diff and apply. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/wsnap.h"
#include "supervisor/supervisor.h"
#include "supervisor/wsbox.h"
#include "util/fdio.h"
#include "workspace/ws_ignore.h"

#define WSNAP_BOX_MANIFEST "box.manifest"
#define WSNAP_SAVE_MAX (UINT64_C(8) << 30)

void wsnap_free(struct wsnap *s)
{
	free(s->box_dir);
	free(s->project);
	ws_manifest_free(&s->base);
	ws_manifest_free(&s->box);
	ws_notes_free(&s->notes);
	if (s->staging_fd >= 0)
		close(s->staging_fd);
	*s = (struct wsnap){.staging_fd = -1};
}

static int open_box(const char *name, struct wsnap *s, struct box_spec *spec, pd_err *err)
{
	*s = (struct wsnap){.staging_fd = -1};
	int r = cli_box_dir(name, NULL, &s->box_dir, err);
	if (r == 0)
		r = store_load_spec(s->box_dir, spec, err);
	if (r < 0)
		return r;
	if (!spec->workspace || !streq(spec->workspace, "copy") || !spec->project)
		return pd_error_msg(err, EINVAL, "sandbox '%s' has no copied workspace (it was created with --workspace %s)",
				    name, spec->workspace ? spec->workspace : "none");
	s->project = xstrdup(spec->project);
	_cleanup_close_ int dfd = open(s->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	r = dfd < 0 ? -errno : ws_manifest_load(dfd, WSBOX_BASE_MANIFEST, &lim, &s->base, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot read what '%s' received", name);
	return 0;
}

static int open_staging(struct wsnap *s, bool fresh, pd_err *err)
{
	_cleanup_free_ char *dir = xasprintf("%s/staging", s->box_dir);
	if (fresh)
		rm_rf(dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return pd_error(err, errno, "cannot create %s", dir);
	s->staging_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return s->staging_fd < 0 ? pd_error(err, errno, "cannot open %s", dir) : 0;
}

/* The child: runs `tar -c` in the box with its stdout on out_fd. Never returns. */
static _noreturn_ void tar_out(const char *box_dir, int out_fd)
{
	pd_err err = {0};
	char *argv[] = {"tar", "-c", "-f", "-", "-C", "/workspace", "--format=pax", ".", NULL};
	int status = session_run_in(box_dir, argv, -1, out_fd, &err);
	if (status < 0)
		pd_err_print(&err);
	_exit(status < 0 ? 125 : status);
}

static int ingest(struct wsnap *s, int in_fd, pd_err *err)
{
	_cleanup_close_ int root = open(s->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct ws_ignore *ig = NULL;
	/* the host's ignore rules and default exclusions apply on the way back too: a box cannot
	 * plant a .env or a key file the user never gave it */
	if (root >= 0 && ws_ignore_load(root, true, &ig, NULL) < 0)
		ig = NULL;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_tar_opts o = {.limits = &lim, .staging_fd = s->staging_fd, .base = &s->base, .ignore = ig};
	int r = ws_manifest_from_tar(in_fd, &o, &s->box, &s->notes, err);
	ws_ignore_free(ig);
	return r;
}

int wsnap_take(const char *name, struct wsnap *s, pd_err *err)
{
	struct box_spec spec = {0};
	int r = open_box(name, s, &spec, err);
	box_spec_free(&spec);
	if (r == 0 && store_status(s->box_dir, NULL) != BOX_STATUS_RUNNING)
		r = pd_error_msg(err, ESRCH, "sandbox '%s' is not running; start it with 'paddock start %s'", name, name);
	if (r == 0)
		r = open_staging(s, true, err);
	if (r < 0)
		return r;
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		tar_out(s->box_dir, p[1]);
	}
	close(p[1]);
	r = pid < 0 ? pd_error(err, errno, "cannot fork") : ingest(s, p[0], err);
	close(p[0]);
	int st = 0;
	if (pid > 0 && r < 0)
		kill(pid, SIGKILL);
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (r < 0)
		return r;
	/* tar exits 1 when a file changed while it was read: the snapshot is still whole */
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return pd_error_msg(err, EIO, "could not read the workspace of '%s' (tar status %d)", name,
				    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	s->taken = time(NULL);
	_cleanup_close_ int dfd = open(s->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return ws_manifest_save(&s->box, dfd, WSNAP_BOX_MANIFEST, err);
}

int wsnap_save_tar(const char *box_dir, pd_err *err)
{
	struct box_spec spec = {0};
	if (store_load_spec(box_dir, &spec, NULL) < 0 || !spec.workspace || !streq(spec.workspace, "copy")) {
		box_spec_free(&spec);
		return 0;
	}
	box_spec_free(&spec);
	_cleanup_free_ char *tmp = xasprintf("%s/%s.tmp", box_dir, WSBOX_SAVED_TAR);
	_cleanup_free_ char *dst = xasprintf("%s/%s", box_dir, WSBOX_SAVED_TAR);
	pid_t pid = fork();
	if (pid < 0)
		return pd_error(err, errno, "cannot fork");
	if (pid == 0) {
		/* the stream is the box's output: bound what it may cost the host's disk */
		struct rlimit rl = {WSNAP_SAVE_MAX, WSNAP_SAVE_MAX};
		setrlimit(RLIMIT_FSIZE, &rl);
		signal(SIGXFSZ, SIG_IGN);
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			_exit(125);
		tar_out(box_dir, fd);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		unlink(tmp);
		return pd_error_msg(err, EIO, "could not save the workspace before stopping (status %d)",
				    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	return rename(tmp, dst) < 0 ? pd_error(err, errno, "cannot save %s", dst) : 0;
}

int wsnap_load(const char *name, struct wsnap *s, pd_err *err)
{
	struct box_spec spec = {0};
	int r = open_box(name, s, &spec, err);
	box_spec_free(&spec);
	if (r < 0)
		return r;
	_cleanup_close_ int dfd = open(s->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (fstatat(dfd, WSNAP_BOX_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	r = ws_manifest_load(dfd, WSNAP_BOX_MANIFEST, &lim, &s->box, err);
	if (r == 0)
		r = open_staging(s, false, err);
	s->taken = st.st_mtime;
	return r;
}
