/* ws_apply.c — apply a box's changes to the host tree (see ws_apply.h for the rules).
 *
 * The plan is the diff of the copy-in manifest against the box manifest diff showed. It runs
 * in two passes: removals (deleted entries, the old side of renames and type changes),
 * deepest path first so directories are empty when their turn comes; then creations and
 * updates in path order, parents first. Each entry is decided against the host as it is
 * now: equal to the box's version -> already applied; equal to the base -> go; anything
 * else -> conflict. All host access goes through ws_open_beneath() and ws_host_*(). */
#include <fcntl.h>
#include <pthread.h>
#include <sys/file.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "ws_apply.h"
#include "ws_host.h"
#include "util/fdio.h"

struct apply {
	int rootfd;
	const struct ws_manifest *box;
	int staging_fd;
	const struct ws_apply_opts *o;
	struct ws_diff diff;
	enum ws_result *res; /* per delta; PENDING until decided */
	int *errs;
	const char **detail;
	bool *removed;       /* removal pass took the base side away (or found it gone) */
	bool *changed_a;     /* the removal pass really removed something */
	char **sync_dirs;
	struct staged *batch; /* temp files written, renames pending */
	size_t nbatch, batch_cap;
	size_t ticks, n_work; /* progress */
};

/* A temp file complete in its host directory, waiting for its rename. */
struct staged {
	size_t i;
	int dirfd;
	const char *name; /* last component of the box entry's path */
	struct ws_host h; /* what the name held when we decided */
	int tmpfd;        /* the temp file (-1 for a symlink) */
	int sync_err;     /* errno of its fsync (flush_batch runs them in parallel) */
	char tmp[WS_TMP_NAME_MAX];
};

/* Temp files written before their fsyncs and renames, each holding two fds (its own and its
 * directory's): every batch is a round of fsyncs, each round a journal commit on ext4 — four
 * rounds for 500 files at 128 cost ~0.6 s of a 1 s apply on a virtual disk. As large as the
 * fd limit allows (raised towards its hard limit for the apply). */
#define BATCH_LOW 16
#define BATCH_MAX 1024
#define BATCH_FD_RESERVE 256
#define SYNC_THREADS 8 /* fsyncs in flight besides the main thread */

const char *ws_result_str(enum ws_result r)
{
	static const char *const names[WS_RESULT_MAX] = {
		[WS_RESULT_PENDING] = "pending", [WS_APPLIED] = "applied", [WS_ALREADY] = "already applied",
		[WS_SKIPPED_EXEC] = "skipped (host-executing path)", [WS_CONFLICT] = "conflict",
		[WS_REFUSED_ENTRY] = "refused", [WS_FAILED] = "failed",
	};
	return r >= 0 && r < WS_RESULT_MAX ? names[r] : "invalid";
}

static void hook(struct apply *a, enum ws_apply_phase p, const char *path, int dirfd)
{
	if (a->o->hook)
		a->o->hook(a->o->hook_ud, p, path, dirfd);
}

static enum ws_result set(struct apply *a, size_t i, enum ws_result r, int err, const char *detail)
{
	a->res[i] = r;
	a->errs[i] = err < 0 ? -err : err;
	a->detail[i] = detail;
	return r;
}

/* Maps a host-side error to a verdict. */
static enum ws_result host_error(struct apply *a, size_t i, int r)
{
	switch (r) {
	case -ELOOP:
		return set(a, i, WS_REFUSED_ENTRY, r, "a host path component is a symlink");
	case -ENOTDIR:
		return set(a, i, WS_CONFLICT, r, "a host path component is not a directory");
	case -ESTALE:
		return set(a, i, WS_CONFLICT, r, "the host entry changed during apply");
	case -ENOTEMPTY:
	case -EEXIST:
		return set(a, i, WS_CONFLICT, r, "the host has other entries in the way");
	case -EBADMSG:
		return set(a, i, WS_FAILED, r, "staged content does not match the manifest");
	case -ENOEXEC:
		return set(a, i, WS_SKIPPED_EXEC, 0, "inside a host-executing directory not named with --allow-exec-paths");
	default:
		return set(a, i, WS_FAILED, r, NULL);
	}
}

