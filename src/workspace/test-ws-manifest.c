/* test-ws-manifest.c — manifests from a host directory, from tar streams (hostile ones
 * built with libarchive), and the manifest file format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive_entry.h>
#include <fcntl.h>

#include <sys/mman.h>

#include "util/fdio.h"
#include "workspace/testlib-ws.h"

/* sha256("hello\n") */
#define HELLO_SHA "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"

struct fx {
	char *dir, *tree, *staging;
	int staging_fd;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	f->dir = tl_tmpdir();
	f->tree = xasprintf("%s/tree", f->dir);
	f->staging = xasprintf("%s/staging", f->dir);
	if (mkdir(f->tree, 0755) < 0 || mkdir(f->staging, 0700) < 0)
		return -1;
	f->staging_fd = tl_opendir(f->staging);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	close(f->staging_fd);
	tl_rmrf(f->dir);
	free(f->dir);
	free(f->tree);
	free(f->staging);
	free(f);
	return 0;
}

static const struct ws_entry *find(const struct ws_manifest *m, const char *p)
{
	return ws_manifest_find(m, p);
}

static bool noted(const struct ws_notes *n, enum ws_reason r, const char *path)
{
	for (size_t i = 0; i < n->n; i++)
		if (n->v[i].reason == r && streq(n->v[i].path, path))
			return true;
	return false;
}

