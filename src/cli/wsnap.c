/* wsnap.c — snapshots of a box's workspace for diff and apply. */
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/session.h"
#include "cli/wsnap.h"
#include "supervisor/supervisor.h"
#include "supervisor/wsbox.h"
#include "util/fdio.h"
#include "proto/tarfmt.h"
#include "proto/wsscan.h"
#include "util/log.h"
#include "workspace/ws_boxscan.h"
#include "workspace/ws_ignore.h"

#define WSNAP_BOX_MANIFEST "box.manifest"
#define WSNAP_BOX_NOTES "box.notes"
#define WSNAP_SAVE_MAX (UINT64_C(8) << 30)

void wsnap_free(struct wsnap *s)
{
	free(s->box_dir);
	free(s->project);
	free(s->box_path);
	ws_manifest_free(&s->base);
	ws_manifest_free(&s->box);
	ws_notes_free(&s->notes);
	if (s->staging_fd >= 0)
		close(s->staging_fd);
	if (s->box_fd >= 0)
		close(s->box_fd);
	*s = (struct wsnap){.staging_fd = -1, .box_fd = -1, .mount = -1};
}

/* names beside the box for the snapshot's target: the workspace's, or mount N's */
static char *snap_file(const struct wsnap *s, const char *what)
{
	return s->mount < 0 ? xstrdup(what) : xasprintf("mount-%d.%s", s->mount, what);
}

#define PATHS_MAX (1u << 20)

int wsnap_save_paths(const struct wsnap *s, char **paths, pd_err *err)
{
	_cleanup_free_ char *name = snap_file(s, "diff-paths");
	if (!paths || !*paths)
		return unlinkat(s->box_fd, name, 0) < 0 && errno != ENOENT ? pd_error(err, errno, "cannot remove %s", name) : 0;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	for (char **p = paths; *p; p++) {
		size_t n = strlen(*p) + 1;
		buf = xrealloc(buf, len + n);
		memcpy(buf + len, *p, n);
		len += n;
	}
	int r = write_file_replace_at(s->box_fd, name, buf, len, 0600, false);
	return r < 0 ? pd_error(err, -r, "cannot save %s", name) : 0;
}

char **wsnap_load_paths(const struct wsnap *s)
{
	_cleanup_free_ char *name = snap_file(s, "diff-paths"), *buf = NULL;
	size_t len = 0;
	if (read_file_at(s->box_fd, name, PATHS_MAX, &buf, &len) < 0 || len == 0)
		return NULL;
	char **v = NULL;
	for (size_t off = 0; off < len; off += strlen(buf + off) + 1)
		v = strv_append(v, buf + off);
	return v;
}