static void remember_dir(struct apply *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	_cleanup_free_ char *dir = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
	size_t n = strv_len(a->sync_dirs);
	if (n == 0 || !streq(a->sync_dirs[n - 1], dir))
		a->sync_dirs = strv_append(a->sync_dirs, dir);
}

static bool under_allowed(const struct apply *a, const char *path)
{
	for (char *const *p = a->o->allow_exec; p && *p; p++)
		if (ws_path_under(path, *p))
			return true;
	return false;
}

/* A flagged delta goes ahead only when every side of it that is a host-executing path was
 * named with --allow-exec-paths: the box side (what would be written) by its own name or
 * contents, the base side (what would go) by name. A rename of tools/deploy.sh to
 * .git/hooks/pre-commit is not allowed by naming tools. */
static bool allowed(const struct apply *a, const struct ws_delta *d)
{
	bool box_flagged = d->box && d->box->type != WS_REFUSED && ws_manifest_exec(a->box, d->box, a->staging_fd) != WS_EXEC_NONE;
	bool base_flagged = d->base && (d->kind == WS_CHG_DELETED || d->kind == WS_CHG_RENAMED || d->kind == WS_CHG_TYPE) &&
			    ws_path_exec_class(d->base->path, d->base->type == WS_DIR) != WS_EXEC_NONE;
	if (!box_flagged && !base_flagged) /* flagged by a rule neither side shows alone: both must be named */
		box_flagged = d->box != NULL, base_flagged = d->base != NULL;
	return (!box_flagged || under_allowed(a, d->box->path)) && (!base_flagged || under_allowed(a, d->base->path));
}

/* Opens one component below cur, creating it when the box has a directory there (on the way
 * to path). */
static int step_create(struct apply *a, int cur, const char *comp, const char *prefix, const char *path)
{
	int fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	if (errno != ENOENT) {
		int err = errno;
		struct stat st;
		if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
			return -ELOOP;
		return -err;
	}
	const struct ws_entry *e = ws_manifest_find(a->box, prefix);
	if (!e || e->type != WS_DIR || a->o->dry_run)
		return -ENOENT;
	/* a directory that is itself a host-executing path (.git/hooks, .devcontainer) is made
	 * only on the way to an entry named with --allow-exec-paths, or when named itself */
	if (ws_manifest_exec(a->box, e, a->staging_fd) != WS_EXEC_NONE && !under_allowed(a, prefix) &&
	    !under_allowed(a, path))
		return -ENOEXEC;
	int r = ws_host_mkdir(cur, comp);
	if (r < 0 && r != -EEXIST)
		return r;
	fd = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd >= 0 ? fd : -errno;
}

/* The parent of path, created (0755, one verified component at a time) where missing. */
static int make_parents(struct apply *a, const char *path, int *ret_fd)
{
	_cleanup_free_ char *p = xstrdup(path);
	char *slash = strrchr(p, '/');
	_cleanup_close_ int cur = openat(a->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cur < 0)
		return -errno;
	for (char *s = p; slash && s <= slash;) {
		char *e = strchr(s, '/');
		*e = '\0';
		int next = step_create(a, cur, s, p, path);
		if (next < 0)
			return next;
		close(cur);
		cur = next;
		*e = '/';
		s = e + 1;
	}
	*ret_fd = TAKE_FD(cur);
	return 0;
}

static int open_parent(struct apply *a, const char *path, bool create, int *ret_fd, const char **ret_name)
{
	int r = ws_open_parent(a->rootfd, path, ret_fd, ret_name);
	if (r != -ENOENT || !create)
		return r;
	const char *slash = strrchr(path, '/');
	r = make_parents(a, path, ret_fd);
	if (r == 0)
		*ret_name = slash ? slash + 1 : path;
	return r;
}