static void assert_sha(const struct ws_entry *e, const char *hex)
{
	char h[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(e->sha256, h);
	assert_string_equal(h, hex);
}

static void test_from_dir(void **state)
{
	struct fx *f = *state;
	tl_write(f->tree, "a/hello.txt", "hello\n", 0644);
	tl_write(f->tree, "run.sh", "#!/bin/sh\n", 0755);
	tl_write(f->tree, WS_TMP_PREFIX "leftover", "x", 0600);
	tl_write(f->tree, "bad\nname", "x", 0644);
	_cleanup_free_ char *fifo = xasprintf("%s/fifo", f->tree), *lnk = xasprintf("%s/out", f->tree);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	assert_int_equal(symlink("/etc/passwd", lnk), 0);
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	_cleanup_close_ int fd = tl_opendir(f->tree);
	assert_int_equal(ws_manifest_from_dir(fd, NULL, &m, &notes, NULL), 0);
	assert_int_equal(m.n, 4); /* a, a/hello.txt, out, run.sh */
	const struct ws_entry *e = find(&m, "a/hello.txt");
	assert_non_null(e);
	assert_int_equal(e->type, WS_FILE);
	assert_int_equal(e->size, 6);
	assert_sha(e, HELLO_SHA);
	assert_int_equal(find(&m, "run.sh")->mode, 0755);
	assert_int_equal(find(&m, "a")->type, WS_DIR);
	e = find(&m, "out");
	assert_int_equal(e->type, WS_SYMLINK); /* recorded, never followed */
	assert_string_equal(e->target, "/etc/passwd");
	assert_true(noted(&notes, WS_R_SPECIAL_SKIPPED, "fifo"));
	assert_true(noted(&notes, WS_R_RESERVED_NAME, WS_TMP_PREFIX "leftover"));
	assert_true(noted(&notes, WS_R_CONTROL_CHAR, "bad\nname"));
	ws_manifest_free(&m);
	ws_notes_free(&notes);
}

/* A box cannot open the host's files to group or others: write bits survive only where the
 * host entry had them, or (new entries) where the umask allows; exec bits are the box's. */
static void test_limit_modes(void **state)
{
	(void)state;
	struct ws_manifest base = {0}, box = {0};
	ws_manifest_add(&base, &(struct ws_entry){.path = "a", .type = WS_FILE, .mode = 0644});
	ws_manifest_add(&base, &(struct ws_entry){.path = "g", .type = WS_FILE, .mode = 0664});
	ws_manifest_add(&base, &(struct ws_entry){.path = "t", .type = WS_DIR, .mode = 0755});
	ws_manifest_sort(&base);
	ws_manifest_add(&box, &(struct ws_entry){.path = "a", .type = WS_FILE, .mode = 0777});
	ws_manifest_add(&box, &(struct ws_entry){.path = "g", .type = WS_FILE, .mode = 0666});
	ws_manifest_add(&box, &(struct ws_entry){.path = "new", .type = WS_FILE, .mode = 0666});
	ws_manifest_add(&box, &(struct ws_entry){.path = "t", .type = WS_DIR, .mode = 0777});
	ws_manifest_add(&box, &(struct ws_entry){.path = "l", .type = WS_SYMLINK, .mode = 0777, .target = "a"});
	ws_manifest_sort(&box);
	ws_manifest_limit_modes(&box, &base, 022);
	assert_int_equal(ws_manifest_find(&box, "a")->mode, 0755);  /* exec bits kept, write not */
	assert_int_equal(ws_manifest_find(&box, "g")->mode, 0664);  /* the host's group write stays */
	assert_int_equal(ws_manifest_find(&box, "new")->mode, 0644);
	assert_int_equal(ws_manifest_find(&box, "t")->mode, 0755);
	assert_int_equal(ws_manifest_find(&box, "l")->mode, 0777);  /* a symlink has no mode of its own */
	ws_manifest_limit_modes(&box, &base, 002);
	assert_int_equal(ws_manifest_find(&box, "new")->mode, 0644); /* nothing widens again */
	ws_manifest_free(&base);
	ws_manifest_free(&box);
}

static void test_save_load(void **state)
{
	struct fx *f = *state;
	tl_write(f->tree, "a b/c\\d", "hello\n", 0600);
	tl_write(f->tree, "x/y", "", 0644);
	_cleanup_free_ char *lnk = xasprintf("%s/l", f->tree);
	assert_int_equal(symlink("x/y z", lnk), 0);
	struct ws_manifest m = {0}, back = {0};
	tl_manifest_dir(f->tree, &m);
	_cleanup_close_ int dfd = tl_opendir(f->dir);
	assert_int_equal(ws_manifest_save(&m, dfd, "m.txt", NULL), 0);
	assert_int_equal(ws_manifest_load(dfd, "m.txt", NULL, &back, NULL), 0);
	assert_int_equal(back.n, m.n);
	for (size_t i = 0; i < m.n; i++) {
		assert_string_equal(back.v[i].path, m.v[i].path);
		assert_int_equal(back.v[i].type, m.v[i].type);
		assert_int_equal(back.v[i].mode, m.v[i].mode);
		assert_int_equal(back.v[i].size, m.v[i].size);
		assert_memory_equal(back.v[i].sha256, m.v[i].sha256, WS_SHA256_LEN);
	}
	assert_string_equal(find(&back, "l")->target, "x/y z");
	ws_manifest_free(&m);
	ws_manifest_free(&back);
}

static void load_bad(int dfd, const char *text)
{
	assert_int_equal(write_file_atomic_at(dfd, "bad.txt", text, strlen(text), 0600), 0);
	struct ws_manifest m = {0};
	pd_err err = {0};
	assert_true(ws_manifest_load(dfd, "bad.txt", NULL, &m, &err) < 0);
	assert_int_equal(m.n, 0);
}

static void test_load_rejects(void **state)
{
	struct fx *f = *state;
	_cleanup_close_ int dfd = tl_opendir(f->dir);
	load_bad(dfd, "");
	load_bad(dfd, "not-a-manifest\n");
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 ..\n");
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 /etc\n");
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 b\nd 0755 0 - 0 a\n"); /* unsorted */
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 a\nd 0755 0 - 0 a\n"); /* duplicate */
	load_bad(dfd, "paddock-manifest 1\nf 0644 1 zz 0 a\n");
	load_bad(dfd, "paddock-manifest 1\nf 4755 1 " HELLO_SHA " 0 a\n"); /* setuid mode */
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 a\\x0ab\n");        /* escaped newline */
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 a\\x00\n");
	load_bad(dfd, "paddock-manifest 1\nd 0755 0 - 0 a"); /* no final newline */
}

static void notes_bad(int dfd, const char *text)
{
	assert_int_equal(write_file_atomic_at(dfd, "n", text, strlen(text), 0600), 0);
	struct ws_notes n = {0};
	assert_true(ws_notes_load(dfd, "n", &n, NULL) < 0);
	assert_int_equal(n.n, 0);
}

/* A snapshot's notes outlive the diff that took it: saved and read back as they were (raw
 * names with control bytes, spaces, no detail), strictly. */
static void test_notes_save_load(void **state)
{
	struct fx *f = *state;
	_cleanup_close_ int dfd = tl_opendir(f->dir);
	struct ws_notes n = {0}, back = {0};
	ws_notes_add(&n, WS_R_CONTROL_CHAR, "tab\tname \x1b[2J.c", NULL);
	ws_notes_add(&n, WS_R_IGNORED, "node_modules/m.c", "new here and not shown");
	ws_notes_add(&n, WS_R_DUPLICATE, "", NULL);
	n.dropped = 7;
	assert_int_equal(ws_notes_save(&n, dfd, "n", NULL), 0);
	assert_int_equal(ws_notes_load(dfd, "n", &back, NULL), 0);
	assert_int_equal(back.n, 3);
	assert_int_equal(back.dropped, 7);
	assert_int_equal(back.v[0].reason, WS_R_CONTROL_CHAR);
	assert_string_equal(back.v[0].path, "tab\tname \x1b[2J.c");
	assert_null(back.v[0].detail);
	assert_string_equal(back.v[1].detail, "new here and not shown");
	assert_string_equal(back.v[2].path, "");
	assert_true(ws_reason_left_out(back.v[0].reason));
	assert_false(ws_reason_left_out(back.v[1].reason));
	assert_false(ws_reason_left_out(WS_R_SETID_STRIPPED));
	ws_notes_free(&n);
	ws_notes_free(&back);
	notes_bad(dfd, "");
	notes_bad(dfd, "paddock-notes 1\n");                       /* no end line */
	notes_bad(dfd, "paddock-notes 1\n8 pa\n");                /* cut short */
	notes_bad(dfd, "paddock-notes 1\n0 pa\ndropped 0\n");     /* not a reason */
	notes_bad(dfd, "paddock-notes 1\n999 pa\ndropped 0\n");
	notes_bad(dfd, "paddock-notes 1\n8 a\ndropped 0\n");      /* no p */
	notes_bad(dfd, "paddock-notes 1\n8 pa\\x00\ndropped 0\n"); /* NUL */
	notes_bad(dfd, "paddock-notes 1\ndropped 0\nextra\n");
	notes_bad(dfd, "paddock-notes 1\ndropped -1\n");
}

static void test_tar_normal(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	tl_tar_dir(t, "./", 0755);
	tl_tar_dir(t, "./src/", 0750);
	tl_tar_file(t, "./src/hello.txt", "hello\n", 0644);
	tl_tar_file(t, "deep/er/file", "hello\n", 0600); /* parents implied */
	tl_tar_symlink(t, "src/link", "hello.txt");
	tl_tar_symlink(t, "deep/er/up", "../../src");
	tl_tar_hardlink(t, "copy", "./src/hello.txt");
	int fd = tl_tar_finish(t);
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, NULL, &m, &notes), 0);
	close(fd);
	assert_int_equal(notes.n, 0);
	assert_int_equal(m.n, 8);
	assert_int_equal(find(&m, "src")->mode, 0750);
	assert_int_equal(find(&m, "deep")->type, WS_DIR);
	assert_int_equal(find(&m, "deep/er/file")->mode, 0600);
	assert_sha(find(&m, "src/hello.txt"), HELLO_SHA);
	assert_sha(find(&m, "copy"), HELLO_SHA);
	assert_int_equal(find(&m, "copy")->type, WS_FILE);
	assert_string_equal(find(&m, "deep/er/up")->target, "../../src");
	/* the staging directory holds content by hash, nothing named by the box */
	assert_int_equal(tl_count_entries(f->staging), 1);
	_cleanup_free_ char *c = tl_read(f->staging, HELLO_SHA);
	assert_string_equal(c, "hello\n");
	ws_manifest_free(&m);
	ws_notes_free(&notes);
}

