/* test-capture.c — an overlay upper directory captured as a layer and applied back onto the
 * lower tree gives the merged view: files, symlinks, hard links, xattrs, whiteouts (0:0
 * character devices), opaque directories, skipped paths; redirect/metacopy uppers refused;
 * the same tree always gives the same bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <locale.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "image/capture.h"
#include "image/layer.h"
#include "util/fdio.h"

struct fx {
	char base[64];  /* base/upper: the build layer; base/lower: the image it goes onto */
	int upper, lower;
	pd_err err;
};

static int dir_at(const char *base, const char *name)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", base, name);
	assert_int_equal(mkdir(p, 0755), 0);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void put(int dfd, const char *path, const char *text, mode_t mode)
{
	assert_int_equal(write_file_atomic_at(dfd, path, text, strlen(text), mode), 0);
}

static char *get(int dfd, const char *path)
{
	char *buf = NULL;
	size_t len;
	if (read_file_at(dfd, path, 1 << 20, &buf, &len) < 0)
		return NULL;
	return buf;
}

static int setup(void **state)
{
	struct fx *f = xcalloc(1, sizeof(*f));
	/* /var/tmp: a disk file system with user xattrs wherever /tmp is an old tmpfs */
	strcpy(f->base, "/var/tmp/test-capture.XXXXXX");
	assert_non_null(mkdtemp(f->base));
	f->upper = dir_at(f->base, "upper");
	f->lower = dir_at(f->base, "lower");
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	close(f->upper);
	close(f->lower);
	rm_rf(f->base);
	free(f);
	return 0;
}

/* Captures upper into a temp file and returns its fd at offset 0. */
static int capture(struct fx *f, char *const *skip, struct capture_stats *st, int *ret)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/layer.tar", f->base);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	int r = img_capture_upper(f->upper, fd, skip, st, &f->err);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	*ret = fd;
	return r;
}

static void apply(struct fx *f, int tar)
{
	struct layer_options o;
	layer_options_default(&o);
	o.privileged = false;
	assert_int_equal(layer_apply_fd(f->lower, tar, &o, NULL, &f->err), 0);
}

static void whiteout(int dfd, const char *name)
{
	/* what overlayfs writes for a deleted lower entry (allowed unprivileged since 5.8) */
	assert_int_equal(mknodat(dfd, name, S_IFCHR | 0, makedev(0, 0)), 0);
}