/* Removal pass, one delta: the base side goes if the host still has exactly it. */
static void remove_base(struct apply *a, size_t i)
{
	const struct ws_delta *d = &a->diff.v[i];
	_cleanup_close_ int dirfd = -1;
	const char *name;
	int r = open_parent(a, d->base->path, false, &dirfd, &name);
	if (r == -ENOENT || r == -ENOTDIR) { /* no directory there any more: no entry either */
		a->removed[i] = true;
		return;
	}
	struct ws_host h = {0};
	if (r < 0 || (r = ws_host_stat(dirfd, name, &h)) < 0) {
		host_error(a, i, r);
		return;
	}
	if (d->kind == WS_CHG_TYPE && ws_host_matches(dirfd, name, &h, d->box, true))
		set(a, i, WS_ALREADY, 0, NULL); /* a re-run: the new type is already there */
	else if (h.kind == WS_TYPE_INVALID)
		a->removed[i] = true;
	else if (!ws_host_matches(dirfd, name, &h, d->base, true) && !(a->o->force && h.kind != WS_DIR))
		set(a, i, WS_CONFLICT, 0, "the host entry changed since copy-in");
	else
		r = 1;
	if (r == 1) {
		hook(a, WS_PHASE_RESOLVED, d->base->path, dirfd);
		r = a->o->dry_run ? 0 : ws_host_remove(dirfd, name, &h);
		if (r < 0) {
			host_error(a, i, r);
		} else {
			a->removed[i] = a->changed_a[i] = true;
			remember_dir(a, d->base->path);
			hook(a, WS_PHASE_DONE, d->base->path, dirfd);
		}
	}
	ws_host_free(&h);
}

/* Writes the temp file of a file, symlink or mode change (fsync comes with the batch). */
static int stage_entry(struct apply *a, const struct ws_delta *d, int dirfd, const char *name,
		       struct ws_host *h, struct staged *s)
{
	const struct ws_entry *y = d->box;
	s->tmpfd = -1;
	if (y->type == WS_FILE && d->kind == WS_CHG_MODE && h->kind == WS_FILE)
		return ws_host_stage_copy(dirfd, name, h, y, s->tmp, &s->tmpfd);
	if (y->type == WS_FILE)
		return ws_host_stage_file(dirfd, a->staging_fd, y, s->tmp, &s->tmpfd);
	return ws_host_stage_symlink(dirfd, y->target, s->tmp);
}

static void done(struct apply *a, size_t i, int dirfd)
{
	set(a, i, WS_APPLIED, 0, NULL);
	remember_dir(a, a->diff.v[i].box->path);
	hook(a, WS_PHASE_DONE, a->diff.v[i].box->path, dirfd);
}

/* fsync, then rename the temp file over its name if the name still holds what we decided
 * on: the new content is durable before it becomes visible, so an interruption at any
 * point leaves each host file old or new. */
static void commit_one(struct apply *a, struct staged *s)
{
	hook(a, WS_PHASE_STAGED, a->diff.v[s->i].box->path, s->dirfd);
	int r = 0;
	if (s->sync_err)
		r = -s->sync_err;
	else if (!ws_host_unchanged(s->dirfd, s->name, &s->h))
		r = -ESTALE;
	if (r < 0)
		ws_host_discard(s->dirfd, s->tmp);
	else
		r = ws_host_commit(s->dirfd, s->tmp, s->name);
	if (r < 0)
		host_error(a, s->i, r);
	else
		done(a, s->i, s->dirfd);
	if (s->tmpfd >= 0)
		close(s->tmpfd);
	close(s->dirfd);
	ws_host_free(&s->h);
}

/* The temp files of a batch are all written (writeback started) before the first fsync:
 * the first one commits the journal for all of them, the rest mostly wait for nothing. */
struct sync_job {
	struct staged *v;
	size_t n;
	atomic_size_t next;
};

static void *sync_worker(void *p)
{
	struct sync_job *j = p;
	for (size_t k; (k = atomic_fetch_add(&j->next, 1)) < j->n;)
		if (j->v[k].tmpfd >= 0)
			j->v[k].sync_err = fsync(j->v[k].tmpfd) < 0 ? errno : 0;
	return NULL;
}

/* The batch's fsyncs, several at a time: on a filesystem without a journal (or a slow disk)
 * each one is its own synchronous write, and a queue of them is far faster than a line.
 * Nothing is renamed before its own fsync has returned, so crash safety is unchanged. */
static void run_sync_job(struct sync_job *j)
{
	pthread_t t[SYNC_THREADS];
	size_t started = 0;
	for (; started < SYNC_THREADS && started + 1 < j->n; started++)
		if (pthread_create(&t[started], NULL, sync_worker, j) != 0)
			break;
	sync_worker(j); /* this thread too, and alone when no thread could start */
	for (size_t k = 0; k < started; k++)
		pthread_join(t[k], NULL);
}

