/* layer_fs.c — the filesystem steps of the layer applier (layer_int.h). Every step takes a
 * directory fd opened beneath the root without following symlinks and one plain name inside
 * it; nothing here resolves a multi-component path except through ws_open_beneath(). */
#include <fcntl.h>

#include "image/layer_int.h"
#include "util/fdio.h"
#include "workspace/ws_io.h"

/* Creates the missing components of path one by one, each from its parent's fd; a
 * component made here belongs to mk's uid:gid (the image's root after the shift) unless
 * those are -1, and is taken from mk's budget. */
static int make_dirs(int rootfd, const char *path, struct layer_mkdirs *mk, int *ret_fd)
{
	_cleanup_free_ char *p = xstrdup(path);
	_cleanup_close_ int cur = -1;
	int r = ws_open_beneath(rootfd, "", O_RDONLY | O_DIRECTORY, &cur);
	if (r < 0)
		return r;
	for (char *s = p, *comp; (comp = strsep(&s, "/"));) {
		/* a parent no entry names is made at the entry limit's expense: a tar of a few
		 * deep names must not make more directories than the limit allows entries */
		struct stat st;
		if (mk->budget == 0 && fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
			return -E2BIG;
		/* mkdirat never follows: an existing symlink here is EEXIST, then the O_NOFOLLOW
		 * open below refuses it */
		bool made = mkdirat(cur, comp, 0755) == 0;
		if (!made && errno != EEXIST)
			return -errno;
		mk->budget -= made;
		/* a parent the layer did not list is the image root's, as an OCI runtime makes it */
		if (made && mk->uid != (uid_t)-1 && fchownat(cur, comp, mk->uid, mk->gid, AT_SYMLINK_NOFOLLOW) < 0)
			return -errno;
		int next = openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0) {
			bool link = fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				    S_ISLNK(st.st_mode);
			return link ? -ELOOP : -errno;
		}
		close(cur);
		cur = next;
	}
	*ret_fd = TAKE_FD(cur);
	return 0;
}

int layer_open_dir(int rootfd, const char *path, bool create, int *ret_fd)
{
	struct layer_mkdirs mk = {.uid = (uid_t)-1, .gid = (gid_t)-1, .budget = UINT64_MAX};
	return layer_open_dir_as(rootfd, path, create ? &mk : NULL, ret_fd);
}

int layer_open_dir_as(int rootfd, const char *path, struct layer_mkdirs *mk, int *ret_fd)
{
	int r = ws_open_beneath(rootfd, path, O_RDONLY | O_DIRECTORY, ret_fd);
	if (r == -ENOENT && mk)
		return make_dirs(rootfd, path, mk, ret_fd);
	return r;
}

/* The names in a directory (without "." and ".."). */
int layer_remove_tree(int dirfd, const char *name, unsigned depth)
{
	if (depth > LAYER_REMOVE_DEPTH_MAX)
		return -ELOOP;
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno != ENOTDIR && errno != ELOOP)
			return -errno;
		/* not a directory (a symlink included): unlink the entry itself */
		return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
	}
	/* it goes away anyway; as an ordinary user we may need the write bit to empty it */
	(void)fchmod(fd, 0700);
	_cleanup_strv_ char **names = NULL;
	int r = dir_list_names(fd, &names);
	for (size_t i = 0; r == 0 && names[i]; i++)
		r = layer_remove_tree(fd, names[i], depth + 1);
	if (r < 0)
		return r;
	return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

int layer_make_room(int dirfd, const char *name, bool keep_dir)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (S_ISDIR(st.st_mode)) {
		if (keep_dir)
			return 1;
		return layer_remove_tree(dirfd, name, 0);
	}
	return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

static char *child_path(const char *dirpath, const char *name)
{
	return dirpath[0] ? xasprintf("%s/%s", dirpath, name) : xstrdup(name);
}

/* A kept child: if it is a directory, clear its lower content too. */
static int clear_kept(int dirfd, const char *path, const char *name,
		      const struct layer_pathset *keep, unsigned depth)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
					O_CLOEXEC);
	if (fd < 0)
		return errno == ENOTDIR || errno == ELOOP || errno == ENOENT ? 0 : -errno;
	return layer_clear_opaque(fd, path, keep, depth + 1);
}

int layer_clear_opaque(int dirfd, const char *dirpath, const struct layer_pathset *keep,
		       unsigned depth)
{
	if (depth > LAYER_REMOVE_DEPTH_MAX)
		return -ELOOP;
	_cleanup_strv_ char **names = NULL;
	int r = dir_list_names(dirfd, &names);
	for (size_t i = 0; r == 0 && names[i]; i++) {
		_cleanup_free_ char *path = child_path(dirpath, names[i]);
		if (layer_pathset_has(keep, path))
			r = clear_kept(dirfd, path, names[i], keep, depth);
		else
			r = layer_remove_tree(dirfd, names[i], 0);
	}
	return r;
}

int layer_pwrite_all(int fd, const void *buf, size_t len, off_t off)
{
	const char *p = buf;
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}
