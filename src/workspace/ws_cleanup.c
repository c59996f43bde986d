/* ws_cleanup.c — remove the temp files an interrupted apply left behind.
 *
 * A readdir walk that trusts d_type (lstat only where the filesystem does not fill it in):
 * a whole project is visited at every apply, so it must cost one getdents per directory, not
 * one stat per file. Directories are entered with openat(O_NOFOLLOW|O_DIRECTORY) from their
 * parent's fd, so no symlink is ever followed. */
#include <fcntl.h>
#include <sys/stat.h>

#include "ws_apply.h"

#define CLEANUP_MAX_DEPTH 4096

static unsigned char type_of(int dirfd, const struct dirent *de)
{
	struct stat st;
	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return IFTODT(st.st_mode);
}

static int clean_dir(int fd, unsigned depth, int *removed);

static int enter(int dirfd, const char *name, unsigned depth, int *removed)
{
	int sub = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0) /* gone, or swapped for a symlink meanwhile: nothing of ours in there */
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? 0 : -errno;
	return clean_dir(sub, depth + 1, removed);
}

/* Takes ownership of fd. */
static int clean_dir(int fd, unsigned depth, int *removed)
{
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d) {
		int r = -errno;
		close(fd);
		return r;
	}
	if (depth > CLEANUP_MAX_DEPTH)
		return -ELOOP;
	int r = 0;
	for (struct dirent *de; r == 0 && (de = readdir(d));) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		unsigned char t = type_of(dirfd(d), de);
		if (t == DT_DIR)
			r = enter(dirfd(d), de->d_name, depth, removed);
		/* why safe: one name in a directory fd reached without following symlinks; only
		 * paddock's own temp names (regular files, symlinks), which no box can create and
		 * copy-in never sends; unlinkat never follows and fails on a directory */
		else if ((t == DT_REG || t == DT_LNK) && startswith(de->d_name, WS_TMP_PREFIX) &&
			 unlinkat(dirfd(d), de->d_name, 0) == 0)
			++*removed;
	}
	return r;
}

int ws_cleanup_temps(int rootfd, pd_err *err)
{
	int fd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), removed = 0;
	if (fd < 0)
		return pd_error(err, errno, "cannot open the project");
	int r = clean_dir(fd, 0, &removed);
	return r < 0 ? pd_error(err, r, "cannot look for leftover temp files") : removed;
}