static void sync_batch(struct apply *a)
{
	struct sync_job j = {.v = a->batch, .n = a->nbatch};
	if (!a->o->no_sync)
		run_sync_job(&j);
}

static void flush_batch(struct apply *a)
{
	sync_batch(a);
	for (size_t k = 0; k < a->nbatch; k++)
		commit_one(a, &a->batch[k]);
	a->nbatch = 0;
}

/* Directories are made at once (later entries may need them); the rest is batched. */
static void write_entry(struct apply *a, size_t i, int *dirfd, const char *name, struct ws_host *h)
{
	const struct ws_delta *d = &a->diff.v[i];
	if (d->box->type == WS_DIR) {
		int r = ws_host_mkdir(*dirfd, name);
		r < 0 ? (void)host_error(a, i, r) : done(a, i, *dirfd);
		return;
	}
	struct staged *s = &a->batch[a->nbatch];
	int r = stage_entry(a, d, *dirfd, name, h, s);
	if (r < 0) {
		host_error(a, i, r);
		return;
	}
	s->i = i;
	s->sync_err = 0;
	s->dirfd = TAKE_FD(*dirfd);
	s->name = name;
	s->h = *h;
	*h = (struct ws_host){0};
	if (++a->nbatch == a->batch_cap)
		flush_batch(a);
}

/* Decides a creation against the host: 1 to write, else the verdict is set. */
static int decide(struct apply *a, size_t i, int dirfd, const char *name, struct ws_host *h)
{
	const struct ws_delta *d = &a->diff.v[i];
	bool same_path = d->kind != WS_CHG_ADDED && d->kind != WS_CHG_RENAMED;
	const struct ws_entry *expect = same_path && !a->removed[i] ? d->base : NULL;
	if (a->o->dry_run && same_path && a->removed[i])
		return 1; /* a dry run removed nothing: the old entry is still there */
	if (ws_host_matches(dirfd, name, h, d->box, true))
		return set(a, i, WS_ALREADY, 0, NULL), 0;
	/* the host entry as copied in, mode included: a chmod on the host is a change too */
	if (ws_host_matches(dirfd, name, h, expect, true))
		return 1;
	/* a mode-only change carries no content of its own (the copy-in's, not staged): there is
	 * nothing to force over a host file whose content moved on */
	if (a->o->force && d->kind == WS_CHG_MODE)
		return set(a, i, WS_CONFLICT, 0, "the host entry changed since copy-in and the box changed only its "
						 "mode: nothing to force (chmod it on the host)"), 0;
	if (a->o->force && h->kind != WS_DIR && d->box->type != WS_DIR)
		return 1;
	/* nothing was there at copy-in (an added or renamed entry; every entry of a cp): the host's
	 * own file is in the way, which --force replaces */
	set(a, i, WS_CONFLICT, 0, h->kind == WS_DIR ? "a host directory is in the way"
				  : expect ? "the host entry changed since copy-in"
					   : "a host entry is in the way (--force replaces it)");
	return 0;
}

/* Whether this apply removes (or, in a dry run, would remove) an entry above path. */
static bool ancestor_removed(const struct apply *a, const char *path)
{
	for (size_t j = 0; j < a->diff.n; j++) {
		const struct ws_entry *b = a->diff.v[j].base;
		if (a->removed[j] && b && !streq(b->path, path) && ws_path_under(path, b->path))
			return true;
	}
	return false;
}

static void create_box(struct apply *a, size_t i)
{
	const struct ws_delta *d = &a->diff.v[i];
	const struct ws_entry *y = d->box;
	enum ws_reason why = y->type == WS_SYMLINK ? ws_symlink_check(y->path, y->target, &WS_LIMITS_DEFAULT) : WS_OK;
	if (why != WS_OK && !(d->base && d->base->type == WS_SYMLINK && streq(d->base->target, y->target))) {
		set(a, i, WS_REFUSED_ENTRY, 0, ws_reason_str(why));
		return;
	}
	_cleanup_close_ int dirfd = -1;
	const char *name;
	int r = open_parent(a, y->path, true, &dirfd, &name);
	/* a dry run creates no directory and removes nothing: a parent still missing, or still
	 * the file or symlink this apply would replace, is what the real run gets past */
	if (a->o->dry_run && (r == -ENOENT || ((r == -ENOTDIR || r == -ELOOP) && ancestor_removed(a, y->path)))) {
		set(a, i, WS_APPLIED, 0, NULL);
		return;
	}
	struct ws_host h = {0};
	if (r < 0 || (r = ws_host_stat(dirfd, name, &h)) < 0) {
		host_error(a, i, r);
		return;
	}
	if (decide(a, i, dirfd, name, &h) == 1) {
		hook(a, WS_PHASE_RESOLVED, y->path, dirfd);
		if (a->o->dry_run)
			set(a, i, WS_APPLIED, 0, NULL);
		else
			write_entry(a, i, &dirfd, name, &h);
	}
	ws_host_free(&h);
}

