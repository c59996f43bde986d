/* layer.c — the layer applier's driver: reads the tar with libarchive and applies each entry
 * (layer.h for the rules, layer_fs.c for the filesystem steps). */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "image/layer_int.h"

#define WHITEOUT ".wh."
#define OPAQUE ".wh..wh..opq"
#define XATTRS_PER_ENTRY_MAX 128

/* A directory's mtime, set once the whole layer is in (adding children changes it). */
struct dir_time {
	char *path;
	struct timespec mtime;
};

struct applier {
	int rootfd;
	struct archive *a;
	struct layer_options o;
	struct layer_stats st;
	struct layer_pathset *written;  /* paths this layer created, and their parents */
	struct dir_time *dirs;
	size_t n_dirs, cap_dirs;
	const char *path;               /* the normalised entry being applied (messages) */
	pd_err *err;
};

void layer_options_default(struct layer_options *o)
{
	*o = (struct layer_options){
		.privileged = geteuid() == 0,
		.max_bytes = LAYER_BYTES_MAX_DEFAULT,
		.max_entries = LAYER_ENTRIES_MAX_DEFAULT,
		.max_path_bytes = LAYER_PATH_BYTES_MAX_DEFAULT,
		.max_depth = LAYER_DEPTH_MAX_DEFAULT,
		.link_from = -1,
	};
}

_printf_(3, 4) static int fail(struct applier *ap, int errnum, const char *fmt, ...)
{
	char msg[512];
	va_list va;
	va_start(va, fmt);
	vsnprintf(msg, sizeof(msg), fmt, va);
	va_end(va);
	return pd_error_msg(ap->err, errnum, "layer entry '%.200s': %s", ap->path ? ap->path : "",
			    msg);
}

static int fail_errno(struct applier *ap, int r, const char *what)
{
	const char *hint = r == -ELOOP ? " (a symlink on the way: refusing to write through it)"
			 : r == -ENOTDIR ? " (a parent is not a directory)" : "";
	return fail(ap, r, "%s: %s%s", what, strerror(-r), hint);
}

/* ---- metadata ---- */

static mode_t entry_mode(struct applier *ap, struct archive_entry *e, bool dir)
{
	mode_t mode = archive_entry_perm(e) & 07777;
	if (ap->o.privileged)
		return mode;
	/* an ordinary user must not mint setuid/setgid files; and keeps u+rwx on directories
	 * so that later layers can still be applied below them */
	if (mode & (S_ISUID | S_ISGID)) {
		ap->st.setid_stripped++;
		mode &= ~(mode_t)(S_ISUID | S_ISGID);
	}
	return dir ? mode | S_IRWXU : mode;
}

/* Only user.* extended attributes: security.capability would grant privileges, trusted.* and
 * security.* are the host's business; user.overlay.* steer overlayfs, and a tree is the lower
 * layer of rootless overlay mounts (userxattr), so an image must not mark its directories
 * opaque or redirect them. A filesystem without user xattrs skips them too. */
static void apply_xattrs(struct applier *ap, int fd, struct archive_entry *e)
{
	const char *name;
	const void *value;
	size_t size, n = 0;
	archive_entry_xattr_reset(e);
	while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
		bool ok = startswith(name, "user.") && !startswith(name, "user.overlay.") && size <= LAYER_XATTR_VALUE_MAX &&
			  ++n <= XATTRS_PER_ENTRY_MAX && strlen(name) <= 255;
		if (!ok || fsetxattr(fd, name, value, size, 0) < 0)
			ap->st.xattrs_skipped++;
	}
}

static struct timespec entry_mtime(struct archive_entry *e)
{
	return (struct timespec){ .tv_sec = archive_entry_mtime(e),
				  .tv_nsec = archive_entry_mtime_nsec(e) };
}

