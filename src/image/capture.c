/* capture.c — an overlayfs upper directory as an OCI layer (capture.h). */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "image/capture.h"
#include "util/fdio.h"

#define OVL_XATTR "user.overlay."
#define XATTR_LIST_MAX_BYTES (64 * 1024)
#define XATTR_VALUE_MAX_BYTES (64 * 1024)

struct link_seen {
	dev_t dev;
	ino_t ino;
	char *path;
};

struct capture {
	struct archive *a;
	char *const *skip;
	struct capture_stats st;
	struct link_seen *links;
	size_t n_links;
	pd_err *err;
};

static int arc_fail(struct capture *c, const char *path)
{
	int e = archive_errno(c->a);
	return pd_error_msg(c->err, e > 0 ? e : EIO, "cannot write the layer entry %s: %s", path,
			    archive_error_string(c->a));
}

static bool skipped(const struct capture *c, const char *rel)
{
	for (char *const *s = c->skip; s && *s; s++)
		if (streq(*s, rel))
			return true;
	return false;
}

/* The xattr value of fd, or -errno (-ENODATA when absent). */
static ssize_t get_xattr(int fd, const char *name, char *buf, size_t size)
{
	ssize_t n = fgetxattr(fd, name, buf, size);
	return n < 0 ? -errno : n;
}

/* user.* attributes onto the entry; user.overlay.* are overlayfs's: redirect and metacopy
 * refuse the capture (the entry's content is not in this tree), the rest are dropped. */
static int add_xattrs(struct capture *c, int fd, const char *path, struct archive_entry *e)
{
	char list[XATTR_LIST_MAX_BYTES];
	ssize_t n = flistxattr(fd, list, sizeof(list));
	if (n < 0)
		return errno == ENOTSUP ? 0 : pd_error(c->err, errno, "cannot list the attributes of %s", path);
	for (const char *k = list; k < list + n; k += strlen(k) + 1) {
		if (!startswith(k, "user."))
			continue;
		if (startswith(k, OVL_XATTR)) {
			if (streq(k, OVL_XATTR "redirect") || streq(k, OVL_XATTR "metacopy"))
				return pd_error_msg(c->err, EOPNOTSUPP,
						    "%s carries %s (a renamed or metadata-only copy): not expressible as a layer",
						    path, k);
			continue;
		}
		_cleanup_free_ char *v = xmalloc(XATTR_VALUE_MAX_BYTES);
		ssize_t len = get_xattr(fd, k, v, XATTR_VALUE_MAX_BYTES);
		if (len == -ENODATA)
			continue;
		if (len < 0)
			return pd_error(c->err, (int)-len, "cannot read attribute %s of %s", k, path);
		archive_entry_xattr_add_entry(e, k, v, (size_t)len);
	}
	return 0;
}

static void set_stat(struct archive_entry *e, const struct stat *st)
{
	archive_entry_set_perm(e, st->st_mode & 07777);
	archive_entry_set_uid(e, st->st_uid);
	archive_entry_set_gid(e, st->st_gid);
	archive_entry_set_mtime(e, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
}

static int write_header(struct capture *c, struct archive_entry *e, const char *path)
{
	if (archive_write_header(c->a, e) != ARCHIVE_OK)
		return arc_fail(c, path);
	c->st.entries++;
	return 0;
}

/* ".wh.NAME" (or ".wh..wh..opq" when name is NULL) in directory dir ("" = the root). */
static int write_marker(struct capture *c, const char *dir, const char *name)
{
	_cleanup_free_ char *p = xasprintf("%s%s.wh.%s", dir, *dir ? "/" : "", name ? name : ".wh..opq");
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, p);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0);
	archive_entry_set_size(e, 0);
	int r = write_header(c, e, p);
	archive_entry_free(e);
	return r;
}

static int copy_data(struct capture *c, int fd, const char *path)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_error(c->err, errno, "cannot read %s", path);
		if (n == 0)
			return 0;
		if (archive_write_data(c->a, buf, (size_t)n) != n)
			return arc_fail(c, path);
		c->st.bytes += (uint64_t)n;
	}
}

