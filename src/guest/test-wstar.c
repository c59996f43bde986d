/* test-wstar.c — paddock-init's tar: the format (tarfmt.c) against libarchive in both
 * directions, its rejections, and the built-in (wstar.c) creating and extracting real trees,
 * run in a child with its stdin and stdout on files as the session gives them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/param.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest/wstar.h"
#include "proto/tarfmt.h"
#include "util/fdio.h"

/* --- the format ------------------------------------------------------------------------- */

static void test_parse_time(void **state)
{
	int64_t s;
	uint32_t ns;
	assert_true(tarfmt_parse_time("12", 2, &s, &ns));
	assert_true(s == 12 && ns == 0);
	assert_true(tarfmt_parse_time("12.5", 4, &s, &ns));
	assert_true(s == 12 && ns == 500000000);
	assert_true(tarfmt_parse_time("1.1234567891", 12, &s, &ns));
	assert_true(s == 1 && ns == 123456789);
	assert_true(tarfmt_parse_time("-1.25", 5, &s, &ns));
	assert_true(s == -2 && ns == 750000000);
	assert_false(tarfmt_parse_time("", 0, &s, &ns));
	assert_false(tarfmt_parse_time("1.", 2, &s, &ns));
	assert_false(tarfmt_parse_time("1x", 2, &s, &ns));
	assert_false(tarfmt_parse_time("99999999999999999999", 20, &s, &ns));
}

static void check_clean(const char *in, const char *want)
{
	char b[256];
	strcpy(b, in);
	if (!want) {
		assert_false(tarfmt_clean_path(b));
		return;
	}
	assert_true(tarfmt_clean_path(b));
	assert_string_equal(b, want);
}

static void test_clean_path(void **state)
{
	check_clean("./", "");
	check_clean(".", "");
	check_clean("a/b/", "a/b");
	check_clean("./a//./b", "a/b");
	check_clean("/etc/passwd", "etc/passwd");
	check_clean("a/../b", NULL);
	check_clean("..", NULL);
	check_clean("a/..", NULL);
	check_clean("..a/b..", "..a/b..");
}

/* Encodes e with content into a buffer, and the end of the archive. */
static size_t encode(uint8_t *out, const struct tarfmt_entry *e, const char *content)
{
	size_t n = tarfmt_encode(out, e);
	assert_true(n > 0 && n % TARFMT_BLOCK == 0);
	if (content) {
		memcpy(out + n, content, e->size);
		memset(out + n + e->size, 0, tarfmt_pad(e->size));
		n += e->size + tarfmt_pad(e->size);
	}
	memset(out + n, 0, 2 * TARFMT_BLOCK);
	return n + 2 * TARFMT_BLOCK;
}

static struct tarfmt_entry *entry(enum tarfmt_type t, const char *path, const char *link)
{
	struct tarfmt_entry *e = xcalloc(1, sizeof(*e));
	e->type = t;
	strcpy(e->path, path);
	strcpy(e->link, link ? link : "");
	e->mode = 0640;
	e->mtime_s = 1700000000, e->mtime_ns = 123456789;
	e->uid = 1000, e->gid = 1000;
	return e;
}

/* What tarfmt writes, libarchive reads as meant: long and raw-byte names, a long link, ns
 * times, negative times, ids past ustar's fields. */
static void test_encode_read_by_libarchive(void **state)
{
	char longname[301];
	memset(longname, 'n', 300);
	longname[300] = 0;
	longname[150] = '/';
	struct tarfmt_entry *es[] = {
		entry(TARFMT_FILE, "short.txt", NULL), entry(TARFMT_FILE, longname, NULL),
		entry(TARFMT_SYMLINK, "raw\xff\x01name", longname), entry(TARFMT_DIR, "d/", NULL),
		entry(TARFMT_FIFO, "fifo", NULL),
	};
	es[0]->size = 5;
	es[1]->uid = 1u << 30, es[1]->mtime_s = 5, es[1]->mtime_ns = 250000000;
	es[1]->size = 0;
	uint8_t *buf = xmalloc(64 * 1024);
	size_t n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(es); i++) {
		size_t k = tarfmt_encode(buf + n, es[i]);
		assert_true(k > 0);
		n += k;
		if (i == 0) {
			memcpy(buf + n, "hello", 5);
			memset(buf + n + 5, 0, tarfmt_pad(5));
			n += 5 + tarfmt_pad(5);
		}
	}
	memset(buf + n, 0, 1024);
	n += 1024;
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_memory(a, buf, n), ARCHIVE_OK);
	struct archive_entry *ae;
	for (size_t i = 0; i < ARRAY_SIZE(es); i++) {
		assert_true(archive_read_next_header(a, &ae) >= ARCHIVE_WARN);
		assert_string_equal(archive_entry_pathname(ae), es[i]->path);
		assert_int_equal(archive_entry_mtime(ae), es[i]->mtime_s);
		assert_int_equal(archive_entry_mtime_nsec(ae), es[i]->mtime_ns);
		assert_int_equal(archive_entry_uid(ae), es[i]->uid);
		assert_int_equal(archive_entry_perm(ae), 0640);
		if (es[i]->type == TARFMT_SYMLINK)
			assert_string_equal(archive_entry_symlink(ae), longname);
		if (i == 0) {
			char got[8] = {0};
			assert_int_equal(archive_read_data(a, got, sizeof(got)), 5);
			assert_string_equal(got, "hello");
		}
	}
	assert_int_equal(archive_entry_filetype(ae), AE_IFIFO);
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_EOF);
	archive_read_free(a);
	for (size_t i = 0; i < ARRAY_SIZE(es); i++)
		free(es[i]);
	free(buf);
}

