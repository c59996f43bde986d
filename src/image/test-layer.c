/* test-layer.c — the layer applier: files, directories, symlinks, hard links, whiteouts and
 * opaque directories with OCI's same-layer rule, replacement of lower entries, modes, owners,
 * xattrs, device nodes, compression, limits, and the attacks: "../" names, absolute paths,
 * writing through a planted symlink (absolute or relative), hard links out of the tree or to
 * what is not there yet. Every attack test also checks that the directory beside the root is
 * unchanged. Run twice by meson: with openat2 and with PADDOCK_TEST_NO_OPENAT2=1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "image/layer.h"
#include "util/fdio.h"

/* ---- building tars ---- */

#define TAR_CAP (8 * 1024 * 1024)

struct tar {
	struct archive *a;
	char *buf;
	size_t used;
};

static struct tar *tar_new_filtered(int filter)
{
	struct tar *t = xcalloc(1, sizeof(*t));
	t->buf = xmalloc(TAR_CAP);
	t->a = archive_write_new();
	archive_write_set_format_pax_restricted(t->a);
	if (filter == ARCHIVE_FILTER_GZIP)
		archive_write_add_filter_gzip(t->a);
	else if (filter == ARCHIVE_FILTER_ZSTD)
		archive_write_add_filter_zstd(t->a);
	assert_int_equal(archive_write_open_memory(t->a, t->buf, TAR_CAP, &t->used), ARCHIVE_OK);
	return t;
}

static struct tar *tar_new(void)
{
	return tar_new_filtered(ARCHIVE_FILTER_NONE);
}

static void put(struct tar *t, struct archive_entry *e, const char *data, size_t len)
{
	assert_int_equal(archive_write_header(t->a, e), ARCHIVE_OK);
	if (len)
		assert_int_equal(archive_write_data(t->a, data, len), (la_ssize_t)len);
	archive_entry_free(e);
}

static struct archive_entry *entry(const char *path, mode_t type, mode_t perm)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, perm);
	archive_entry_set_mtime(e, 1700000000, 0);
	return e;
}

static void add_file(struct tar *t, const char *path, const char *data, mode_t perm)
{
	struct archive_entry *e = entry(path, AE_IFREG, perm);
	archive_entry_set_size(e, (la_int64_t)strlen(data));
	put(t, e, data, strlen(data));
}

static void add_dir(struct tar *t, const char *path, mode_t perm)
{
	put(t, entry(path, AE_IFDIR, perm), NULL, 0);
}

static void add_symlink(struct tar *t, const char *path, const char *target)
{
	struct archive_entry *e = entry(path, AE_IFLNK, 0777);
	archive_entry_set_symlink(e, target);
	put(t, e, NULL, 0);
}

static void add_hardlink(struct tar *t, const char *path, const char *target)
{
	struct archive_entry *e = entry(path, AE_IFREG, 0644);
	archive_entry_set_hardlink(e, target);
	archive_entry_set_size(e, 0);
	put(t, e, NULL, 0);
}

static void add_node(struct tar *t, const char *path, mode_t type, unsigned maj, unsigned min)
{
	struct archive_entry *e = entry(path, type, 0666);
	archive_entry_set_rdevmajor(e, maj);
	archive_entry_set_rdevminor(e, min);
	put(t, e, NULL, 0);
}

static void tar_close(struct tar *t)
{
	assert_int_equal(archive_write_close(t->a), ARCHIVE_OK);
	archive_write_free(t->a);
	t->a = NULL;
}

static void tar_free(struct tar *t)
{
	if (t->a)
		archive_write_free(t->a);
	free(t->buf);
	free(t);
}

/* ---- the tree ---- */

struct fx {
	char base[64];  /* base/root is the tree, base/outside must never change */
	int rootfd;
	struct layer_options o;
	struct layer_stats st;
	pd_err err;
};

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	strcpy(f->base, "/tmp/test-layer.XXXXXX");
	assert_non_null(mkdtemp(f->base));
	char p[128];
	snprintf(p, sizeof(p), "%s/root", f->base);
	assert_int_equal(mkdir(p, 0755), 0);
	f->rootfd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->rootfd >= 0);
	snprintf(p, sizeof(p), "%s/outside", f->base);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/outside/canary", f->base);
	assert_int_equal(write_file_atomic_at(AT_FDCWD, p, "canary", 6, 0644), 0);
	layer_options_default(&f->o);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	close(f->rootfd);
	rm_rf(f->base);
	free(f);
	return 0;
}