/* A second name of a file already written becomes a hard link entry to the first. */
static const char *link_target(struct capture *c, const struct stat *st, const char *path)
{
	if (st->st_nlink < 2)
		return NULL;
	for (size_t i = 0; i < c->n_links; i++)
		if (c->links[i].dev == st->st_dev && c->links[i].ino == st->st_ino)
			return c->links[i].path;
	c->links = xrealloc(c->links, (c->n_links + 1) * sizeof(*c->links));
	c->links[c->n_links++] = (struct link_seen){st->st_dev, st->st_ino, xstrdup(path)};
	return NULL;
}

static int walk(struct capture *c, int dirfd, const char *rel, unsigned depth);

static int one_entry(struct capture *c, int dirfd, const char *dir, const char *name, unsigned depth)
{
	_cleanup_free_ char *path = xasprintf("%s%s%s", dir, *dir ? "/" : "", name);
	if (strlen(path) >= PATH_MAX)
		return pd_error_msg(c->err, ENAMETOOLONG, "path too long in the build layer: %.64s...", path);
	if (skipped(c, path)) {
		c->st.skipped++;
		return 0;
	}
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_error(c->err, errno, "cannot inspect %s", path);
	if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) {
		c->st.whiteouts++;
		return write_marker(c, dir, name);
	}
	if (S_ISSOCK(st.st_mode)) {
		c->st.skipped++;
		return 0;
	}
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, path);
	set_stat(e, &st);
	_cleanup_close_ int fd = -1;
	int r = 0;
	bool opaque = false;
	if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
		/* O_NOFOLLOW|O_NONBLOCK: the walk only ever opens what fstatat just saw, and a tree
		 * that changed under it fails rather than being followed */
		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
		struct stat again;
		if (fd < 0 || fstat(fd, &again) < 0)
			r = pd_error(c->err, errno, "cannot open %s", path);
		else if (again.st_ino != st.st_ino || again.st_dev != st.st_dev)
			r = pd_error_msg(c->err, ESTALE, "%s changed while the layer was written", path);
		if (r == 0)
			r = add_xattrs(c, fd, path, e);
	}
	if (r == 0 && S_ISDIR(st.st_mode)) {
		char v[2];
		opaque = get_xattr(fd, OVL_XATTR "opaque", v, sizeof(v)) == 1 && v[0] == 'y';
		archive_entry_set_filetype(e, AE_IFDIR);
		r = write_header(c, e, path);
	} else if (r == 0 && S_ISREG(st.st_mode)) {
		const char *first = link_target(c, &st, path);
		archive_entry_set_filetype(e, AE_IFREG);
		if (first) {
			archive_entry_set_hardlink(e, first);
			archive_entry_set_size(e, 0);
			c->st.hardlinks++;
			r = write_header(c, e, path);
		} else {
			archive_entry_set_size(e, st.st_size);
			c->st.files++;
			if ((r = write_header(c, e, path)) == 0)
				r = copy_data(c, fd, path);
		}
	} else if (r == 0 && S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
		if (n < 0)
			r = pd_error(c->err, errno, "cannot read the symlink %s", path);
		else {
			target[n] = '\0';
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_symlink(e, target);
			r = write_header(c, e, path);
		}
	} else if (r == 0) {
		/* FIFOs and device nodes: the applier creates them only where it may (layer.h) */
		archive_entry_set_filetype(e, S_ISFIFO(st.st_mode) ? AE_IFIFO : S_ISCHR(st.st_mode) ? AE_IFCHR : AE_IFBLK);
		archive_entry_set_rdevmajor(e, major(st.st_rdev));
		archive_entry_set_rdevminor(e, minor(st.st_rdev));
		r = write_header(c, e, path);
	}
	archive_entry_free(e);
	if (r == 0 && opaque) {
		c->st.opaque_dirs++;
		r = write_marker(c, path, NULL);
	}
	if (r == 0 && S_ISDIR(st.st_mode))
		r = walk(c, fd, path, depth + 1);
	return r;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk(struct capture *c, int dirfd, const char *rel, unsigned depth)
{
	if (depth > CAPTURE_DEPTH_MAX)
		return pd_error_msg(c->err, ELOOP, "the build layer nests deeper than %d at %s", CAPTURE_DEPTH_MAX, rel);
	_cleanup_strv_ char **names = NULL;
	int e = dir_list_names(dirfd, &names);
	if (e < 0)
		return pd_error(c->err, -e, "cannot read the directory %s", *rel ? rel : "/");
	size_t n = strv_len(names);
	/* sorted: the same tree always gives the same bytes (and digest) */
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		int r = one_entry(c, dirfd, rel, names[i], depth);
		if (r < 0)
			return r;
	}
	return 0;
}

