/* ws_walk.c — the host tree walker (see ws_walk.h). */
#include <fcntl.h>

#include "ws_io.h"
#include "ws_walk.h"

#define WALK_MAX_DEPTH 4096 /* hard stop; callers refuse far earlier (ws_limits.max_depth) */

struct names {
	char **v;
	size_t n, cap;
};

static void names_free(struct names *n)
{
	for (size_t i = 0; i < n->n; i++)
		free(n->v[i]);
	free(n->v);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads all names of the directory (dirfd stays open: the listing uses a dup). */
static int list_dir(int dirfd, struct names *ret)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d) {
		int r = -errno;
		close(fd);
		return r;
	}
	struct dirent *de;
	errno = 0;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (ret->n == ret->cap) {
			ret->cap = ret->cap ? ret->cap * 2 : 32;
			ret->v = xrealloc(ret->v, ret->cap * sizeof(char *));
		}
		ret->v[ret->n++] = xstrdup(de->d_name);
	}
	if (errno)
		return -errno;
	if (ret->n > 1)
		qsort(ret->v, ret->n, sizeof(char *), cmp_str);
	return 0;
}

static int walk_dir(int dirfd, const char *prefix, unsigned depth, ws_walk_fn fn, void *ud, pd_err *err);

/* Enters a directory we decided to descend into: O_NOFOLLOW so a symlink swapped in after
 * the fstatat is not followed, and the inode compared so a swapped directory is noticed. */
static int descend(const struct ws_walk_entry *e, unsigned depth, ws_walk_fn fn, void *ud, pd_err *err)
{
	_cleanup_close_ int fd = openat(e->dirfd, e->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return ws_err_path(err, errno, "cannot open directory", e->path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return ws_err_path(err, errno, "cannot stat", e->path);
	if (st.st_dev != e->st->st_dev || st.st_ino != e->st->st_ino)
		return ws_err_path_msg(err, EAGAIN, "changed while the tree was read:", e->path);
	return walk_dir(fd, e->path, depth + 1, fn, ud, err);
}

static int visit(int dirfd, const char *prefix, const char *name, unsigned depth, ws_walk_fn fn,
		 void *ud, pd_err *err)
{
	_cleanup_free_ char *path = prefix ? xasprintf("%s/%s", prefix, name) : xstrdup(name);
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : ws_err_path(err, errno, "cannot stat", path);
	struct ws_walk_entry e = {.dirfd = dirfd, .name = name, .path = path, .st = &st};
	int r = fn(ud, &e);
	if (r == 1 && S_ISDIR(st.st_mode))
		r = descend(&e, depth, fn, ud, err);
	return r < 0 ? r : 0;
}

static int walk_dir(int dirfd, const char *prefix, unsigned depth, ws_walk_fn fn, void *ud, pd_err *err)
{
	if (depth > WALK_MAX_DEPTH)
		return ws_err_path_msg(err, ELOOP, "directory tree too deep:", prefix);
	struct names names = {0};
	int r = list_dir(dirfd, &names);
	if (r < 0)
		ws_err_path(err, r, "cannot read directory", prefix ? prefix : ".");
	for (size_t i = 0; r >= 0 && i < names.n; i++)
		r = visit(dirfd, prefix, names.v[i], depth, fn, ud, err);
	names_free(&names);
	return r;
}

int ws_walk(int rootfd, ws_walk_fn fn, void *ud, pd_err *err)
{
	_cleanup_close_ int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return pd_error(err, errno, "cannot open the tree's root");
	return walk_dir(fd, NULL, 0, fn, ud, err);
}