static bool has_removal(enum ws_change k)
{
	return k == WS_CHG_DELETED || k == WS_CHG_RENAMED || k == WS_CHG_TYPE;
}

/* Refused entries and host-executing paths are decided before anything is touched. */
static void prefilter(struct apply *a, bool *selected)
{
	for (size_t i = 0; i < a->diff.n; i++) {
		const struct ws_delta *d = &a->diff.v[i];
		selected[i] = ws_delta_selected(d, a->o->paths);
		if (!selected[i])
			continue;
		if (d->kind == WS_CHG_REFUSED)
			set(a, i, WS_REFUSED_ENTRY, 0, ws_reason_str(d->refused));
		else if (d->exec != WS_EXEC_NONE && !allowed(a, d))
			set(a, i, WS_SKIPPED_EXEC, 0, ws_exec_str(d->exec));
	}
}

struct removal {
	const char *path;
	size_t i;
};

static int cmp_removal(const void *x, const void *y)
{
	return strcmp(((const struct removal *)y)->path, ((const struct removal *)x)->path);
}

static void tick(struct apply *a)
{
	if (a->o->progress)
		a->o->progress(a->o->progress_ud, ++a->ticks, a->n_work);
}

/* Deepest first (reverse path order), so directories are empty when their turn comes. */
static void removal_pass(struct apply *a, const bool *selected)
{
	_cleanup_free_ struct removal *v = xcalloc(a->diff.n, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; i < a->diff.n; i++)
		if (selected[i] && a->res[i] == WS_RESULT_PENDING && has_removal(a->diff.v[i].kind))
			v[n++] = (struct removal){a->diff.v[i].base->path, i};
	qsort(v, n, sizeof(*v), cmp_removal);
	for (size_t k = 0; k < n; k++) {
		remove_base(a, v[k].i);
		tick(a);
	}
}

static void creation_pass(struct apply *a, const bool *selected)
{
	for (size_t i = 0; i < a->diff.n; i++) {
		if (!selected[i] || a->res[i] != WS_RESULT_PENDING)
			continue;
		if (a->diff.v[i].kind != WS_CHG_DELETED)
			create_box(a, i);
		else
			set(a, i, a->changed_a[i] ? WS_APPLIED : WS_ALREADY, 0, NULL);
		tick(a);
	}
	flush_batch(a);
	for (size_t i = 0; i < a->diff.n; i++)
		if (a->res[i] == WS_ALREADY && a->changed_a[i])
			a->res[i] = WS_APPLIED; /* half of it was done now */
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The renames and removals are durable once their directories are synced (after the
 * first, the journal is usually committed and the others are cheap). */
static void sync_dirs(struct apply *a)
{
	size_t n = strv_len(a->sync_dirs);
	if (n > 1)
		qsort(a->sync_dirs, n, sizeof(char *), cmp_str);
	/* opened one by one beneath the root, then fsynced several at a time like the files */
	_cleanup_free_ struct staged *v = xcalloc(n ? n : 1, sizeof(*v));
	size_t m = 0;
	for (size_t k = 0; k < n; k++) {
		if (k > 0 && streq(a->sync_dirs[k], a->sync_dirs[k - 1]))
			continue;
		int fd = -1;
		if (ws_open_beneath(a->rootfd, a->sync_dirs[k], O_RDONLY | O_DIRECTORY, &fd) == 0)
			v[m++].tmpfd = fd;
	}
	struct sync_job j = {.v = v, .n = m};
	run_sync_job(&j);
	for (size_t k = 0; k < m; k++)
		close(v[k].tmpfd);
}

static void report_add(struct ws_apply_report *r, const struct ws_apply_item *it)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 32;
		r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
	}
	r->v[r->n] = *it;
	r->v[r->n++].path = xstrdup(it->path);
	r->count[it->result]++;
}