static int apply(struct fx *f, struct tar *t)
{
	if (t->a)
		tar_close(t);
	memset(&f->err, 0, sizeof(f->err));
	memset(&f->st, 0, sizeof(f->st));
	int r = layer_apply_buffer(f->rootfd, t->buf, t->used, &f->o, &f->st, &f->err);
	tar_free(t);
	return r;
}

static void apply_ok(struct fx *f, struct tar *t)
{
	if (apply(f, t) < 0)
		fail_msg("apply: %s", f->err.msg);
}

static void apply_fails(struct fx *f, struct tar *t, const char *expect)
{
	assert_true(apply(f, t) < 0);
	if (!strstr(f->err.msg, expect))
		fail_msg("message '%s' lacks '%s'", f->err.msg, expect);
}

static bool exists(struct fx *f, const char *path)
{
	struct stat st;
	return fstatat(f->rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static mode_t mode_of(struct fx *f, const char *path)
{
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_mode;
}

static char *content(struct fx *f, const char *path)
{
	char *buf = NULL;
	assert_true(S_ISREG(mode_of(f, path)));
	assert_int_equal(read_file_at(f->rootfd, path, 1 << 20, &buf, NULL), 0);
	return buf;
}

/* The directory beside the root holds exactly its canary, unchanged. */
static void outside_unchanged(struct fx *f)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/outside", f->base);
	_cleanup_closedir_ DIR *d = opendir(p);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			n++;
	assert_int_equal(n, 1);
	rewinddir(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			assert_string_equal(de->d_name, "canary");
	snprintf(p, sizeof(p), "%s/outside/canary", f->base);
	char *c = NULL;
	assert_int_equal(read_file_at(AT_FDCWD, p, 100, &c, NULL), 0);
	assert_string_equal(c, "canary");
	free(c);
	/* and nothing was created beside root and outside */
	_cleanup_closedir_ DIR *b = opendir(f->base);
	n = 0;
	while ((de = readdir(b)))
		n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	assert_int_equal(n, 2);
}

/* ---- tests ---- */

static void test_basic_tree(void **state)
{
	struct fx *f = *state;
	struct tar *t = tar_new();
	add_dir(t, "./", 0755);
	add_dir(t, "./etc/", 0755);
	add_file(t, "./etc/hostname", "box\n", 0644);
	add_file(t, "usr/bin/tool", "#!/bin/sh\n", 0755); /* parents not listed */
	add_symlink(t, "bin", "usr/bin");
	add_symlink(t, "etc/abs", "/etc/shadow"); /* data: stored, never followed */
	add_dir(t, "/var//tmp/./", 01777);        /* absolute, doubled and dotted */
	apply_ok(f, t);
	_cleanup_free_ char *c = content(f, "etc/hostname");
	assert_string_equal(c, "box\n");
	assert_int_equal(mode_of(f, "usr/bin/tool") & 07777, 0755);
	assert_true(S_ISDIR(mode_of(f, "usr/bin")));
	char target[64] = "";
	assert_int_equal(readlinkat(f->rootfd, "etc/abs", target, sizeof(target)), 11);
	assert_int_equal(mode_of(f, "var/tmp") & 07777, 01777);
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, "etc", &st, 0), 0);
	assert_int_equal(st.st_mtim.tv_sec, 1700000000); /* set after its children */
	assert_int_equal(f->st.files, 2);
	assert_int_equal(f->st.dirs, 2);
	assert_int_equal(f->st.symlinks, 2);
	assert_int_equal(f->st.ignored, 1); /* "./" */
	assert_int_equal(f->st.bytes, 14);
	outside_unchanged(f);
}

static void lower_layer(struct fx *f)
{
	struct tar *t = tar_new();
	add_file(t, "a/keep", "k", 0644);
	add_file(t, "a/gone", "g", 0644);
	add_file(t, "a/sub/deep", "d", 0644);
	add_file(t, "o/lower1", "1", 0644);
	add_file(t, "o/lsub/lower2", "2", 0644);
	add_file(t, "o/shared/lower3", "3", 0644);
	add_file(t, "f", "file", 0644);
	add_dir(t, "d", 0755);
	add_file(t, "d/x", "x", 0644);
	apply_ok(f, t);
}

