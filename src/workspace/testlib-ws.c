/* testlib-ws.c — helpers for the workspace tests (see testlib-ws.h). Aborts on any setup
 * failure: a test that cannot build its fixture must not pass. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/mman.h>

#include "util/fdio.h"
#include "testlib-ws.h"

static _noreturn_ void die(const char *what)
{
	fprintf(stderr, "testlib: %s: %s\n", what, strerror(errno));
	abort();
}

char *tl_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *t = xasprintf("%s/paddock-ws-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(t))
		die("mkdtemp");
	return t;
}

void tl_rmrf(const char *path)
{
	(void)rm_rf(path);
}

static void mkparents(const char *full)
{
	_cleanup_free_ char *p = xstrdup(full);
	char *slash = strrchr(p, '/');
	if (!slash)
		return;
	*slash = '\0';
	if (mkdir_p(p, 0755) < 0)
		die("mkdir_p");
}

void tl_write(const char *root, const char *rel, const char *content, mode_t mode)
{
	_cleanup_free_ char *full = xasprintf("%s/%s", root, rel);
	mkparents(full);
	unlink(full);
	int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0 || fd_write_all(fd, content, strlen(content)) < 0 || fchmod(fd, mode) < 0)
		die(full);
	close(fd);
}

char *tl_read(const char *root, const char *rel)
{
	_cleanup_free_ char *full = xasprintf("%s/%s", root, rel);
	char *buf = NULL;
	if (read_file_at(AT_FDCWD, full, 1 << 24, &buf, NULL) < 0)
		return NULL;
	return buf;
}

bool tl_exists(const char *root, const char *rel)
{
	_cleanup_free_ char *full = xasprintf("%s/%s", root, rel);
	struct stat st;
	return lstat(full, &st) == 0;
}

int tl_opendir(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		die(path);
	return fd;
}

void tl_manifest_dir(const char *root, struct ws_manifest *ret)
{
	_cleanup_close_ int fd = tl_opendir(root);
	pd_err err = {0};
	if (ws_manifest_from_dir(fd, NULL, ret, NULL, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		abort();
	}
}

size_t tl_count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	size_t n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	closedir(d);
	return n;
}

struct tl_tar {
	struct archive *a;
	int fd;
	bool truncated;
};

struct tl_tar *tl_tar_new(void)
{
	struct tl_tar *t = xcalloc(1, sizeof(*t));
	t->fd = memfd_create("tl-tar", MFD_CLOEXEC);
	t->a = archive_write_new();
	if (t->fd < 0 || !t->a)
		die("tar");
	archive_write_set_format_pax_restricted(t->a);
	archive_write_set_bytes_per_block(t->a, 0); /* unbuffered: a cut stream holds its header */
	if (archive_write_open_fd(t->a, t->fd) != ARCHIVE_OK)
		die("archive_write_open_fd");
	return t;
}

static void put(struct tl_tar *t, const char *path, mode_t type, mode_t mode, int64_t size,
		const char *symlink, const char *hardlink)
{
	struct archive_entry *e = archive_entry_new();
	archive_entry_copy_pathname(e, path);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_size(e, size);
	if (symlink)
		archive_entry_copy_symlink(e, symlink);
	if (hardlink)
		archive_entry_copy_hardlink(e, hardlink);
	if (archive_write_header(t->a, e) < ARCHIVE_WARN) {
		fprintf(stderr, "tar header %s: %s\n", path, archive_error_string(t->a));
		abort();
	}
	archive_entry_free(e);
}

void tl_tar_file(struct tl_tar *t, const char *path, const char *content, mode_t mode)
{
	put(t, path, AE_IFREG, mode, (int64_t)strlen(content), NULL, NULL);
	if (archive_write_data(t->a, content, strlen(content)) != (la_ssize_t)strlen(content))
		die("archive_write_data");
}

void tl_tar_dir(struct tl_tar *t, const char *path, mode_t mode)
{
	put(t, path, AE_IFDIR, mode, 0, NULL, NULL);
}

void tl_tar_symlink(struct tl_tar *t, const char *path, const char *target)
{
	put(t, path, AE_IFLNK, 0777, 0, target, NULL);
}

void tl_tar_hardlink(struct tl_tar *t, const char *path, const char *target)
{
	put(t, path, AE_IFREG, 0644, 0, NULL, target);
}

void tl_tar_special(struct tl_tar *t, const char *path, mode_t type)
{
	put(t, path, type, 0644, 0, NULL, NULL);
}

/* A ustar header whose size field uses the base-256 form (for sizes past 8 GiB). Written
 * raw: the libarchive writer would have to be aborted mid-entry to leave it truncated. */
static void raw_header(int fd, const char *path, int64_t size)
{
	unsigned char h[512] = {0};
	snprintf((char *)h, 100, "%s", path);
	memcpy(h + 100, "0000644", 8);
	memcpy(h + 108, "0000000", 8);
	memcpy(h + 116, "0000000", 8);
	h[124] = 0x80;
	for (int i = 11; i >= 1; i--, size >>= 8)
		h[124 + i] = (unsigned char)(size & 0xff);
	memcpy(h + 136, "00000000000", 12);
	h[156] = '0';
	memcpy(h + 257, "ustar", 6);
	memcpy(h + 263, "00", 2);
	memset(h + 148, ' ', 8);
	unsigned sum = 0;
	for (size_t i = 0; i < sizeof(h); i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	h[155] = ' ';
	if (fd_write_all(fd, h, sizeof(h)) < 0)
		die("write");
}

void tl_tar_header_only(struct tl_tar *t, const char *path, int64_t declared_size)
{
	/* end the archive properly, then cut off its end-of-archive marker (two zero blocks;
	 * the writer is unblocked, so nothing follows them) and append the raw header */
	if (archive_write_close(t->a) != ARCHIVE_OK)
		die("archive_write_close");
	archive_write_free(t->a);
	t->a = NULL;
	off_t end = lseek(t->fd, 0, SEEK_END);
	if (end < 1024 || end % 512 != 0 || ftruncate(t->fd, end - 1024) < 0 ||
	    lseek(t->fd, 0, SEEK_END) != end - 1024)
		die("cutting the end marker");
	raw_header(t->fd, path, declared_size);
	t->truncated = true;
}

int tl_tar_finish(struct tl_tar *t)
{
	if (!t->truncated && archive_write_close(t->a) != ARCHIVE_OK)
		die("archive_write_close");
	if (t->a)
		archive_write_free(t->a);
	int fd = t->fd;
	free(t);
	if (lseek(fd, 0, SEEK_SET) < 0)
		die("lseek");
	return fd;
}

int tl_ingest(int tarfd, int staging_fd, const struct ws_manifest *base, const struct ws_limits *lim,
	      struct ws_manifest *ret, struct ws_notes *notes)
{
	struct ws_tar_opts o = {.limits = lim, .staging_fd = staging_fd, .base = base};
	pd_err err = {0};
	int r = ws_manifest_from_tar(tarfd, &o, ret, notes, &err);
	if (r < 0 && getenv("TL_VERBOSE"))
		fprintf(stderr, "ingest: %s\n", err.msg);
	return r;
}