static void test_tar_hostile_names(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	tl_tar_file(t, "../x", "evil", 0644);
	tl_tar_file(t, "/etc/x", "evil", 0644);
	tl_tar_file(t, "a/../../x", "evil", 0644);
	tl_tar_file(t, "esc\x1b[31m", "evil", 0644);
	tl_tar_file(t, "new\nline", "evil", 0644);
	tl_tar_file(t, "a//b", "evil", 0644);
	tl_tar_file(t, WS_TMP_PREFIX "0123", "evil", 0644);
	_cleanup_free_ char *deep = xstrdup("d");
	for (int i = 0; i < 300; i++) {
		char *n = xasprintf("%s/d", deep);
		free(deep);
		deep = n;
	}
	tl_tar_file(t, deep, "deep", 0644);
	tl_tar_file(t, "ok", "fine", 0644);
	int fd = tl_tar_finish(t);
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, NULL, &m, &notes), 0);
	close(fd);
	assert_int_equal(m.n, 1);
	assert_non_null(find(&m, "ok"));
	assert_true(noted(&notes, WS_R_DOTDOT, "../x"));
	assert_true(noted(&notes, WS_R_ABSOLUTE, "/etc/x"));
	assert_true(noted(&notes, WS_R_DOTDOT, "a/../../x"));
	assert_true(noted(&notes, WS_R_CONTROL_CHAR, "esc\x1b[31m"));
	assert_true(noted(&notes, WS_R_CONTROL_CHAR, "new\nline"));
	assert_true(noted(&notes, WS_R_EMPTY_COMPONENT, "a//b"));
	assert_true(noted(&notes, WS_R_RESERVED_NAME, WS_TMP_PREFIX "0123"));
	assert_true(noted(&notes, WS_R_TOO_DEEP, deep));
	assert_int_equal(tl_count_entries(f->staging), 1); /* only "fine" was staged */
	ws_manifest_free(&m);
	ws_notes_free(&notes);
}