/* An owner from the tar, moved by the shift (ids beyond the box's range become its nobody). */
static uint32_t shifted_id(la_int64_t id, uint32_t shift)
{
	if (!shift)
		return (uint32_t)id;
	return shift + (id >= 0 && id < LAYER_SHIFT_SPAN ? (uint32_t)id : LAYER_SHIFT_SPAN - 2);
}

static uid_t entry_uid(struct applier *ap, struct archive_entry *e)
{
	return (uid_t)shifted_id(archive_entry_uid(e), ap->o.uid_shift);
}

static gid_t entry_gid(struct applier *ap, struct archive_entry *e)
{
	return (gid_t)shifted_id(archive_entry_gid(e), ap->o.gid_shift);
}

/* Owner (privileged only; before chmod, which chown would undo), mode, xattrs. */
static int apply_meta_fd(struct applier *ap, int fd, struct archive_entry *e, bool dir)
{
	if (ap->o.privileged && fchown(fd, entry_uid(ap, e), entry_gid(ap, e)) < 0)
		return fail_errno(ap, -errno, "cannot set owner");
	if (fchmod(fd, entry_mode(ap, e, dir)) < 0)
		return fail_errno(ap, -errno, "cannot set mode");
	apply_xattrs(ap, fd, e);
	return 0;
}

/* For nodes that cannot be opened (symlinks, fifos, devices): by name, never following. */
static int apply_meta_at(struct applier *ap, int dirfd, const char *name,
			 struct archive_entry *e, bool chmod_too)
{
	if (ap->o.privileged && fchownat(dirfd, name, entry_uid(ap, e), entry_gid(ap, e),
					 AT_SYMLINK_NOFOLLOW) < 0)
		return fail_errno(ap, -errno, "cannot set owner");
	if (chmod_too && fchmodat(dirfd, name, entry_mode(ap, e, false), AT_SYMLINK_NOFOLLOW) < 0)
		return fail_errno(ap, -errno, "cannot set mode");
	struct timespec ts[2] = { entry_mtime(e), entry_mtime(e) };
	if (utimensat(dirfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail_errno(ap, -errno, "cannot set times");
	return 0;
}

/* ---- entry kinds ---- */

static int write_data(struct applier *ap, int fd, struct archive_entry *e)
{
	int64_t size = archive_entry_size(e);
	if (size < 0 || (uint64_t)size > ap->o.max_bytes - ap->st.bytes)
		return fail(ap, EFBIG, "layer larger than %llu bytes",
			    (unsigned long long)ap->o.max_bytes);
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = archive_read_data_block(ap->a, &buf, &len, &off)) == ARCHIVE_OK ||
	       r == ARCHIVE_WARN) {
		if (off < 0 || (uint64_t)off + len > (uint64_t)size)
			return fail(ap, EINVAL, "data beyond the entry's size");
		int w = layer_pwrite_all(fd, buf, len, off);
		if (w < 0)
			return fail_errno(ap, w, "cannot write");
	}
	if (r != ARCHIVE_EOF)
		return fail(ap, EIO, "%s", archive_error_string(ap->a) ?: "truncated tar");
	ap->st.bytes += (uint64_t)size;
	/* sparse entries may end in a hole */
	return ftruncate(fd, size) < 0 ? fail_errno(ap, -errno, "cannot size") : 0;
}

/* Removes every extended attribute of fd's inode; -errno when one stays. */
static int strip_xattrs(int fd)
{
	char list[64 * 1024]; /* XATTR_LIST_MAX */
	ssize_t n = flistxattr(fd, list, sizeof(list));
	if (n < 0)
		return errno == ENOTSUP ? 0 : -errno;
	for (char *k = list; k < list + n; k += strlen(k) + 1)
		if (fremovexattr(fd, k) < 0 && errno != ENODATA)
			return -errno;
	return 0;
}

/* link_from (layer.h): 1 when the file is in the tree by a hard link of the source's inode,
 * its data skipped in the tar and its metadata the entry's; 0 when there is no such file
 * (the caller writes it); <0 on a failure. */