/* True if s is valid UTF-8 (RFC 3629: no overlongs, surrogates or values past U+10FFFF). */
static bool utf8_valid(const unsigned char *s)
{
	while (*s) {
		unsigned n = *s < 0x80 ? 0 : (*s & 0xe0) == 0xc0 ? 1 : (*s & 0xf0) == 0xe0 ? 2 : (*s & 0xf8) == 0xf0 ? 3 : 4;
		if (n == 4 || (n == 1 && *s < 0xc2) || (n == 3 && *s > 0xf4))
			return false;
		uint32_t cp = n ? *s & (0x3f >> n) : *s;
		for (unsigned i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		s += n + 1;
	}
	return true;
}

/* Whether every name (and symlink target) below dirfd is UTF-8: then the layer needs no
 * hdrcharset=BINARY, which libarchive can only set for the whole archive and which puts a pax
 * header on every entry. Errors answer "no" (the walk proper reports them). */
static bool tree_utf8(int dirfd, unsigned depth)
{
	_cleanup_strv_ char **names = NULL;
	if (depth > CAPTURE_DEPTH_MAX || dir_list_names(dirfd, &names) < 0)
		return false;
	bool ok = true;
	for (char **name = names; ok && *name; name++) {
		struct stat st;
		ok = utf8_valid((const unsigned char *)*name) && fstatat(dirfd, *name, &st, AT_SYMLINK_NOFOLLOW) == 0;
		if (ok && S_ISLNK(st.st_mode)) {
			char t[PATH_MAX];
			ssize_t n = readlinkat(dirfd, *name, t, sizeof(t) - 1);
			t[n > 0 ? n : 0] = '\0';
			ok = n >= 0 && utf8_valid((const unsigned char *)t);
		} else if (ok && S_ISDIR(st.st_mode)) {
			_cleanup_close_ int sub = openat(dirfd, *name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			ok = sub >= 0 && tree_utf8(sub, depth + 1);
		}
	}
	return ok;
}

int img_capture_upper(int dirfd, int out_fd, char *const *skip, struct capture_stats *ret_stats, pd_err *err)
{
	struct capture c = {.a = archive_write_new(), .skip = skip, .err = err};
	if (!c.a)
		return pd_error_msg(err, ENOMEM, "cannot start the layer");
	int r = 0;
	if (archive_write_set_format_pax_restricted(c.a) != ARCHIVE_OK ||
	    (!tree_utf8(dirfd, 0) && archive_write_set_format_option(c.a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK) ||
	    archive_write_set_bytes_in_last_block(c.a, 1) != ARCHIVE_OK || archive_write_open_fd(c.a, out_fd) != ARCHIVE_OK)
		r = arc_fail(&c, "(start)");
	if (r == 0)
		r = walk(&c, dirfd, "", 0);
	if (r == 0 && archive_write_close(c.a) != ARCHIVE_OK)
		r = arc_fail(&c, "(end)");
	/* archive_write_free of an archive marked failed skips the fd writer's close and leaks
	 * its buffers: an error ends the stream like success (the caller discards it anyway) */
	if (r < 0)
		archive_write_close(c.a);
	archive_write_free(c.a);
	for (size_t i = 0; i < c.n_links; i++)
		free(c.links[i].path);
	free(c.links);
	if (r == 0 && ret_stats)
		*ret_stats = c.st;
	return r;
}