static void test_whiteouts(void **state)
{
	struct fx *f = *state;
	lower_layer(f);
	struct tar *t = tar_new();
	add_file(t, "a/.wh.gone", "", 0644);
	add_file(t, "a/.wh.sub", "", 0644);         /* a directory, recursively */
	add_file(t, "a/.wh.never-there", "", 0644); /* nothing to do */
	add_file(t, "nodir/.wh.x", "", 0644);       /* parent missing: nothing to do */
	apply_ok(f, t);
	assert_true(exists(f, "a/keep"));
	assert_false(exists(f, "a/gone"));
	assert_false(exists(f, "a/sub"));
	assert_false(exists(f, "a/.wh.gone"));
	assert_false(exists(f, "nodir"));
	assert_int_equal(f->st.whiteouts, 4);
}

static void test_whiteout_spares_same_layer(void **state)
{
	struct fx *f = *state;
	lower_layer(f);
	struct tar *t = tar_new();
	add_file(t, "a/gone", "new", 0644);   /* recreated in this layer ... */
	add_file(t, "a/.wh.gone", "", 0644);  /* ... so this only hides the lower one */
	apply_ok(f, t);
	_cleanup_free_ char *c = content(f, "a/gone");
	assert_string_equal(c, "new");
}

static void test_opaque_dir(void **state)
{
	struct fx *f = *state;
	lower_layer(f);
	struct tar *t = tar_new();
	add_dir(t, "o", 0755);
	add_file(t, "o/early", "e", 0644);          /* before the marker: must survive */
	add_file(t, "o/shared/mine", "m", 0644);    /* a lower dir this layer writes into */
	add_file(t, "o/.wh..wh..opq", "", 0644);
	add_file(t, "o/late", "l", 0644);
	add_file(t, "fresh/.wh..wh..opq", "", 0644); /* opaque dir new in this layer */
	apply_ok(f, t);
	assert_true(exists(f, "o/early"));
	assert_true(exists(f, "o/late"));
	assert_true(exists(f, "o/shared/mine"));
	assert_false(exists(f, "o/lower1"));
	assert_false(exists(f, "o/lsub"));
	assert_false(exists(f, "o/shared/lower3")); /* lower content below the opaque dir */
	assert_false(exists(f, "o/.wh..wh..opq"));
	assert_true(S_ISDIR(mode_of(f, "fresh")));
	assert_true(exists(f, "a/keep"));           /* elsewhere untouched */
	assert_int_equal(f->st.opaque_dirs, 2);
}

static void test_replacing_lower_entries(void **state)
{
	struct fx *f = *state;
	lower_layer(f);
	struct tar *t = tar_new();
	add_file(t, "d", "now a file", 0600);  /* directory -> file */
	add_dir(t, "f", 0700);                 /* file -> directory */
	add_dir(t, "a", 0711);                 /* directory -> directory: merged */
	apply_ok(f, t);
	_cleanup_free_ char *c = content(f, "d");
	assert_string_equal(c, "now a file");
	assert_true(S_ISDIR(mode_of(f, "f")));
	assert_true(exists(f, "a/keep"));
	assert_int_equal(mode_of(f, "a") & 07777, 0711);
}

static void test_hardlinks(void **state)
{
	struct fx *f = *state;
	struct tar *t = tar_new();
	add_file(t, "x/orig", "data", 0644);
	add_hardlink(t, "y/link", "x/orig");
	add_hardlink(t, "./y/link2", "/x/orig");
	apply_ok(f, t);
	struct stat a, b;
	assert_int_equal(fstatat(f->rootfd, "x/orig", &a, 0), 0);
	assert_int_equal(fstatat(f->rootfd, "y/link2", &b, 0), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_nlink, 3);
	assert_int_equal(f->st.hardlinks, 2);
}

static void test_attack_hardlink_out_of_tree(void **state)
{
	struct fx *f = *state;
	struct tar *t = tar_new();
	add_hardlink(t, "pw", "../outside/canary");
	apply_fails(f, t, "hard link to an invalid path '../outside/canary'");
	assert_false(exists(f, "pw"));
	outside_unchanged(f);
}