static void build_report(struct apply *a, const bool *selected, struct ws_apply_report *r)
{
	for (size_t i = 0; i < a->diff.n; i++) {
		const struct ws_delta *d = &a->diff.v[i];
		if (!selected[i])
			continue;
		report_add(r, &(struct ws_apply_item){
			.path = (char *)ws_delta_path(d), .change = d->kind, .result = a->res[i],
			.reason = d->kind == WS_CHG_REFUSED ? d->refused : WS_OK,
			.err = a->errs[i], .detail = a->detail[i],
		});
	}
}

/* The new baseline (ws_apply_opts.ret_base): base less the base side of every delta now on
 * the host, plus their box side. Deltas point into base and box (ws_diff_compute). */
static void new_base(const struct apply *a, const struct ws_manifest *base, struct ws_manifest *ret)
{
	_cleanup_free_ bool *gone = xcalloc(base->n ? base->n : 1, sizeof(bool));
	*ret = (struct ws_manifest){0};
	for (size_t i = 0; i < a->diff.n; i++) {
		const struct ws_delta *d = &a->diff.v[i];
		if ((a->res[i] != WS_APPLIED && a->res[i] != WS_ALREADY) || d->kind == WS_CHG_REFUSED)
			continue;
		if (d->base)
			gone[d->base - base->v] = true;
		if (d->box)
			ws_manifest_add(ret, d->box);
	}
	for (size_t k = 0; k < base->n; k++)
		if (!gone[k])
			ws_manifest_add(ret, &base->v[k]);
	ws_manifest_sort(ret);
}

/* The batch size, after raising the soft fd limit towards what BATCH_MAX needs (never past
 * the hard limit); *ret_raised_from is the limit to restore when it was raised. */
static size_t batch_capacity(struct rlimit *ret_raised_from, bool *ret_raised)
{
	size_t want = 2 * BATCH_MAX + BATCH_FD_RESERVE;
	struct rlimit now;
	*ret_raised = false;
	if (getrlimit(RLIMIT_NOFILE, &now) < 0)
		return BATCH_LOW;
	if (now.rlim_cur < want && now.rlim_cur < now.rlim_max) {
		struct rlimit more = {now.rlim_max < want ? now.rlim_max : want, now.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &more) == 0) {
			*ret_raised_from = now;
			*ret_raised = true;
			now = more;
		}
	}
	/* a limit too low for even the reserve: small batches (and an fd that cannot be had
	 * fails its entry, reported) */
	size_t cap = now.rlim_cur > BATCH_FD_RESERVE + 2 * BATCH_LOW ? (now.rlim_cur - BATCH_FD_RESERVE) / 2 : BATCH_LOW;
	return cap > BATCH_MAX ? BATCH_MAX : cap;
}

static void run(struct apply *a, const struct ws_manifest *base, struct ws_apply_report *rep)
{
	size_t n = a->diff.n;
	_cleanup_free_ bool *selected = xcalloc(n, sizeof(bool));
	a->res = xcalloc(n, sizeof(*a->res));
	a->errs = xcalloc(n, sizeof(int));
	a->detail = xcalloc(n, sizeof(char *));
	a->removed = xcalloc(n, sizeof(bool));
	a->changed_a = xcalloc(n, sizeof(bool));
	struct rlimit fd_limit;
	bool raised;
	a->batch_cap = batch_capacity(&fd_limit, &raised);
	a->batch = xcalloc(a->batch_cap, sizeof(*a->batch));
	prefilter(a, selected);
	for (size_t i = 0; i < n; i++) /* each selected entry ticks once per pass it is in */
		if (selected[i] && a->res[i] == WS_RESULT_PENDING)
			a->n_work += 1 + has_removal(a->diff.v[i].kind);
	removal_pass(a, selected);
	creation_pass(a, selected);
	if (!a->o->dry_run && !a->o->no_sync)
		sync_dirs(a);
	build_report(a, selected, rep);
	if (a->o->ret_base && !a->o->dry_run)
		new_base(a, base, a->o->ret_base);
	free(a->res);
	free(a->errs);
	free(a->detail);
	free(a->removed);
	free(a->changed_a);
	free(a->batch);
	strv_free(a->sync_dirs);
	if (raised) /* every temp file is closed by now */
		(void)setrlimit(RLIMIT_NOFILE, &fd_limit);
}