static int link_file(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	int64_t size = archive_entry_size(e);
	const char *slash = strrchr(ap->path, '/');
	_cleanup_free_ char *sdir = slash ? xstrndup(ap->path, (size_t)(slash - ap->path)) : xstrdup("");
	_cleanup_close_ int sdirfd = -1, src = -1;
	/* why safe: the source is resolved beneath link_from without following a symlink (as
	 * layer entries are), and only a regular file whose size and mtime are the entry's is
	 * taken: the file the layer was captured from, in a box that is no longer running */
	if (layer_open_dir(ap->o.link_from, sdir, false, &sdirfd) < 0)
		return 0;
	src = openat(sdirfd, slash ? slash + 1 : ap->path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	struct timespec mt = entry_mtime(e);
	/* (a pax-restricted writer keeps whole seconds unless it writes an extended header) */
	if (src < 0 || fstat(src, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != size ||
	    st.st_mtim.tv_sec != mt.tv_sec || (mt.tv_nsec && st.st_mtim.tv_nsec != mt.tv_nsec))
		return 0;
	if ((uint64_t)size > ap->o.max_bytes - ap->st.bytes)
		return fail(ap, EFBIG, "layer larger than %llu bytes", (unsigned long long)ap->o.max_bytes);
	/* AT_EMPTY_PATH: the inode just checked, not a name that could have been swapped */
	if (linkat(src, "", dirfd, name, AT_EMPTY_PATH) < 0)
		return 0;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat again;
	/* overlayfs's bookkeeping and any capability the build set go; the entry's own
	 * attributes come back below, filtered as for a written file */
	if (fd < 0 || fstat(fd, &again) < 0 || again.st_ino != st.st_ino || strip_xattrs(fd) < 0) {
		unlinkat(dirfd, name, 0);
		return 0;
	}
	if (archive_read_data_skip(ap->a) != ARCHIVE_OK)
		return fail(ap, EIO, "%s", archive_error_string(ap->a) ?: "truncated tar");
	ap->st.bytes += (uint64_t)size;
	int r = apply_meta_fd(ap, fd, e, false);
	if (r < 0)
		return r;
	struct timespec ts[2] = { mt, mt };
	if (futimens(fd, ts) < 0)
		return fail_errno(ap, -errno, "cannot set times");
	ap->st.files++;
	ap->st.linked++;
	return 1;
}

static int make_file(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	if (ap->o.privileged && ap->o.link_from >= 0) {
		int l = link_file(ap, dirfd, name, e);
		if (l != 0)
			return l < 0 ? l : 0;
	}
	/* O_EXCL|O_NOFOLLOW: a name that reappeared (or a symlink planted in a race) is never
	 * opened; make_room() removed what an earlier layer left here */
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC, 0600);
	if (fd < 0)
		return fail_errno(ap, -errno, "cannot create file");
	int r = write_data(ap, fd, e);
	if (r < 0)
		return r;
	if ((r = apply_meta_fd(ap, fd, e, false)) < 0)
		return r;
	struct timespec ts[2] = { entry_mtime(e), entry_mtime(e) };
	if (futimens(fd, ts) < 0)
		return fail_errno(ap, -errno, "cannot set times");
	ap->st.files++;
	return 0;
}

static void defer_dir_time(struct applier *ap, struct archive_entry *e)
{
	if (ap->n_dirs == ap->cap_dirs) {
		ap->cap_dirs = ap->cap_dirs ? ap->cap_dirs * 2 : 64;
		ap->dirs = xrealloc(ap->dirs, ap->cap_dirs * sizeof(*ap->dirs));
	}
	ap->dirs[ap->n_dirs++] = (struct dir_time){ xstrdup(ap->path), entry_mtime(e) };
}

static int make_dir(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return fail_errno(ap, -errno, "cannot create directory");
	/* O_NOFOLLOW: make_room() kept only a real directory here */
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
	if (fd < 0)
		return fail_errno(ap, -errno, "cannot open directory");
	int r = apply_meta_fd(ap, fd, e, true);
	if (r < 0)
		return r;
	defer_dir_time(ap, e);
	ap->st.dirs++;
	return 0;
}

static int make_symlink(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	const char *target = archive_entry_symlink_utf8(e) ?: archive_entry_symlink(e);
	if (!target || !target[0] || strlen(target) > LAYER_PATH_MAX)
		return fail(ap, EINVAL, "symlink without a (short enough) target");
	/* the target is stored as written and never followed by this applier */
	if (symlinkat(target, dirfd, name) < 0)
		return fail_errno(ap, -errno, "cannot create symlink");
	ap->st.symlinks++;
	return apply_meta_at(ap, dirfd, name, e, false);
}

static int make_node(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	mode_t type = archive_entry_filetype(e);
	if ((type == AE_IFCHR || type == AE_IFBLK) && !ap->o.privileged) {
		ap->st.devices_skipped++;
		return 0;
	}
	dev_t dev = type == AE_IFIFO ? 0 : makedev(archive_entry_rdevmajor(e),
						   archive_entry_rdevminor(e));
	if (mknodat(dirfd, name, type | 0600, dev) < 0)
		return fail_errno(ap, -errno, "cannot create node");
	ap->st.others++;
	return apply_meta_at(ap, dirfd, name, e, true);
}

static int make_hardlink(struct applier *ap, int dirfd, const char *name, const char *link)
{
	_cleanup_free_ char *target = NULL;
	int r = layer_path_normalize(link, ap->o.max_depth, &target);
	if (r < 0 || !target[0] || streq(target, ap->path))
		return fail(ap, EINVAL, "hard link to an invalid path '%.200s'", link);
	if (!layer_pathset_has(ap->written, target))
		return fail(ap, EINVAL, "hard link to '%.200s', not extracted before it", target);
	const char *slash = strrchr(target, '/'), *tname = slash ? slash + 1 : target;
	_cleanup_free_ char *tdir = slash ? xstrndup(target, (size_t)(slash - target)) : xstrdup("");
	_cleanup_close_ int tfd = -1;
	struct stat st;
	if ((r = layer_open_dir(ap->rootfd, tdir, false, &tfd)) < 0 ||
	    (r = fstatat(tfd, tname, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0) < 0)
		return fail_errno(ap, r, "cannot find the hard link's target");
	if (!S_ISREG(st.st_mode))
		return fail(ap, EINVAL, "hard link to '%.200s', not a regular file", target);
	/* flags 0: linkat does not follow; the target is a regular file inside the tree */
	if (linkat(tfd, tname, dirfd, name, 0) < 0)
		return fail_errno(ap, -errno, "cannot create hard link");
	ap->st.hardlinks++;
	return 0;
}

static int too_many_entries(struct applier *ap)
{
	return pd_error_msg(ap->err, E2BIG, "layer has more than %llu entries (the parent directories its names imply count too)",
			    (unsigned long long)ap->o.max_entries);
}

/* Opens dir beneath the root, making the parents no entry named: owned by the image's root,
 * shifted (unshifted trees keep the applier's own ids), and each one an entry against
 * max_entries. */
static int open_parent(struct applier *ap, const char *dir, const char *what, int *ret_fd)
{
	uint64_t left = ap->o.max_entries - ap->st.entries - ap->st.implicit_dirs;
	struct layer_mkdirs mk = {
		.uid = ap->o.uid_shift ? (uid_t)ap->o.uid_shift : (uid_t)-1,
		.gid = ap->o.gid_shift ? (gid_t)ap->o.gid_shift : (gid_t)-1,
		.budget = left,
	};
	int r = layer_open_dir_as(ap->rootfd, dir, &mk, ret_fd);
	ap->st.implicit_dirs += left - mk.budget;
	if (r == -E2BIG)
		return too_many_entries(ap);
	return r < 0 ? fail_errno(ap, r, what) : 0;
}

/* Remembers path (and its parents) as this layer's; their bytes are capped, for the set
 * lives in memory. */
static int add_written(struct applier *ap, const char *path)
{
	layer_pathset_add_with_parents(ap->written, path);
	if (layer_pathset_bytes(ap->written) > ap->o.max_path_bytes)
		return pd_error_msg(ap->err, E2BIG, "layer's paths take more than %llu bytes",
				    (unsigned long long)ap->o.max_path_bytes);
	return 0;
}

/* ---- whiteouts ---- */

static int opaque(struct applier *ap, const char *dir)
{
	_cleanup_close_ int fd = -1;
	int r = open_parent(ap, dir, "cannot open the opaque directory", &fd);
	if (r < 0)
		return r;
	if (dir[0] && (r = add_written(ap, dir)) < 0)
		return r;
	r = layer_clear_opaque(fd, dir, ap->written, 0);
	if (r < 0)
		return fail_errno(ap, r, "cannot clear the opaque directory");
	ap->st.opaque_dirs++;
	return 0;
}

static int whiteout(struct applier *ap, const char *dir, const char *base)
{
	if (streq(base, OPAQUE))
		return opaque(ap, dir);
	if (startswith(base, WHITEOUT WHITEOUT)) {  /* aufs bookkeeping (.wh..wh.plnk …) */
		ap->st.ignored++;
		return 0;
	}
	const char *name = base + strlen(WHITEOUT);
	if (!name[0] || streq(name, ".") || streq(name, ".."))
		return fail(ap, EINVAL, "invalid whiteout");
	_cleanup_free_ char *victim = dir[0] ? xasprintf("%s/%s", dir, name) : xstrdup(name);
	ap->st.whiteouts++;
	if (layer_pathset_has(ap->written, victim))
		return 0; /* a whiteout only hides lower layers */
	_cleanup_close_ int fd = -1;
	int r = layer_open_dir(ap->rootfd, dir, false, &fd);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = layer_remove_tree(fd, name, 0);
	return r < 0 ? fail_errno(ap, r, "cannot apply whiteout") : 0;
}

/* ---- one entry ---- */

static int create_node(struct applier *ap, int dirfd, const char *name, struct archive_entry *e)
{
	const char *link = archive_entry_hardlink_utf8(e) ?: archive_entry_hardlink(e);
	mode_t type = archive_entry_filetype(e);
	if (!link && type == AE_IFSOCK) {
		ap->st.ignored++;
		return 0;
	}
	int kept = layer_make_room(dirfd, name, !link && type == AE_IFDIR);
	if (kept < 0)
		return fail_errno(ap, kept, "cannot replace the existing entry");
	if (link)
		return make_hardlink(ap, dirfd, name, link);
	switch (type) {
	case AE_IFREG:
		return make_file(ap, dirfd, name, e);
	case AE_IFDIR:
		return make_dir(ap, dirfd, name, e);
	case AE_IFLNK:
		return make_symlink(ap, dirfd, name, e);
	case AE_IFCHR:
	case AE_IFBLK:
	case AE_IFIFO:
		return make_node(ap, dirfd, name, e);
	default:
		return fail(ap, EINVAL, "unknown entry type 0%o", (unsigned)type);
	}
}

static int apply_entry(struct applier *ap, struct archive_entry *e)
{
	const char *raw = archive_entry_pathname_utf8(e) ?: archive_entry_pathname(e);
	_cleanup_free_ char *path = NULL;
	int r = raw ? layer_path_normalize(raw, ap->o.max_depth, &path) : -EINVAL;
	ap->path = raw;
	if (r < 0)
		return fail(ap, -r, "%s", r == -EINVAL ? "refusing a name with \"..\" (or no name)"
				 : r == -ELOOP ? "nested too deeply" : "name too long");
	ap->path = path;
	if (!path[0]) {  /* the root's own entry: its owner and mode are not the layer's to set */
		ap->st.ignored++;
		return 0;
	}
	const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
	_cleanup_free_ char *dir = slash ? xstrndup(path, (size_t)(slash - path)) : xstrdup("");
	if (startswith(base, WHITEOUT))
		return whiteout(ap, dir, base);
	_cleanup_close_ int dirfd = -1;
	if ((r = open_parent(ap, dir, "cannot open the parent directory", &dirfd)) < 0)
		return r;
	r = create_node(ap, dirfd, base, e);
	return r < 0 ? r : add_written(ap, path);
}

/* ---- the archive ---- */

static void finish_dir_times(struct applier *ap)
{
	for (size_t i = 0; i < ap->n_dirs; i++) {
		_cleanup_close_ int fd = -1;
		struct timespec ts[2] = { ap->dirs[i].mtime, ap->dirs[i].mtime };
		/* a directory replaced later in the layer is simply gone or no longer a directory */
		if (layer_open_dir(ap->rootfd, ap->dirs[i].path, false, &fd) == 0)
			(void)futimens(fd, ts);
	}
}

static int read_entries(struct applier *ap)
{
	struct archive_entry *e;
	int r;
	while ((r = archive_read_next_header(ap->a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
		ap->path = NULL;
		if (++ap->st.entries + ap->st.implicit_dirs > ap->o.max_entries)
			return too_many_entries(ap);
		int q = apply_entry(ap, e);
		if (q < 0)
			return q;
	}
	if (r != ARCHIVE_EOF)
		return pd_error_msg(ap->err, EINVAL, "cannot read the layer: %s",
				    archive_error_string(ap->a) ?: "not a tar archive");
	finish_dir_times(ap);
	return 0;
}

void layer_read_support_filters(struct archive *a)
{
	/* layers are tar, tar+gzip or tar+zstd; nothing else is even attempted */
	archive_read_support_filter_gzip(a);
	archive_read_support_filter_zstd(a);
}

static struct archive *reader_new(void)
{
	struct archive *a = archive_read_new();
	if (!a)
		abort(); /* out of memory */
	layer_read_support_filters(a);
	archive_read_support_format_tar(a);
	return a;
}

static int run(int rootfd, struct archive *a, int opened, const struct layer_options *o,
	       struct layer_stats *ret_stats, pd_err *err)
{
	struct layer_options def;
	layer_options_default(&def);
	struct applier ap = { .rootfd = rootfd, .a = a, .o = o ? *o : def, .err = err };
	int r = opened == ARCHIVE_OK ? 0
		: pd_error_msg(err, EINVAL, "cannot read the layer: %s",
			       archive_error_string(a) ?: "unknown format");
	if (r == 0) {
		ap.written = layer_pathset_new();
		r = read_entries(&ap);
	}
	for (size_t i = 0; i < ap.n_dirs; i++)
		free(ap.dirs[i].path);
	free(ap.dirs);
	layer_pathset_free(ap.written);
	archive_read_free(a);
	if (r == 0 && ret_stats)
		*ret_stats = ap.st;
	return r;
}

int layer_apply_fd(int rootfd, int tarfd, const struct layer_options *o,
		   struct layer_stats *ret_stats, pd_err *err)
{
	struct archive *a = reader_new();
	int opened = archive_read_open_fd(a, tarfd, 64 * 1024);
	return run(rootfd, a, opened, o, ret_stats, err);
}

int layer_apply_buffer(int rootfd, const void *buf, size_t len, const struct layer_options *o,
		       struct layer_stats *ret_stats, pd_err *err)
{
	struct archive *a = reader_new();
	int opened = archive_read_open_memory(a, buf, len);
	return run(rootfd, a, opened, o, ret_stats, err);
}