static void test_encode_rejects(void **state)
{
	uint8_t buf[TARFMT_HDR_MAX];
	struct tarfmt_entry *e = entry(TARFMT_FILE, "x", NULL);
	e->path[0] = 0;
	assert_int_equal(tarfmt_encode(buf, e), 0);
	strcpy(e->path, "x");
	e->mode = 010000;
	assert_int_equal(tarfmt_encode(buf, e), 0);
	e->mode = 0644, e->type = TARFMT_SYMLINK; /* a link without a target */
	assert_int_equal(tarfmt_encode(buf, e), 0);
	e->type = TARFMT_DIR, e->size = 1; /* content on a directory */
	assert_int_equal(tarfmt_encode(buf, e), 0);
	free(e);
}

/* What libarchive writes in each format paddock's host side and GNU tar use, tarfmt reads. */
static void read_libarchive_format(int (*set_format)(struct archive *), bool binary)
{
	char longname[201];
	memset(longname, 'q', 200);
	longname[200] = 0;
	size_t used = 0;
	uint8_t *buf = xmalloc(256 * 1024);
	struct archive *w = archive_write_new();
	assert_int_equal(set_format(w), ARCHIVE_OK);
	if (binary)
		assert_true(archive_write_set_format_option(w, "pax", "hdrcharset", "BINARY") >= ARCHIVE_WARN);
	assert_int_equal(archive_write_open_memory(w, buf, 256 * 1024, &used), ARCHIVE_OK);
	struct archive_entry *ae = archive_entry_new();
	const char *names[] = {"./", "./file", longname, "./link", "./hard"};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		archive_entry_clear(ae);
		archive_entry_copy_pathname(ae, names[i]);
		archive_entry_set_perm(ae, 0751);
		archive_entry_set_mtime(ae, 1600000000, 5);
		archive_entry_set_filetype(ae, i == 0 ? AE_IFDIR : i == 3 ? AE_IFLNK : AE_IFREG);
		if (i == 3)
			archive_entry_copy_symlink(ae, "file");
		if (i == 4)
			archive_entry_copy_hardlink(ae, "./file");
		if (i == 1 || i == 2)
			archive_entry_set_size(ae, 600);
		assert_true(archive_write_header(w, ae) >= ARCHIVE_WARN);
		if (i == 1 || i == 2) {
			char data[600];
			memset(data, 'a' + (int)i, sizeof(data));
			assert_int_equal(archive_write_data(w, data, sizeof(data)), 600);
		}
	}
	archive_entry_free(ae);
	assert_int_equal(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);

	struct tarfmt_mem m = {buf, used, 0};
	struct tarfmt_reader r;
	tarfmt_reader_init(&r, tarfmt_mem_read, &m);
	struct tarfmt_entry *e = xmalloc(sizeof(*e));
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		assert_int_equal(tarfmt_next(&r, e), 1);
		assert_string_equal(e->path, names[i]);
		assert_int_equal(e->mode, 0751);
		assert_int_equal(e->mtime_s, 1600000000);
		if (i == 1) { /* content read; the long one's is skipped by the next call */
			char data[600];
			assert_int_equal(e->size, 600);
			assert_int_equal(tarfmt_read_data(&r, data, 100), 100);
			assert_int_equal(tarfmt_read_data(&r, data, 600), 500);
			assert_int_equal(tarfmt_read_data(&r, data, 600), 0);
			assert_int_equal(data[0], 'b');
		}
		assert_int_equal(e->type, i == 0 ? TARFMT_DIR : i == 3 ? TARFMT_SYMLINK : i == 4 ? TARFMT_HARDLINK : TARFMT_FILE);
		if (i >= 3)
			assert_string_equal(e->link, i == 3 ? "file" : "./file");
	}
	assert_int_equal(tarfmt_next(&r, e), 0);
	assert_int_equal(tarfmt_next(&r, e), 0);
	free(e);
	free(buf);
}