static void test_attack_hardlink_not_extracted(void **state)
{
	struct fx *f = *state;
	lower_layer(f);
	struct tar *t = tar_new();
	add_hardlink(t, "l", "a/keep"); /* a lower layer's file */
	apply_fails(f, t, "hard link to 'a/keep', not extracted before it");
	t = tar_new();
	add_hardlink(t, "l", "later");
	add_file(t, "later", "x", 0644);
	apply_fails(f, t, "not extracted before it");
	t = tar_new();
	add_dir(t, "dd", 0755);
	add_hardlink(t, "l", "dd");
	apply_fails(f, t, "not a regular file");
}

static void test_attack_dotdot_entry(void **state)
{
	struct fx *f = *state;
	const char *names[] = { "../outside/pwned", "a/../../outside/pwned", "..", "a/.." };
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		struct tar *t = tar_new();
		add_file(t, names[i], "pwned", 0644);
		apply_fails(f, t, "refusing a name with \"..\"");
		outside_unchanged(f);
	}
	struct tar *t = tar_new();
	add_file(t, "a/.wh...", "", 0644);
	apply_fails(f, t, "invalid whiteout");
	outside_unchanged(f);
}

static void test_attack_absolute_symlink_then_write_through(void **state)
{
	struct fx *f = *state;
	char outside[128];
	snprintf(outside, sizeof(outside), "%s/outside", f->base);
	struct tar *t = tar_new();
	add_symlink(t, "etc", outside);             /* absolute, pointing out of the tree */
	add_file(t, "etc/canary", "pwned", 0644);   /* ... and a write through it */
	apply_fails(f, t, "(a symlink on the way: refusing to write through it)");
	outside_unchanged(f);

	t = tar_new();
	add_symlink(t, "up", "../outside");         /* relative escape */
	add_file(t, "up/new", "pwned", 0644);
	apply_fails(f, t, "a symlink on the way");
	outside_unchanged(f);

	t = tar_new();
	add_symlink(t, "dir", "/");
	add_dir(t, "dir/x", 0755);
	add_hardlink(t, "dir/y", "dir");
	apply_fails(f, t, "a symlink on the way");
	outside_unchanged(f);
}

static void test_attack_symlink_replaced_not_followed(void **state)
{
	struct fx *f = *state;
	char canary[128];
	snprintf(canary, sizeof(canary), "%s/outside/canary", f->base);
	struct tar *t = tar_new();
	add_symlink(t, "f", canary);
	add_symlink(t, "w/.wh.x", canary); /* a symlinked whiteout name is just a whiteout */
	apply_ok(f, t);
	t = tar_new();
	add_file(t, "f", "pwned", 0644);   /* replaces the symlink, does not write through it */
	add_dir(t, "f2", 0755);
	apply_ok(f, t);
	assert_true(S_ISREG(mode_of(f, "f")));
	outside_unchanged(f);

	t = tar_new();
	add_symlink(t, "s", canary);
	add_file(t, ".wh.s", "", 0644);    /* same layer: survives */
	apply_ok(f, t);
	t = tar_new();
	add_file(t, ".wh.s", "", 0644);    /* lower: the link goes, not its target */
	apply_ok(f, t);
	assert_false(exists(f, "s"));
	outside_unchanged(f);
}

static void test_devices_unprivileged(void **state)
{
	struct fx *f = *state;
	f->o.privileged = false;
	struct tar *t = tar_new();
	add_node(t, "dev/null", AE_IFCHR, 1, 3);
	add_node(t, "dev/sda", AE_IFBLK, 8, 0);
	add_node(t, "dev/fifo", AE_IFIFO, 0, 0);
	add_file(t, "bin/su", "x", 04755);
	add_file(t, "bin/wall", "x", 02755);
	add_dir(t, "ro", 0555);
	add_file(t, "ro/inside", "x", 0644);
	apply_ok(f, t);
	assert_false(exists(f, "dev/null"));
	assert_false(exists(f, "dev/sda"));
	assert_true(S_ISFIFO(mode_of(f, "dev/fifo")));
	assert_int_equal(f->st.devices_skipped, 2);
	assert_int_equal(mode_of(f, "bin/su") & 07777, 0755);
	assert_int_equal(mode_of(f, "bin/wall") & 07777, 0755);
	assert_int_equal(f->st.setid_stripped, 2);
	assert_int_equal(mode_of(f, "ro") & 07777, 0755); /* keeps u+rwx */
}

