/* tree_clone.c — a tree sharing another's files by hard link (tree_clone.h). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "image/tree_clone.h"
#include "util/fdio.h"

#define XATTR_LIST_BYTES (64 * 1024)
#define XATTR_VALUE_BYTES (64 * 1024)

struct clone {
	uint64_t entries;
	bool privileged;
	pd_err *err;
};

/* user.* attributes of src onto dst (the only ones the applier writes, layer.h) */
static int copy_xattrs(struct clone *c, int src, int dst, const char *name)
{
	char list[XATTR_LIST_BYTES];
	ssize_t n = flistxattr(src, list, sizeof(list));
	if (n < 0)
		return errno == ENOTSUP ? 0 : pd_error(c->err, errno, "cannot list the attributes of %s", name);
	for (const char *k = list; k < list + n; k += strlen(k) + 1) {
		if (!startswith(k, "user."))
			continue;
		_cleanup_free_ char *v = xmalloc(XATTR_VALUE_BYTES);
		ssize_t len = fgetxattr(src, k, v, XATTR_VALUE_BYTES);
		if (len < 0 || fsetxattr(dst, k, v, (size_t)len, 0) < 0)
			return pd_error(c->err, errno, "cannot copy attribute %s of %s", k, name);
	}
	return 0;
}

static int clone_dir(struct clone *c, int src, int dst, const char *name, unsigned depth);

static int clone_entry(struct clone *c, int src, int dst, const char *name, unsigned depth)
{
	struct stat st;
	if (fstatat(src, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return pd_error(c->err, errno, "cannot inspect %s", name);
	c->entries++;
	if (!S_ISDIR(st.st_mode)) {
		/* linkat without AT_SYMLINK_FOLLOW links a symlink itself, never its target */
		if (linkat(src, name, dst, name, 0) < 0)
			return pd_error(c->err, errno, "cannot link %s", name);
		return 0;
	}
	if (mkdirat(dst, name, 0700) < 0)
		return pd_error(c->err, errno, "cannot create %s", name);
	_cleanup_close_ int s = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s < 0 || d < 0)
		return pd_error(c->err, errno, "cannot open %s", name);
	int r = clone_dir(c, s, d, name, depth + 1);
	if (r < 0)
		return r;
	/* metadata last: a directory without write permission is still filled first */
	if (c->privileged && fchown(d, st.st_uid, st.st_gid) < 0)
		return pd_error(c->err, errno, "cannot chown %s", name);
	if (fchmod(d, st.st_mode & 07777) < 0)
		return pd_error(c->err, errno, "cannot chmod %s", name);
	if ((r = copy_xattrs(c, s, d, name)) < 0)
		return r;
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (futimens(d, ts) < 0)
		return pd_error(c->err, errno, "cannot set the times of %s", name);
	return 0;
}

static int clone_dir(struct clone *c, int src, int dst, const char *name, unsigned depth)
{
	if (depth > TREE_CLONE_DEPTH_MAX)
		return pd_error_msg(c->err, ELOOP, "%s nests deeper than %d", name, TREE_CLONE_DEPTH_MAX);
	_cleanup_strv_ char **names = NULL;
	int r = dir_list_names(src, &names);
	if (r < 0)
		return pd_error(c->err, -r, "cannot read %s", name);
	for (char **n = names; r == 0 && *n; n++)
		r = clone_entry(c, src, dst, *n, depth);
	return r;
}

int img_tree_clone(int srcfd, int dstfd, uint64_t *ret_entries, pd_err *err)
{
	struct clone c = {.privileged = geteuid() == 0, .err = err};
	int r = clone_dir(&c, srcfd, dstfd, "/", 0);
	if (r == 0 && ret_entries)
		*ret_entries = c.entries;
	return r;
}