/* The apply journal. Temp files land in the user's tree, and only a crash leaves them there;
 * walking a whole project (or a home directory, for `cp`) at every apply to find them costs
 * a getdents per directory. So an apply first writes a marker named after the host tree's
 * root (device and inode) into journal_dir, durable before its first temp file exists, and
 * removes it when it is over: a marker found at the start means an apply of this tree was
 * interrupted, and only then is the tree walked. A marker that cannot be read or written
 * fails towards the walk (or the apply), never towards skipping it. */
static char *journal_path(const char *dir, int rootfd)
{
	struct stat st;
	if (fstat(rootfd, &st) < 0)
		return NULL;
	return xasprintf("%s/apply-%llx-%llx", dir, (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
}

static int journal_mark(const char *dir, const char *path, bool sync)
{
	int r = mkdir_p(dir, 0700);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if (sync && (fsync(fd) < 0 || fsync(dfd) < 0))
		return -errno;
	return 0;
}

#define WS_APPLY_MAX_LOCK_DEPTH 256

/* The locks of one apply: the tree's own directory and the directories above it. */
struct tree_locks {
	int fd[WS_APPLY_MAX_LOCK_DEPTH + 1];
	size_t n;
};

static void tree_locks_release(struct tree_locks *l)
{
	for (size_t i = 0; i < l->n; i++)
		close(l->fd[i]);
	l->n = 0;
}

static int lock_wait(int fd, int op, const struct ws_apply_opts *o, const char *host_root, bool *told)
{
	if (flock(fd, op | LOCK_NB) == 0)
		return 0;
	if (errno != EWOULDBLOCK)
		return -errno;
	if (o->waiting && !*told)
		o->waiting(host_root);
	*told = true;
	int r;
	while ((r = flock(fd, op)) < 0 && errno == EINTR)
		;
	return r < 0 ? -errno : 0;
}

/* One apply at a time per host tree, nested trees included: two at once took each other's
 * temp files for an interrupted apply's leftovers and removed them mid-write, and an apply to
 * /p and one to /p/sub would each check a file under /p/sub and then both write it. An apply
 * holds LOCK_EX on its tree's directory and LOCK_SH on every directory above it that it can
 * open (up to /): applies to the same or to nested trees exclude each other, to sibling trees
 * they do not. Taken from the top down, one order for every apply, so two cannot deadlock.
 * Advisory locks on the directories' own inodes (the physical path, whatever symlink the user
 * named): nothing is written anywhere. An ancestor that cannot be opened (no read permission)
 * is skipped: an apply by someone who cannot read it would skip it as well. */
static int tree_locks_take(int rootfd, const char *host_root, const struct ws_apply_opts *o,
			   struct tree_locks *l)
{
	int up[WS_APPLY_MAX_LOCK_DEPTH];
	size_t n_up = 0;
	struct stat cur, par;
	if (fstat(rootfd, &cur) < 0)
		return -errno;
	int from = rootfd;
	while (n_up < WS_APPLY_MAX_LOCK_DEPTH) {
		/* O_PATH walks on where a directory cannot be read; only readable ones are kept */
		int p = openat(from, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (p < 0 || fstat(p, &par) < 0 || (par.st_dev == cur.st_dev && par.st_ino == cur.st_ino)) {
			if (p >= 0)
				close(p);
			break;
		}
		if (from != rootfd)
			close(from);
		from = p;
		cur = par;
		int rd = openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (rd >= 0)
			up[n_up++] = rd;
	}
	if (from != rootfd)
		close(from);
	bool told = false;
	/* top down: up[] runs from the parent to / */
	for (size_t i = n_up; i-- > 0;) {
		if (lock_wait(up[i], LOCK_SH, o, host_root, &told) == 0)
			l->fd[l->n++] = up[i];
		else
			close(up[i]); /* an ancestor's lock that fails (a filesystem without flock): skipped */
	}
	int self = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (self < 0)
		return -errno;
	l->fd[l->n++] = self;
	return lock_wait(self, LOCK_EX, o, host_root, &told);
}

int ws_apply(const char *host_root, const struct ws_manifest *base, const struct ws_manifest *box,
	     int staging_fd, const struct ws_apply_opts *o, struct ws_apply_report *ret, pd_err *err)
{
	static const struct ws_apply_opts defaults = {0};
	/* the root itself may be a symlink the user named; nothing below it is followed */
	_cleanup_close_ int rootfd = open(host_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return pd_error(err, errno, "cannot open %s", host_root);
	o = o ? o : &defaults;
	_cleanup_(tree_locks_release) struct tree_locks locks = {0};
	if (!o->dry_run) {
		int r = tree_locks_take(rootfd, host_root, o, &locks);
		if (r < 0)
			return pd_error(err, r, "cannot lock %s", host_root);
	}
	struct ws_apply_report rep = {.dry_run = o->dry_run};
	_cleanup_free_ char *mark = NULL;
	if (!o->dry_run) {
		if (o->journal_dir && !(mark = journal_path(o->journal_dir, rootfd)))
			return pd_error(err, errno, "cannot inspect %s", host_root);
		if (!mark || access(mark, F_OK) == 0 || errno != ENOENT) {
			int r = ws_cleanup_temps(rootfd, err);
			if (r < 0)
				return pd_err_prefix(err, "cannot remove the temp files of an earlier apply");
			rep.temps_removed = (size_t)r;
		}
		int r = mark ? journal_mark(o->journal_dir, mark, !o->no_sync) : 0;
		if (r < 0)
			return pd_error(err, r, "cannot write the apply journal %s", mark);
	}
	struct apply a = {.rootfd = rootfd, .box = box, .staging_fd = staging_fd, .o = o};
	ws_diff_compute(base, box, &a.diff);
	ws_diff_mark_exec(&a.diff, box, staging_fd);
	run(&a, base, &rep);
	/* every temp file is renamed or removed by now (and the renames synced) */
	if (mark)
		unlink(mark);
	ws_diff_free(&a.diff);
	*ret = rep;
	return 0;
}

void ws_apply_report_free(struct ws_apply_report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		free(r->v[i].path);
	free(r->v);
	*r = (struct ws_apply_report){0};
}

void ws_apply_report_add_notes(struct ws_apply_report *r, const struct ws_notes *n, char *const *paths)
{
	for (size_t i = 0; i < n->n; i++) {
		const struct ws_note *no = &n->v[i];
		bool wanted = !paths;
		for (char *const *p = paths; p && *p && !wanted; p++)
			wanted = streq(*p, ".") || ws_path_under(no->path, *p);
		if (!wanted || !ws_reason_left_out(no->reason))
			continue;
		report_add(r, &(struct ws_apply_item){.path = no->path, .change = WS_CHG_REFUSED,
						      .result = WS_REFUSED_ENTRY, .reason = no->reason,
						      .detail = ws_reason_str(no->reason)});
	}
	if (!paths) /* beyond the notes' cap: only counted */
		r->count[WS_REFUSED_ENTRY] += n->dropped;
}

void ws_apply_report_render(FILE *out, const struct ws_apply_report *r, bool color)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct ws_apply_item *it = &r->v[i];
		bool bad = it->result != WS_APPLIED && it->result != WS_ALREADY;
		_cleanup_free_ char *p = ws_escape_name(it->path);
		/* a dry run says what would be done, never "applied" */
		const char *what = r->dry_run && it->result == WS_APPLIED ? "would apply" : ws_result_str(it->result);
		fprintf(out, "%s%-16s%s %s (%s)", color && bad ? "\033[33m" : "", what, color && bad ? "\033[m" : "", p,
			ws_change_str(it->change));
		if (it->detail)
			fprintf(out, ": %s", it->detail);
		if (it->err)
			fprintf(out, ": %s", strerror(it->err));
		fputc('\n', out);
	}
	fprintf(out, "%s%zu %s, %zu already applied, %zu conflicts, %zu skipped, %zu refused, %zu failed\n",
		r->dry_run ? "dry run, nothing written: " : "", r->count[WS_APPLIED], r->dry_run ? "would be applied" : "applied", r->count[WS_ALREADY], r->count[WS_CONFLICT], r->count[WS_SKIPPED_EXEC],
		r->count[WS_REFUSED_ENTRY], r->count[WS_FAILED]);
}