static void test_merged_view(void **state)
{
	struct fx *f = *state;
	/* lower: what the base image has */
	put(f->lower, "keep", "base\n", 0644);
	put(f->lower, "gone", "base\n", 0644);
	assert_int_equal(mkdirat(f->lower, "opq", 0755), 0);
	put(f->lower, "opq/old", "base\n", 0644);
	assert_int_equal(mkdirat(f->lower, "merged", 0755), 0);
	put(f->lower, "merged/old", "base\n", 0644);
	/* upper: what the install commands did */
	put(f->upper, "keep", "changed\n", 0600);
	whiteout(f->upper, "gone");
	assert_int_equal(mkdirat(f->upper, "opq", 0700), 0);
	char p[128];
	snprintf(p, sizeof(p), "%s/upper/opq", f->base);
	if (setxattr(p, "user.overlay.opaque", "y", 1, 0) < 0)
		fail_msg("user xattrs unsupported on %s: %s", f->base, strerror(errno));
	put(f->upper, "opq/new", "new\n", 0644);
	assert_int_equal(mkdirat(f->upper, "merged", 0755), 0);
	put(f->upper, "merged/new", "new\n", 0644);
	snprintf(p, sizeof(p), "%s/upper/merged", f->base);
	assert_int_equal(setxattr(p, "user.overlay.origin", "xx", 2, 0), 0);
	assert_int_equal(mkdirat(f->upper, "bin", 0755), 0);
	put(f->upper, "bin/tool", "#!/bin/sh\n", 0755);
	assert_int_equal(linkat(f->upper, "bin/tool", f->upper, "bin/tool2", 0), 0);
	assert_int_equal(symlinkat("tool", f->upper, "bin/t"), 0);
	snprintf(p, sizeof(p), "%s/upper/bin/tool", f->base);
	assert_int_equal(setxattr(p, "user.note", "hi", 2, 0), 0);
	assert_int_equal(mkdirat(f->upper, "tmp", 01777), 0);
	put(f->upper, "tmp/scratch", "x", 0644);
	put(f->upper, "etc-passwd", "generated", 0644);
	put(f->upper, "F\xc5\x91t\xc3\xa9", "utf-8 name", 0644);     /* not ASCII (C locale) */
	put(f->upper, "raw\xff", "not even utf-8", 0644);

	char *skip[] = {"tmp", "etc-passwd", NULL};
	struct capture_stats st;
	int tar;
	assert_int_equal(capture(f, skip, &st, &tar), 0);
	assert_int_equal(st.whiteouts, 1);
	assert_int_equal(st.opaque_dirs, 1);
	assert_int_equal(st.hardlinks, 1);
	assert_int_equal(st.skipped, 2);
	apply(f, tar);
	close(tar);

	_cleanup_free_ char *keep = get(f->lower, "keep");
	assert_string_equal(keep, "changed\n");
	struct stat s;
	assert_int_equal(fstatat(f->lower, "keep", &s, 0), 0);
	assert_int_equal(s.st_mode & 0777, 0600);
	assert_int_equal(fstatat(f->lower, "gone", &s, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(fstatat(f->lower, "opq/old", &s, 0), -1);     /* opaque: lower emptied */
	assert_int_equal(fstatat(f->lower, "opq/new", &s, 0), 0);
	assert_int_equal(fstatat(f->lower, "merged/old", &s, 0), 0);   /* merged: lower kept */
	assert_int_equal(fstatat(f->lower, "merged/new", &s, 0), 0);
	struct stat a, b;
	assert_int_equal(fstatat(f->lower, "bin/tool", &a, 0), 0);
	assert_int_equal(fstatat(f->lower, "bin/tool2", &b, 0), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(a.st_mode & 0777, 0755);
	char target[16] = {0};
	assert_int_equal(readlinkat(f->lower, "bin/t", target, sizeof(target) - 1), 4);
	assert_string_equal(target, "tool");
	snprintf(p, sizeof(p), "%s/lower/bin/tool", f->base);
	char v[8] = {0};
	assert_int_equal(getxattr(p, "user.note", v, sizeof(v)), 2);
	assert_string_equal(v, "hi");
	snprintf(p, sizeof(p), "%s/lower/merged", f->base);
	assert_int_equal(getxattr(p, "user.overlay.origin", v, sizeof(v)), -1); /* bookkeeping dropped */
	assert_int_equal(fstatat(f->lower, "F\xc5\x91t\xc3\xa9", &s, 0), 0);
	assert_int_equal(fstatat(f->lower, "raw\xff", &s, 0), 0);
	assert_int_equal(fstatat(f->lower, "tmp/scratch", &s, 0), -1);
	assert_int_equal(fstatat(f->lower, "etc-passwd", &s, 0), -1);
}

static void test_redirect_refused(void **state)
{
	struct fx *f = *state;
	assert_int_equal(mkdirat(f->upper, "moved", 0755), 0);
	char p[128];
	snprintf(p, sizeof(p), "%s/upper/moved", f->base);
	assert_int_equal(setxattr(p, "user.overlay.redirect", "/orig", 5, 0), 0);
	int tar;
	assert_int_equal(capture(f, NULL, NULL, &tar), -EOPNOTSUPP);
	assert_non_null(strstr(f->err.msg, "moved"));
	close(tar);
}

static void test_reproducible(void **state)
{
	struct fx *f = *state;
	for (int i = 0; i < 50; i++) {
		char name[16];
		snprintf(name, sizeof(name), "f%02d", (i * 37) % 50);
		put(f->upper, name, name, 0644);
	}
	int t1, t2;
	assert_int_equal(capture(f, NULL, NULL, &t1), 0);
	_cleanup_free_ char *b1 = NULL, *b2 = NULL;
	size_t l1, l2;
	assert_int_equal(read_fd_all(t1, 1 << 24, &b1, &l1), 0);
	close(t1);
	assert_int_equal(capture(f, NULL, NULL, &t2), 0);
	assert_int_equal(read_fd_all(t2, 1 << 24, &b2, &l2), 0);
	close(t2);
	if (l1 != l2)
		fail_msg("%zu vs %zu bytes", l1, l2);
	assert_memory_equal(b1, b2, l1);
	/* UTF-8 names: no hdrcharset=BINARY, which would put a pax header on every entry */
	assert_null(memmem(b1, l1, "hdrcharset", 10));
	/* sorted: f00 comes before f49 in the stream */
	assert_true(memmem(b1, l1, "f00", 3) < memmem(b1, l1, "f49", 3));
}

int main(void)
{
	setlocale(LC_CTYPE, "C.UTF-8"); /* as the capture helper runs (capture.h) */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_merged_view, setup, teardown),
		cmocka_unit_test_setup_teardown(test_redirect_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reproducible, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