static void test_tar_hostile_entries(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	tl_tar_symlink(t, "abs", "/etc/passwd");
	tl_tar_symlink(t, "sub/esc", "../../etc");
	tl_tar_symlink(t, "sneaky", "a/../..");
	tl_tar_hardlink(t, "hl", "../../etc/passwd");
	tl_tar_hardlink(t, "hl2", "nothing-before");
	tl_tar_special(t, "chr", AE_IFCHR);
	tl_tar_special(t, "blk", AE_IFBLK);
	tl_tar_special(t, "fifo", AE_IFIFO);
	/* no tar format can carry a socket: the reader's refusal of one is not reachable */
	tl_tar_file(t, "suid", "x", 04755);
	tl_tar_file(t, "f", "x", 0644);
	tl_tar_file(t, "f/under", "x", 0644); /* parent is a file */
	tl_tar_file(t, "f", "again", 0644);   /* duplicate */
	tl_tar_file(t, "abs/x", "x", 0644);   /* beneath a refused entry */
	int fd = tl_tar_finish(t);
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, NULL, &m, &notes), 0);
	close(fd);
	static const struct {
		const char *path;
		enum ws_reason r;
	} refused[] = {
		{"abs", WS_R_LINK_ABSOLUTE}, {"sub/esc", WS_R_LINK_ESCAPES},
		{"sneaky", WS_R_LINK_DOTDOT_AFTER_NAME}, {"hl", WS_R_HARDLINK_OUTSIDE},
		{"hl2", WS_R_HARDLINK_OUTSIDE}, {"chr", WS_R_DEVICE}, {"blk", WS_R_DEVICE},
		{"fifo", WS_R_FIFO},
	};
	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		const struct ws_entry *e = find(&m, refused[i].path);
		assert_non_null(e);
		assert_int_equal(e->type, WS_REFUSED);
		assert_int_equal(e->reason, refused[i].r);
	}
	assert_int_equal(find(&m, "suid")->mode, 0755);
	assert_true(noted(&notes, WS_R_SETID_STRIPPED, "suid"));
	assert_true(noted(&notes, WS_R_PARENT_NOT_DIR, "f/under"));
	assert_true(noted(&notes, WS_R_DUPLICATE, "f"));
	assert_true(noted(&notes, WS_R_PARENT_REFUSED, "abs/x"));
	assert_null(find(&m, "f/under"));
	ws_manifest_free(&m);
	ws_notes_free(&notes);
}

static void test_tar_size_bomb(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	tl_tar_file(t, "small", "x", 0644);
	tl_tar_header_only(t, "sparse-bomb", 100ll << 30); /* 100 GB declared, no data sent */
	int fd = tl_tar_finish(t);
	struct ws_manifest m = {0};
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, &lim, &m, NULL), -EFBIG);
	close(fd);
	assert_int_equal(m.n, 0);
	/* and the total: three 1 KiB files against a 2 KiB budget */
	t = tl_tar_new();
	char kb[1025];
	memset(kb, 'k', 1024);
	kb[1024] = '\0';
	for (int i = 0; i < 3; i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%d", i);
		tl_tar_file(t, name, kb, 0644);
	}
	fd = tl_tar_finish(t);
	lim.max_total = 2048;
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, &lim, &m, NULL), -EFBIG);
	close(fd);
}