static int open_box(const char *name, const char *mount, struct wsnap *s, struct box_spec *spec, pd_err *err)
{
	*s = (struct wsnap){.staging_fd = -1, .box_fd = -1, .mount = -1};
	int r = cli_box_dir(name, NULL, &s->box_dir, err);
	if (r == 0)
		r = store_load_spec(s->box_dir, spec, err);
	if (r < 0)
		return r;
	s->box_fd = open(s->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (s->box_fd < 0)
		return pd_error(err, errno, "cannot open %s", s->box_dir);
	if (mount) {
		r = wsnap_mount_find(s->box_fd, name, mount, &s->mount, &s->project, err);
		if (r < 0)
			return r;
		s->box_path = xstrdup(mount);
	} else {
		if (!spec->workspace || !streq(spec->workspace, "copy") || !spec->project)
			return pd_error_msg(err, EINVAL,
					    "sandbox '%s' has no copied workspace (it was created with --workspace %s)", name,
					    spec->workspace ? spec->workspace : "none");
		s->project = xstrdup(spec->project);
		s->box_path = xstrdup("/workspace");
	}
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	_cleanup_free_ char *base = s->mount < 0 ? xstrdup(WSBOX_BASE_MANIFEST) : wsnap_mount_manifest(s->mount);
	r = ws_manifest_load(s->box_fd, base, &lim, &s->base, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot read what '%s' received", name);
	return 0;
}

static int open_staging(struct wsnap *s, pd_err *err)
{
	/* a staging directory per target: each snapshot collects what it does not need */
	_cleanup_free_ char *name = snap_file(s, "staging");
	_cleanup_free_ char *dir = xasprintf("%s/%s", s->box_dir, name);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return pd_error(err, errno, "cannot create %s", dir);
	s->staging_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	return s->staging_fd < 0 ? pd_error(err, errno, "cannot open %s", dir) : 0;
}

/* The child: runs argv in the box with in_fd (-1: none) as stdin and its stdout on out_fd.
 * Never returns. */
static _noreturn_ void run_out(const char *box_dir, char **argv, int in_fd, int out_fd)
{
	pd_err err = {0};
	int status = session_run_in(box_dir, argv, in_fd, out_fd, &err);
	if (status < 0)
		pd_err_print(&err);
	_exit(status < 0 ? 125 : status);
}

static struct ws_ignore *host_ignore(const struct wsnap *s)
{
	_cleanup_close_ int root = open(s->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct ws_ignore *ig = NULL;
	/* the host's ignore rules and default exclusions apply on the way back too: a box cannot
	 * plant a .env or a key file the user never gave it. A mount was copied in whole (the user
	 * named it, secrets and all), so only its ignore file applies. */
	if (root >= 0 && ws_ignore_load(root, s->mount < 0, &ig, NULL) < 0)
		ig = NULL;
	return ig;
}

/* Forks a child running argv in the box (stdin in_fd, -1: none) and reads its stdout as a
 * tar stream into ret. */
static int fetch_tar(struct wsnap *s, char **argv, int in_fd, const struct ws_ignore *ig,
		     struct ws_manifest *ret, pd_err *err)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	pid_t pid = fork();
	if (pid == 0) {
		close(p[0]);
		run_out(s->box_dir, argv, in_fd, p[1]);
	}
	close(p[1]);
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_tar_opts o = {.limits = &lim, .staging_fd = s->staging_fd, .base = &s->base, .ignore = ig};
	int r = pid < 0 ? pd_error(err, errno, "cannot fork") : ws_manifest_from_tar(p[0], &o, ret, &s->notes, err);
	close(p[0]);
	int st = 0;
	if (pid > 0 && r < 0)
		kill(pid, SIGKILL);
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (r < 0)
		return r;
	/* tar exits 1 when a file changed while it was read: the stream is still whole */
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1)
		return pd_error_msg(err, EIO, "could not read the workspace (tar status %d)",
				    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	return 0;
}

/* The box's scan session: the ws-scan built-in pauses the box, sends its records on `out`,
 * and keeps the box paused until `hold` is closed. */
struct scan_sess {
	pid_t pid;
	int out, hold;
};

static int scan_start(const char *box_dir, const char *box_path, struct scan_sess *ret, pd_err *err)
{
	int out[2], hold[2];
	if (pipe2(out, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	if (pipe2(hold, O_CLOEXEC) < 0) {
		close(out[0]), close(out[1]);
		return pd_error(err, errno, "cannot create a pipe");
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(out[0]), close(hold[1]);
		char *argv[] = {WSSCAN_BUILTIN, "--freeze", (char *)box_path, NULL};
		run_out(box_dir, argv, hold[0], out[1]);
	}
	int e = errno;
	close(out[1]), close(hold[0]);
	if (pid < 0) {
		close(out[0]), close(hold[1]);
		return pd_error(err, e, "cannot fork");
	}
	*ret = (struct scan_sess){.pid = pid, .out = out[0], .hold = hold[1]};
	return 0;
}

/* Resumes the box (EOF on the built-in's stdin) and reaps the session: its status. */
static int scan_end(struct scan_sess *sc)
{
	if (sc->pid <= 0)
		return 0;
	close(sc->hold);
	char buf[4096];
	while (read(sc->out, buf, sizeof(buf)) > 0)
		; /* nothing is expected after the end record; drained so the session can end */
	close(sc->out);
	int st = 0;
	waitpid(sc->pid, &st, 0);
	sc->pid = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int scan_fail(struct scan_sess *sc, int r, pd_err *err)
{
	int st = scan_end(sc);
	if (st == 3)
		return pd_error_msg(err, EBUSY, "cannot pause the sandbox to read its workspace (see above)");
	if (st == 127 || st == 126) /* an old paddock-init without the built-in */
		return pd_error_msg(err, ENOTSUP, "the sandbox's paddock-init cannot scan its workspace; restart it");
	return r;
}

/* Reads the box's workspace while the box is paused: its scan says what it holds; entries it
 * still holds exactly as copied in are taken from the copy-in manifest; the rest is fetched
 * as one tar stream and hashed here. */
static int snapshot(struct wsnap *s, pd_err *err)
{
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_bscan baseline = {0}, now = {0};
	/* a mount has no baseline (its copy is not scanned at boot): every entry is fetched */
	bool have_base = s->mount < 0 && ws_bscan_load(s->box_fd, WSBOX_BASELINE, &lim, &baseline, NULL) == 0;
	_cleanup_(ws_ignore_freep) struct ws_ignore *ig = host_ignore(s);
	struct ws_bplan plan = {0};
	struct ws_manifest fetched = {0};
	struct scan_sess sc = {0};
	int64_t t0 = mono_ms();
	/* no user session starts while the box is paused for this (STORE_SNAPSHOT_LOCK) */
	_cleanup_close_ _unused_ int lock = store_lock(s->box_dir, STORE_SNAPSHOT_LOCK, true);
	int r = scan_start(s->box_dir, s->box_path, &sc, err);
	if (r == 0 && (r = ws_bscan_read_fd(sc.out, &lim, &now, err)) < 0)
		r = scan_fail(&sc, r, err);
	int64_t t1 = mono_ms();
	if (r == 0)
		ws_bplan_make(&now, have_base ? &baseline : NULL, &s->base, ig, &lim, &plan, &s->notes);
	_cleanup_close_ int list = r == 0 && plan.n_fetch ? memfd_create("paddock-fetch", MFD_CLOEXEC) : -1;
	if (r == 0 && plan.n_fetch) {
		char *argv[] = {WSTAR_BUILTIN, "-c", s->box_path, "--list", NULL};
		if (list < 0 || fd_write_all(list, plan.fetch, plan.fetch_len) < 0 || lseek(list, 0, SEEK_SET) < 0)
			r = pd_error(err, errno, "cannot write the list of entries to fetch");
		if (r == 0)
			r = fetch_tar(s, argv, list, ig, &fetched, err);
	}
	int64_t t2 = mono_ms();
	int st = scan_end(&sc);
	if (r == 0 && st != 0)
		r = pd_error_msg(err, EIO, "the sandbox's workspace scan ended with status %d", st);
	if (r == 0) {
		ws_bplan_refuse_unread(&plan, &fetched);
		ws_bscan_merge(&fetched, &plan.same, &s->box, &s->notes);
		ws_bplan_note_moves(&plan, &s->base, &s->box, &s->notes);
	}
	pd_debug("snapshot: scan %lld ms (%zu entries, baseline %s), fetch %lld ms (%zu entries), %lld ms in all",
		 (long long)(t1 - t0), now.n, have_base ? "yes" : "no", (long long)(t2 - t1), plan.n_fetch,
		 (long long)(mono_ms() - t0));
	ws_manifest_free(&fetched);
	ws_bplan_free(&plan);
	ws_bscan_free(&now);
	ws_bscan_free(&baseline);
	return r;
}

/* A stopped ns box: its copy is the tar its stop saved, fixed until it starts again; read by
 * the same hostile-input reader and under the same ignore rules as a live box's stream. */
static int snapshot_saved(struct wsnap *s, pd_err *err)
{
	_cleanup_close_ int tar = openat(s->box_fd, WSBOX_SAVED_TAR, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (tar < 0)
		return pd_error(err, errno, "cannot open the copy its stop saved");
	_cleanup_(ws_ignore_freep) struct ws_ignore *ig = host_ignore(s);
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_bplan plan = {0};
	struct ws_tar_opts o = {.limits = &lim, .staging_fd = s->staging_fd, .base = &s->base, .ignore = ig,
				.ignored = &plan.ignored};
	int r = ws_manifest_from_tar(tar, &o, &s->box, &s->notes, err);
	if (r == 0)
		ws_bplan_note_moves(&plan, &s->base, &s->box, &s->notes);
	ws_bplan_free(&plan);
	return r;
}

static int cmp_sha(const void *a, const void *b) { return memcmp(a, b, WS_SHA256_LEN); }

/* Removes what the snapshot in s->box does not need from the staging directory (it is kept
 * between snapshots, so content staged before is not written again) and leftover temp files. */
static void staging_gc(struct wsnap *s)
{
	_cleanup_free_ uint8_t(*need)[WS_SHA256_LEN] = xmalloc((s->box.n + 1) * WS_SHA256_LEN);
	size_t n = 0;
	for (size_t i = 0; i < s->box.n; i++)
		if (s->box.v[i].type == WS_FILE)
			memcpy(need[n++], s->box.v[i].sha256, WS_SHA256_LEN);
	qsort(need, n, WS_SHA256_LEN, cmp_sha);
	int dfd = dup(s->staging_fd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	struct dirent *de;
	uint8_t sha[WS_SHA256_LEN];
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (ws_sha256_parse(de->d_name, sha) == 0 && bsearch(sha, need, n, WS_SHA256_LEN, cmp_sha))
			continue;
		unlinkat(s->staging_fd, de->d_name, 0);
	}
	closedir(d);
}

int wsnap_save_base(const struct wsnap *s, const struct ws_manifest *m, pd_err *err)
{
	_cleanup_free_ char *base = s->mount < 0 ? xstrdup(WSBOX_BASE_MANIFEST) : wsnap_mount_manifest(s->mount);
	/* not synced: lost to a crash, the old baseline comes back, and the files this apply
	 * wrote read as host changes — conflicts, never an overwrite */
	return ws_manifest_save_nosync(m, s->box_fd, base, err);
}

int wsnap_forget(const struct wsnap *s)
{
	_cleanup_free_ char *saved = snap_file(s, WSNAP_BOX_MANIFEST), *notes = snap_file(s, WSNAP_BOX_NOTES);
	if ((unlinkat(s->box_fd, saved, 0) < 0 && errno != ENOENT) || (unlinkat(s->box_fd, notes, 0) < 0 && errno != ENOENT))
		return -errno;
	return 0;
}

int wsnap_take(const char *name, const char *mount, struct wsnap *s, pd_err *err)
{
	struct box_spec spec = {0};
	int r = open_box(name, mount, s, &spec, err);
	enum box_status st = r == 0 ? store_status(s->box_dir, NULL) : BOX_STATUS_INVALID;
	/* an ns box's copy outlives a clean stop as the tar the stop saved (a vm box's stays on
	 * its disk, readable only by the guest); a dead box's tar is its last stop's, not its copy */
	bool from_tar = r == 0 && st == BOX_STATUS_STOPPED && s->mount < 0 && spec.backend && streq(spec.backend, "ns") &&
		     faccessat(s->box_fd, WSBOX_SAVED_TAR, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	box_spec_free(&spec);
	if (r == 0 && st != BOX_STATUS_RUNNING && !from_tar)
		r = pd_error_msg(err, ESRCH, "sandbox '%s' is not running; start it with 'paddock start %s'", name, name);
	_cleanup_free_ char *saved = snap_file(s, WSNAP_BOX_MANIFEST), *notes = snap_file(s, WSNAP_BOX_NOTES);
	/* the saved snapshot goes first: its staged content is about to be replaced */
	if (r == 0 && (r = wsnap_forget(s)) < 0)
		pd_error(err, r, "cannot remove the previous snapshot");
	if (r == 0) /* and the paths its diff was limited to: they belong to it */
		r = wsnap_save_paths(s, NULL, err);
	if (r == 0)
		r = open_staging(s, err);
	if (r == 0)
		r = from_tar ? snapshot_saved(s, err) : snapshot(s, err);
	if (r < 0)
		return pd_err_prefix(err, "cannot read %s of '%s'", mount ? mount : "the workspace", name);
	s->taken = time(NULL);
	/* group/other write bits the host did not have do not come out of the box: what diff
	 * shows and apply writes is the limited mode (ws_manifest_limit_modes) */
	mode_t um = umask(022);
	umask(um);
	ws_manifest_limit_modes(&s->box, &s->base, um);
	staging_gc(s);
	/* the notes first: a manifest without them is an older snapshot's, read as having none */
	r = ws_notes_save(&s->notes, s->box_fd, notes, err);
	return r < 0 ? r : ws_manifest_save(&s->box, s->box_fd, saved, err);
}

/* 0, or -1 with errno */
static int fsync_path(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 || fsync(fd) < 0 ? -1 : 0;
}

int wsnap_save_tar(const char *box_dir, pd_err *err)
{
	struct box_spec spec = {0};
	/* only an ns box's copy dies with it: a vm box's stays on its disk (box_boot) */
	if (store_load_spec(box_dir, &spec, NULL) < 0 || !spec.workspace || !streq(spec.workspace, "copy") ||
	    (spec.backend && streq(spec.backend, "vm"))) {
		box_spec_free(&spec);
		return 0;
	}
	box_spec_free(&spec);
	_cleanup_free_ char *tmp = xasprintf("%s/%s.tmp", box_dir, WSBOX_SAVED_TAR);
	_cleanup_free_ char *dst = xasprintf("%s/%s", box_dir, WSBOX_SAVED_TAR);
	/* a save killed half-way (stop interrupted) left its temp file: gone before this one */
	(void)unlink(tmp);
	pid_t parent = getpid();
	int ep[2]; /* the child's error, said once by the caller (a full disk: which file) */
	if (pipe2(ep, O_CLOEXEC) < 0)
		return pd_error(err, errno, "cannot create a pipe");
	pid_t pid = fork();
	if (pid < 0) {
		close(ep[0]), close(ep[1]);
		return pd_error(err, errno, "cannot fork");
	}
	if (pid == 0) {
		close(ep[0]);
		/* it dies with the stop that asked for it (whose rename then never comes) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(125);
		/* the stream is the box's output: bound what it may cost the host's disk */
		struct rlimit rl = {WSNAP_SAVE_MAX, WSNAP_SAVE_MAX};
		setrlimit(RLIMIT_FSIZE, &rl);
		signal(SIGXFSZ, SIG_IGN);
		pd_err e = {0};
		char *argv[] = {WSTAR_BUILTIN, "-c", "/workspace", NULL};
		int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
		int r = fd < 0 ? pd_error(&e, errno, "cannot create it") : session_run_in(box_dir, argv, -1, fd, &e);
		if (r < 0 && write(ep[1], &e, sizeof(e)) < 0)
			_exit(125);
		_exit(r < 0 ? 125 : r);
	}
	close(ep[1]);
	pd_err child = {0};
	bool said = read(ep[0], &child, sizeof(child)) == (ssize_t)sizeof(child);
	close(ep[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		unlink(tmp);
		if (said) {
			*err = child;
			return pd_err_prefix(err, "could not save the workspace to %s before stopping", tmp);
		}
		return pd_error_msg(err, EIO, "could not save the workspace before stopping (status %d)",
				    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	/* the saved copy outlives the box: it and the copy-in manifest it is judged against (an
	 * ns box's was written without a sync, its copy being in memory) reach the disk first */
	_cleanup_free_ char *base = xasprintf("%s/%s", box_dir, WSBOX_BASE_MANIFEST);
	if (fsync_path(tmp) < 0 || (fsync_path(base) < 0 && errno != ENOENT)) {
		int e = errno;
		unlink(tmp);
		return pd_error(err, e, "cannot save %s", dst);
	}
	return rename(tmp, dst) < 0 ? pd_error(err, errno, "cannot save %s", dst) : 0;
}

int wsnap_load(const char *name, const char *mount, struct wsnap *s, pd_err *err)
{
	struct box_spec spec = {0};
	int r = open_box(name, mount, s, &spec, err);
	box_spec_free(&spec);
	if (r < 0)
		return r;
	_cleanup_free_ char *saved = snap_file(s, WSNAP_BOX_MANIFEST);
	struct stat st;
	if (fstatat(s->box_fd, saved, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -ENOENT;
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	r = ws_manifest_load(s->box_fd, saved, &lim, &s->box, err);
	_cleanup_free_ char *notes = snap_file(s, WSNAP_BOX_NOTES);
	if (r == 0 && (r = ws_notes_load(s->box_fd, notes, &s->notes, err)) == -ENOENT)
		r = 0; /* a snapshot saved before notes were */
	if (r == 0)
		r = open_staging(s, err);
	s->taken = st.st_mtime;
	return r;
}

void wsnap_print_notes(const struct ws_notes *n, bool kept_only)
{
	size_t shown = 0, left = n->dropped;
	for (size_t i = 0; i < n->n; i++) {
		if (kept_only && ws_reason_left_out(n->v[i].reason))
			continue;
		if (shown++ >= 20) {
			left++;
			continue;
		}
		/* the name comes from the box: escaped, never raw to the terminal */
		_cleanup_free_ char *name = n->v[i].path ? ws_escape_name(n->v[i].path) : NULL;
		const char *detail = n->v[i].detail ? n->v[i].detail : ws_reason_left_out(n->v[i].reason) ? "left out" : NULL;
		fprintf(stderr, "paddock: note: %s%s%s%s%s\n", name ? name : "", name ? ": " : "",
			ws_reason_str(n->v[i].reason), detail ? ": " : "", detail ? detail : "");
	}
	if (left && !kept_only)
		fprintf(stderr, "paddock: note: … and %zu more\n", left);
}

static bool has_under(const struct ws_manifest *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (ws_path_under(m->v[i].path, path))
			return true;
	return false;
}

int wsnap_paths(const struct wsnap *s, char *const *paths, char ***ret, pd_err *err)
{
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	_cleanup_strv_ char **out = NULL;
	*ret = NULL;
	for (char *const *p = paths; p && *p; p++) {
		const char *rel = *p;
		if (rel[0] == '/') {
			const char *roots[] = {s->project, s->box_path};
			rel = NULL;
			for (size_t i = 0; i < ARRAY_SIZE(roots) && !rel; i++)
				if (roots[i] && ws_path_under(*p + 1, roots[i] + 1))
					rel = *p + strlen(roots[i]) + ((*p)[strlen(roots[i])] == '/');
			if (!rel)
				return pd_error_msg(err, EINVAL, "%s: not inside the project (%s) or the box's copy (%s)", *p,
						    s->project, s->box_path);
		}
		char *norm = NULL;
		enum ws_reason why = *rel ? ws_path_normalize(rel, &lim, &norm) : WS_R_ROOT;
		if (why == WS_R_ROOT) /* the whole tree: no filter */
			return 0;
		if (why != WS_OK)
			return pd_error_msg(err, EINVAL, "%s: %s", *p, ws_reason_str(why));
		if (!has_under(&s->box, norm) && !has_under(&s->base, norm)) {
			_cleanup_free_ char *shown = ws_escape_name(*p);
			free(norm);
			return pd_error_msg(err, ENOENT, "%s: no such path in the sandbox's workspace or its copy-in", shown);
		}
		out = strv_append(out, norm);
		free(norm);
	}
	*ret = TAKE_PTR(out);
	return 0;
}