static void test_read_pax_restricted_binary(void **state) { read_libarchive_format(archive_write_set_format_pax_restricted, true); }
static void test_read_pax(void **state) { read_libarchive_format(archive_write_set_format_pax, false); }
static void test_read_gnutar(void **state) { read_libarchive_format(archive_write_set_format_gnutar, false); }

static int read_all(const uint8_t *buf, size_t len)
{
	struct tarfmt_mem m = {buf, len, 0};
	struct tarfmt_reader r;
	tarfmt_reader_init(&r, tarfmt_mem_read, &m);
	_cleanup_free_ struct tarfmt_entry *e = xmalloc(sizeof(*e));
	char data[512];
	int n;
	while ((n = tarfmt_next(&r, e)) > 0)
		while ((n = (int)tarfmt_read_data(&r, data, sizeof(data))) > 0)
			;
	return n;
}

static void rechecksum(uint8_t *h)
{
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (int i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

static void test_read_rejects(void **state)
{
	uint8_t buf[8192];
	struct tarfmt_entry *e = entry(TARFMT_FILE, "f", NULL);
	e->size = 3;
	size_t n = encode(buf, e, "abc");
	assert_int_equal(read_all(buf, n), 0);
	assert_int_equal(read_all(buf, 2000), -EBADMSG); /* the pax header, the entry, cut in its content */
	size_t ent = n - 1024 - 512 - 512; /* the entry's own header (after the pax header) */
	buf[ent + 10] ^= 1; /* checksum */
	assert_int_equal(read_all(buf, n), -EBADMSG);
	buf[ent + 10] ^= 1;
	buf[ent + 156] = 'S'; /* a GNU sparse file: not supported */
	rechecksum(buf + ent);
	assert_int_equal(read_all(buf, n), -EBADMSG);
	buf[ent + 156] = '0';
	memcpy(buf + ent + 257, "xxxxx", 5); /* not ustar */
	rechecksum(buf + ent);
	assert_int_equal(read_all(buf, n), -EBADMSG);
	/* a pax record whose length runs past the header's data */
	n = encode(buf, e, "abc");
	char *rec = (char *)buf + 512;
	assert_true(rec[0] >= '1' && rec[0] <= '9');
	rec[0] = '9', rec[1] = '9';
	assert_int_equal(read_all(buf, n), -EBADMSG);
	/* a NUL inside a pax path */
	n = encode(buf, e, "abc");
	char *p = strstr(rec, "mtime=");
	p[6] = 'x';
	assert_int_equal(read_all(buf, n), -EBADMSG);
	/* base-256 size */
	e->mtime_ns = 0;
	n = encode(buf, e, "abc");
	memset(buf + 124, 0, 12);
	buf[124] = 0x80, buf[135] = 3;
	rechecksum(buf);
	assert_int_equal(read_all(buf, n), 0);
	free(e);
}

/* --- the built-in --------------------------------------------------------------------------- */

static char tmp[] = "/tmp/test-wstar-XXXXXX";

/* Runs the built-in with argv, stdin from in_path (NULL: /dev/null), stdout to out_path
 * (NULL: /dev/null); its exit status. */
static int run(char **argv, const char *in_path, const char *out_path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int in = open(in_path ? in_path : "/dev/null", O_RDONLY);
		int out = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int devnull = open("/dev/null", O_WRONLY);
		if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || (!getenv("WSTAR_VERBOSE") && dup2(devnull, 2) < 0))
			_exit(99);
		_exit(guest_wstar_main(argv));
	}
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static char *at(const char *rel) { return xasprintf("%s/%s", tmp, rel); }

static char *get(const char *rel)
{
	_cleanup_free_ char *p = at(rel);
	char *buf = NULL;
	size_t len;
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return NULL;
	assert_int_equal(read_fd_all(fd, 1 << 20, &buf, &len), 0);
	close(fd);
	buf = xrealloc(buf, len + 1);
	buf[len] = 0;
	return buf;
}

static mode_t mode_of(const char *rel)
{
	_cleanup_free_ char *p = at(rel);
	struct stat st;
	assert_int_equal(lstat(p, &st), 0);
	return st.st_mode;
}

static void sh(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	_cleanup_free_ char *cmd = NULL;
	assert_true(vasprintf(&cmd, fmt, ap) >= 0);
	va_end(ap);
	_cleanup_free_ char *full = xasprintf("cd %s && %s", tmp, cmd);
	assert_int_equal(system(full), 0);
}

static int setup(void **state)
{
	if (!mkdtemp(tmp))
		return -1;
	umask(022);
	return 0;
}

static int teardown(void **state)
{
	_cleanup_free_ char *cmd = xasprintf("chmod -R u+rwx %s; rm -rf %s", tmp, tmp);
	return system(cmd) == 0 ? 0 : -1;
}

/* A tree through -c and -x comes out the same: contents, modes (a read-only directory too),
 * mtimes, symlinks, long and raw-byte names, an empty directory, a FIFO. */
static void test_roundtrip(void **state)
{
	sh("rm -rf src dst out.tar && mkdir -p src/a/b src/empty src/ro && cd src && echo one >a/b/f && chmod 751 a/b/f && "
	   "ln -s a/b/f link && ln -s /etc/passwd abs && echo x >ro/in && chmod 555 ro && mkfifo fifo && "
	   "touch -d @1600000000.5 a/b/f && touch -h -d @1500000000 link && "
	   "echo raw >\"$(printf 'n\\001\\377')\" && "
	   "D=$(printf 'd%%.0s' $(seq 1 60))/$(printf 'e%%.0s' $(seq 1 60)) && mkdir -p $D && echo long >$D/$(printf 'f%%.0s' $(seq 1 60))");
	_cleanup_free_ char *src = at("src"), *dst = at("dst"), *out = at("out.tar");
	char *c[] = {WSTAR_BUILTIN, "-c", src, NULL};
	assert_int_equal(run(c, NULL, out), 0);
	assert_int_equal(mkdir(dst, 0755), 0);
	char *x[] = {WSTAR_BUILTIN, "-x", dst, NULL};
	assert_int_equal(run(x, out, NULL), 0);
	/* names, types, modes, sizes, link targets and mtimes as find prints them */
	sh("(cd src && find . -printf '%%p %%y %%m %%s %%l %%T@\\n' | grep -av '^\\. ' | sort) >a.lst && "
	   "(cd dst && find . -printf '%%p %%y %%m %%s %%l %%T@\\n' | grep -av '^\\. ' | sort) >b.lst && cmp a.lst b.lst");
	_cleanup_free_ char *f = get("dst/a/b/f");
	assert_string_equal(f, "one\n");
	assert_int_equal(mode_of("dst/ro") & 07777, 0555);
	/* the stream libarchive reads: "./" first, directories with a trailing slash */
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	assert_int_equal(archive_read_open_filename(a, out, 10240), ARCHIVE_OK);
	struct archive_entry *ae;
	assert_int_equal(archive_read_next_header(a, &ae), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(ae), "./");
	size_t n = 1;
	while (archive_read_next_header(a, &ae) >= ARCHIVE_WARN)
		n++;
	assert_int_equal(n, 15);
	archive_read_free(a);
}

/* -x into a tree that has things in the way: an existing directory keeps its mode, a file or
 * symlink where an entry goes is replaced, a symlink as a parent is never followed, ".."
 * and device nodes are refused (status 2) while the rest goes in. */
static void test_extract_over(void **state)
{
	sh("rm -rf dst outside && mkdir -p dst/keep dst/via outside && chmod 700 dst/keep && echo old >dst/file && "
	   "ln -s ../outside dst/through && ln -s /nonexistent dst/slot");
	uint8_t *buf = xmalloc(64 * 1024);
	size_t n = 0;
	struct {
		enum tarfmt_type t;
		const char *path, *link, *content;
	} es[] = {
		{TARFMT_DIR, "./", NULL, NULL},
		{TARFMT_DIR, "./keep/", NULL, NULL},
		{TARFMT_FILE, "./file", NULL, "new"},
		{TARFMT_FILE, "./slot", NULL, "slot"},
		{TARFMT_FILE, "./through/planted", NULL, "no"},
		{TARFMT_FILE, "../escape", NULL, "no"},
		{TARFMT_CHR, "./dev", NULL, NULL},
		{TARFMT_HARDLINK, "./hard", "./file", NULL},
		{TARFMT_FILE, "./new/deep/f", NULL, "deep"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(es); i++) {
		_cleanup_free_ struct tarfmt_entry *e = entry(es[i].t, es[i].path, es[i].link);
		e->mode = 0777;
		e->size = es[i].content ? strlen(es[i].content) : 0;
		n += encode(buf + n, e, es[i].content) - 1024;
	}
	memset(buf + n, 0, 1024);
	_cleanup_free_ char *in = at("in.tar"), *dst = at("dst");
	int fd = open(in, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fd_write_all(fd, buf, n + 1024), 0);
	close(fd);
	free(buf);
	char *x[] = {WSTAR_BUILTIN, "-x", dst, NULL};
	assert_int_equal(run(x, in, NULL), 2);
	assert_int_equal(mode_of("dst/keep") & 07777, 0700);
	_cleanup_free_ char *f = get("dst/file"), *s = get("dst/slot"), *h = get("dst/hard"), *d = get("dst/new/deep/f");
	assert_string_equal(f, "new");
	assert_string_equal(s, "slot");
	assert_true(S_ISREG(mode_of("dst/slot")));
	assert_string_equal(h, "new");
	assert_string_equal(d, "deep");
	assert_int_equal(mode_of("dst/file") & 07777, 0777);
	_cleanup_free_ char *planted = get("outside/planted"), *esc = get("escape");
	assert_null(planted);
	assert_null(esc);
	assert_true(access(dst, F_OK) == 0);
	_cleanup_free_ char *dev = at("dst/dev");
	assert_int_equal(access(dev, F_OK), -1);
}

/* -c --list: exactly the listed names, each alone (a directory without its entries); a
 * missing name is status 2 with the others still sent. --mkdir makes the destination. */
static void test_list_and_mkdir(void **state)
{
	sh("rm -rf src out2 && mkdir -p src/d/sub && echo a >src/d/a && echo b >src/b");
	_cleanup_free_ char *src = at("src"), *lst = at("list"), *out = at("out.tar"), *dst = at("out2/x/y");
	int fd = open(lst, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_int_equal(fd_write_all(fd, "d\0b\0gone\0", 9), 0);
	close(fd);
	char *c[] = {WSTAR_BUILTIN, "-c", src, "--list", NULL};
	assert_int_equal(run(c, lst, out), 2);
	char *x[] = {WSTAR_BUILTIN, "-x", dst, "--mkdir", NULL};
	assert_int_equal(run(x, out, NULL), 0);
	_cleanup_free_ char *b = get("out2/x/y/b"), *a = get("out2/x/y/d/a");
	assert_string_equal(b, "b\n");
	assert_null(a);
	assert_true(S_ISDIR(mode_of("out2/x/y/d")));
	/* a cut stream is status 2, not success */
	sh("head -c 700 out.tar >cut.tar");
	_cleanup_free_ char *cut = at("cut.tar");
	assert_int_equal(run(x, cut, NULL), 2);
	char *bad[] = {WSTAR_BUILTIN, "-q", src, NULL};
	assert_int_equal(run(bad, NULL, NULL), 2);
}

/* A sparse file (its holes travel as zeros) comes back sparse, with the same bytes: a
 * saved workspace must fit the box it came from. */
static void test_sparse_comes_back_sparse(void **state)
{
	sh("rm -rf src dst && mkdir -p src dst && truncate -s 64M src/sp && printf data | dd of=src/sp bs=1 seek=8388608 conv=notrunc status=none && "
	   "printf tail | dd of=src/sp bs=1 seek=67108860 conv=notrunc status=none && truncate -s 32M src/hole-at-end");
	_cleanup_free_ char *src = at("src"), *dst = at("dst"), *out = at("sp.tar");
	char *c[] = {WSTAR_BUILTIN, "-c", src, NULL};
	assert_int_equal(run(c, NULL, out), 0);
	char *x[] = {WSTAR_BUILTIN, "-x", dst, NULL};
	assert_int_equal(run(x, out, NULL), 0);
	sh("cmp src/sp dst/sp && cmp src/hole-at-end dst/hole-at-end");
	_cleanup_free_ char *sp = at("dst/sp"), *he = at("dst/hole-at-end");
	struct stat st;
	assert_int_equal(stat(sp, &st), 0);
	assert_int_equal(st.st_size, 64 << 20);
	assert_true(st.st_blocks * 512 < (1 << 20));
	assert_int_equal(stat(he, &st), 0);
	assert_int_equal(st.st_size, 32 << 20);
	assert_true(st.st_blocks * 512 < (1 << 20));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_clean_path),
		cmocka_unit_test(test_encode_read_by_libarchive),
		cmocka_unit_test(test_encode_rejects),
		cmocka_unit_test(test_read_pax_restricted_binary),
		cmocka_unit_test(test_read_pax),
		cmocka_unit_test(test_read_gnutar),
		cmocka_unit_test(test_read_rejects),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_extract_over),
		cmocka_unit_test(test_list_and_mkdir),
		cmocka_unit_test(test_sparse_comes_back_sparse),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