static void test_tar_entry_limit(void **state)
{
	struct fx *f = *state;
	struct tl_tar *t = tl_tar_new();
	for (int i = 0; i < 10; i++) {
		char name[8];
		snprintf(name, sizeof(name), "../%d", i); /* refused entries count too */
		tl_tar_file(t, name, "", 0644);
	}
	int fd = tl_tar_finish(t);
	struct ws_manifest m = {0};
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	lim.max_entries = 5;
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, &lim, &m, NULL), -EFBIG);
	close(fd);
	/* implied parent directories count as entries too */
	t = tl_tar_new();
	tl_tar_file(t, "a/b/c/d/e/f/g", "", 0644);
	fd = tl_tar_finish(t);
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, &lim, &m, NULL), -EFBIG);
	close(fd);
	/* and so do the bytes of the names held in memory */
	t = tl_tar_new();
	tl_tar_file(t, "a-rather-long-name-for-a-small-budget", "", 0644);
	fd = tl_tar_finish(t);
	lim = WS_LIMITS_DEFAULT;
	lim.max_names = 16;
	assert_int_equal(tl_ingest(fd, f->staging_fd, NULL, &lim, &m, NULL), -EFBIG);
	close(fd);
}

static void test_tar_garbage(void **state)
{
	struct fx *f = *state;
	int fd = memfd_create("garbage", MFD_CLOEXEC);
	char junk[4096];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7 + 3);
	assert_int_equal(fd_write_all(fd, junk, sizeof(junk)), 0);
	lseek(fd, 0, SEEK_SET);
	struct ws_manifest m = {0};
	assert_true(tl_ingest(fd, f->staging_fd, NULL, NULL, &m, NULL) < 0);
	close(fd);
	fd = memfd_create("empty", MFD_CLOEXEC); /* zero bytes: not a tree, refused */
	assert_true(tl_ingest(fd, f->staging_fd, NULL, NULL, &m, NULL) < 0);
	close(fd);
}

static void test_tar_unchanged_not_staged(void **state)
{
	struct fx *f = *state;
	tl_write(f->tree, "same", "hello\n", 0644);
	tl_write(f->tree, "changed", "old\n", 0644);
	_cleanup_free_ char *lnk = xasprintf("%s/hostlink", f->tree);
	assert_int_equal(symlink("/usr/share", lnk), 0);
	struct ws_manifest base = {0}, m = {0};
	tl_manifest_dir(f->tree, &base);
	struct tl_tar *t = tl_tar_new();
	tl_tar_file(t, "same", "hello\n", 0644);
	tl_tar_file(t, "changed", "new\n", 0644);
	tl_tar_symlink(t, "hostlink", "/usr/share"); /* the host's own link, unchanged */
	tl_tar_hardlink(t, "same2", "same");          /* needs the unchanged content */
	int fd = tl_tar_finish(t);
	assert_int_equal(tl_ingest(fd, f->staging_fd, &base, NULL, &m, NULL), 0);
	close(fd);
	assert_int_equal(find(&m, "hostlink")->type, WS_SYMLINK);
	assert_int_equal(tl_count_entries(f->staging), 2); /* "new\n" and, for same2, "hello\n" */
	assert_true(tl_exists(f->staging, HELLO_SHA));
	ws_manifest_free(&m);
	ws_manifest_free(&base);
}

/* two new files with the same content: one staged file, which stays (it once went missing
 * when the second copy of the hash was the one marked as needed); a third stream over the
 * same staging directory finds it there and writes nothing */
static void test_tar_same_content_twice(void **state)
{
	struct fx *f = *state;
	struct ws_manifest base = {0}, m = {0};
	tl_manifest_dir(f->tree, &base);
	for (int round = 0; round < 2; round++) {
		struct tl_tar *t = tl_tar_new();
		tl_tar_file(t, "a", "hello\n", 0644);
		tl_tar_file(t, "b", "other\n", 0644);
		tl_tar_file(t, "z", "hello\n", 0644);
		int fd = tl_tar_finish(t);
		assert_int_equal(tl_ingest(fd, f->staging_fd, &base, NULL, &m, NULL), 0);
		close(fd);
		assert_int_equal(tl_count_entries(f->staging), 2);
		assert_true(tl_exists(f->staging, HELLO_SHA));
		ws_manifest_free(&m);
	}
	ws_manifest_free(&base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_limit_modes),
		cmocka_unit_test_setup_teardown(test_from_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_save_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_load_rejects, setup, teardown),
		cmocka_unit_test_setup_teardown(test_notes_save_load, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_normal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_hostile_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_hostile_entries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_size_bomb, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_entry_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_unchanged_not_staged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tar_same_content_twice, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