static void test_privileged_owners_modes_devices(void **state)
{
	struct fx *f = *state;
	if (geteuid() != 0)
		skip();
	f->o.privileged = true;
	struct tar *t = tar_new();
	struct archive_entry *e = entry("owned", AE_IFREG, 04750);
	archive_entry_set_uid(e, 1234);
	archive_entry_set_gid(e, 5678);
	archive_entry_set_size(e, 1);
	put(t, e, "x", 1);
	e = entry("lnk", AE_IFLNK, 0777);
	archive_entry_set_symlink(e, "owned");
	archive_entry_set_uid(e, 42);
	put(t, e, NULL, 0);
	add_node(t, "null", AE_IFCHR, 1, 3);
	apply_ok(f, t);
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, "owned", &st, 0), 0);
	assert_int_equal(st.st_uid, 1234);
	assert_int_equal(st.st_gid, 5678);
	assert_int_equal(st.st_mode & 07777, 04750); /* chmod after chown keeps setuid */
	assert_int_equal(fstatat(f->rootfd, "lnk", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 42);
	assert_int_equal(fstatat(f->rootfd, "null", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISCHR(st.st_mode));
	assert_int_equal(st.st_rdev, makedev(1, 3));
}

/* root's trees: owners moved into root's box range, ids beyond it become the range's nobody */
static void test_privileged_owner_shift(void **state)
{
	struct fx *f = *state;
	if (geteuid() != 0)
		skip();
	f->o.privileged = true;
	f->o.uid_shift = 2000000000u;
	f->o.gid_shift = 2100000000u;
	struct tar *t = tar_new();
	struct archive_entry *e = entry("rootfile", AE_IFREG, 0644);
	archive_entry_set_size(e, 0);
	put(t, e, NULL, 0);
	e = entry("agentdir", AE_IFDIR, 0755);
	archive_entry_set_uid(e, 1000);
	archive_entry_set_gid(e, 1000);
	put(t, e, NULL, 0);
	e = entry("far", AE_IFLNK, 0777);
	archive_entry_set_symlink(e, "rootfile");
	archive_entry_set_uid(e, 70000);
	archive_entry_set_gid(e, 4000000000LL);
	put(t, e, NULL, 0);
	/* parents no entry names are the image root's, shifted like everything else */
	e = entry("implied/deeper/leaf", AE_IFREG, 0644);
	archive_entry_set_size(e, 0);
	put(t, e, NULL, 0);
	apply_ok(f, t);
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, "implied", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 2000000000u);
	assert_int_equal(st.st_gid, 2100000000u);
	assert_int_equal(fstatat(f->rootfd, "implied/deeper", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 2000000000u);
	assert_int_equal(fstatat(f->rootfd, "rootfile", &st, 0), 0);
	assert_int_equal(st.st_uid, 2000000000u);
	assert_int_equal(st.st_gid, 2100000000u);
	assert_int_equal(fstatat(f->rootfd, "agentdir", &st, 0), 0);
	assert_int_equal(st.st_uid, 2000001000u);
	assert_int_equal(st.st_gid, 2100001000u);
	assert_int_equal(fstatat(f->rootfd, "far", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_int_equal(st.st_uid, 2000000000u + 65534);
	assert_int_equal(st.st_gid, 2100000000u + 65534);
}

static void test_unprivileged_ignores_owners(void **state)
{
	struct fx *f = *state;
	f->o.privileged = false;
	struct tar *t = tar_new();
	struct archive_entry *e = entry("owned", AE_IFREG, 0644);
	archive_entry_set_uid(e, 1234);
	archive_entry_set_size(e, 0);
	put(t, e, NULL, 0);
	apply_ok(f, t);
	struct stat st;
	assert_int_equal(fstatat(f->rootfd, "owned", &st, 0), 0);
	assert_int_equal(st.st_uid, geteuid());
}

static ino_t ino_at(int dirfd, const char *path)
{
	struct stat st;
	assert_int_equal(fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

static void src_file(int dirfd, const char *path, const char *data, bool entry_mtime)
{
	assert_int_equal(write_file_atomic_at(dirfd, path, data, strlen(data), 0644), 0);
	struct timespec ts[2] = {{1700000000, 0}, {1700000000, 0}};
	if (entry_mtime)
		assert_int_equal(utimensat(dirfd, path, ts, AT_SYMLINK_NOFOLLOW), 0);
}

/* link_from (privileged: a profile build as root): a source file with the entry's size and
 * mtime is hard-linked (the tree shares its inode), its extended attributes replaced by the
 * entry's; anything else is written: another mtime, a name behind a symlink. */
static void test_link_from(void **state)
{
	struct fx *f = *state;
	if (!f->o.privileged)
		skip(); /* linking is for root's trees only (an ordinary user's upper is not theirs) */
	char p[160];
	snprintf(p, sizeof(p), "%s/src", f->base);
	assert_int_equal(mkdir(p, 0755), 0);
	_cleanup_close_ int src = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(src >= 0);
	assert_int_equal(mkdirat(src, "a", 0755), 0);
	assert_int_equal(mkdirat(src, "real", 0755), 0);
	src_file(src, "a/f", "linked", true);
	src_file(src, "b", "other-mtime", false);
	src_file(src, "real/g", "behind", true);
	assert_int_equal(symlinkat("real", src, "s"), 0);
	_cleanup_close_ int af = openat(src, "a/f", O_RDONLY | O_CLOEXEC);
	bool xattrs = fsetxattr(af, "user.overlay.origin", "x", 1, 0) == 0;
	struct tar *t = tar_new();
	add_dir(t, "a", 0755);
	struct archive_entry *e = entry("a/f", AE_IFREG, 0640);
	archive_entry_set_size(e, 6);
	archive_entry_xattr_add_entry(e, "user.note", "hi", 2);
	put(t, e, "linked", 6);
	add_file(t, "b", "other-mtime", 0644);
	add_dir(t, "s", 0755);
	add_file(t, "s/g", "behind", 0644);
	f->o.link_from = src;
	apply_ok(f, t);
	assert_int_equal(f->st.linked, 1);
	assert_int_equal(ino_at(f->rootfd, "a/f"), ino_at(src, "a/f"));
	assert_int_equal(mode_of(f, "a/f") & 07777, 0640);
	_cleanup_free_ char *c = content(f, "a/f");
	assert_string_equal(c, "linked");
	if (xattrs) {
		char v[8];
		assert_true(fgetxattr(af, "user.overlay.origin", v, sizeof(v)) < 0);
		assert_int_equal(fgetxattr(af, "user.note", v, sizeof(v)), 2);
	}
	assert_int_not_equal(ino_at(f->rootfd, "b"), ino_at(src, "b"));
	assert_int_not_equal(ino_at(f->rootfd, "s/g"), ino_at(src, "real/g"));
	_cleanup_free_ char *g = content(f, "s/g");
	assert_string_equal(g, "behind");
}

static void test_xattrs_user_only(void **state)
{
	struct fx *f = *state;
	struct tar *t = tar_new();
	struct archive_entry *e = entry("x", AE_IFREG, 0644);
	archive_entry_set_size(e, 0);
	archive_entry_xattr_add_entry(e, "user.note", "hi", 2);
	archive_entry_xattr_add_entry(e, "security.capability", "\x01\x00\x00\x02", 4);
	archive_entry_xattr_add_entry(e, "trusted.x", "t", 1);
	archive_entry_xattr_add_entry(e, "user.overlay.opaque", "y", 1);
	put(t, e, NULL, 0);
	apply_ok(f, t);
	char v[16] = "";
	_cleanup_close_ int fd = openat(f->rootfd, "x", O_RDONLY | O_CLOEXEC);
	ssize_t n = fgetxattr(fd, "user.note", v, sizeof(v));
	if (n < 0 && errno == ENOTSUP) {
		assert_int_equal(f->st.xattrs_skipped, 4); /* the filesystem has no user xattrs */
		return;
	}
	assert_int_equal(n, 2);
	assert_memory_equal(v, "hi", 2);
	assert_true(fgetxattr(fd, "security.capability", v, sizeof(v)) < 0);
	assert_true(fgetxattr(fd, "user.overlay.opaque", v, sizeof(v)) < 0);
	/* pax writers record each xattr twice (LIBARCHIVE. and SCHILY.), hence >= */
	assert_true(f->st.xattrs_skipped >= 3);
}

static void test_compressed(void **state)
{
	struct fx *f = *state;
	int filters[] = { ARCHIVE_FILTER_GZIP, ARCHIVE_FILTER_ZSTD };
	for (size_t i = 0; i < ARRAY_SIZE(filters); i++) {
		struct tar *t = tar_new_filtered(filters[i]);
		add_file(t, i ? "z" : "g", "compressed", 0644);
		apply_ok(f, t);
	}
	assert_true(exists(f, "g"));
	assert_true(exists(f, "z"));
}

static void test_empty_and_garbage(void **state)
{
	struct fx *f = *state;
	apply_ok(f, tar_new()); /* an empty layer is valid (Docker makes them) */
	assert_int_equal(f->st.entries, 0);
	struct tar *t = tar_new();
	tar_close(t);
	memset(t->buf, 'x', 1024);
	apply_fails(f, t, "cannot read the layer");
	t = tar_new();
	add_file(t, "big", "0123456789", 0644);
	tar_close(t);
	t->used -= 1024 + 512; /* cut into the data */
	apply_fails(f, t, "");
}

static void test_limits(void **state)
{
	struct fx *f = *state;
	f->o.max_entries = 3;
	struct tar *t = tar_new();
	for (int i = 0; i < 4; i++) {
		char n[8];
		snprintf(n, sizeof(n), "f%d", i);
		add_file(t, n, "", 0644);
	}
	apply_fails(f, t, "layer has more than 3 entries");

	layer_options_default(&f->o);
	f->o.max_bytes = 10;
	t = tar_new();
	add_file(t, "a", "123456", 0644);
	add_file(t, "b", "123456", 0644);
	apply_fails(f, t, "layer entry 'b': layer larger than 10 bytes");

	layer_options_default(&f->o);
	f->o.max_depth = 3;
	t = tar_new();
	add_file(t, "p/q/r", "", 0644);
	add_file(t, "x/b/c/d", "", 0644);
	apply_fails(f, t, "nested too deeply");

	layer_options_default(&f->o);
	char name[300];
	memset(name, 'n', 256);
	name[256] = '\0';
	t = tar_new();
	add_file(t, name, "", 0644);
	apply_fails(f, t, "name too long");
}

/* Every node below dirfd. */
static unsigned count_tree(int dirfd)
{
	_cleanup_strv_ char **names = NULL;
	assert_int_equal(dir_list_names(dirfd, &names), 0);
	unsigned n = 0;
	for (char **p = names; *p; p++) {
		n++;
		_cleanup_close_ int sub = openat(dirfd, *p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			n += count_tree(sub);
	}
	return n;
}

/* A tar of a few deep names and no directory entries made one directory per component
 * beyond the entry limit: the parents a name implies count as entries, and the applier
 * stops at the limit; the paths the layer keeps in memory are capped in bytes. */
static void test_limits_implicit_dirs(void **state)
{
	struct fx *f = *state;
	f->o.max_entries = 10;
	struct tar *t = tar_new();
	add_file(t, "a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/file", "x", 0644);
	apply_fails(f, t, "layer has more than 10 entries");
	assert_true(count_tree(f->rootfd) <= 10);
	/* within the limit the same shape applies, and says what it made */
	rm_rf_at(f->rootfd, "a");
	t = tar_new();
	add_file(t, "a/b/c/file", "x", 0644);
	apply_ok(f, t);
	assert_int_equal(f->st.implicit_dirs, 3);

	layer_options_default(&f->o);
	f->o.max_path_bytes = 300; /* the first name and its parent fit (204 bytes), the second does not */
	char deep[128];
	memset(deep, 'd', 100);
	strcpy(deep + 100, "/x");
	t = tar_new();
	add_file(t, deep, "", 0644);
	deep[0] = 'e';
	add_file(t, deep, "", 0644);
	apply_fails(f, t, "paths take more than 300 bytes");
}

int main(void)
{
#define T(x) cmocka_unit_test_setup_teardown(x, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_basic_tree),
		T(test_whiteouts),
		T(test_whiteout_spares_same_layer),
		T(test_opaque_dir),
		T(test_replacing_lower_entries),
		T(test_hardlinks),
		T(test_attack_hardlink_out_of_tree),
		T(test_attack_hardlink_not_extracted),
		T(test_attack_dotdot_entry),
		T(test_attack_absolute_symlink_then_write_through),
		T(test_attack_symlink_replaced_not_followed),
		T(test_devices_unprivileged),
		T(test_privileged_owners_modes_devices),
		T(test_privileged_owner_shift),
		T(test_unprivileged_ignores_owners),
		T(test_xattrs_user_only),
		T(test_link_from),
		T(test_compressed),
		T(test_empty_and_garbage),
		T(test_limits),
		T(test_limits_implicit_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
