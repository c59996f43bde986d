/* ws_walk.h — a host tree walker that never follows a symlink and never re-resolves a path
 * string: every entry is reached by fstatat(AT_SYMLINK_NOFOLLOW) on its parent's fd, every
 * directory is entered with openat(O_NOFOLLOW|O_DIRECTORY) and checked to be the inode that
 * was stat'ed. Names are visited in strcmp order. Internal to src/workspace. */
#pragma once

#include <sys/stat.h>

#include "util/error.h"

struct ws_walk_entry {
	int dirfd;             /* the parent directory */
	const char *name;      /* name inside dirfd */
	const char *path;      /* path relative to the root */
	const struct stat *st; /* lstat of the entry */
};

/* Return < 0 to stop the walk with that error, 0 to go on, 1 to descend (directories). */
typedef int (*ws_walk_fn)(void *ud, const struct ws_walk_entry *e);

int ws_walk(int rootfd, ws_walk_fn fn, void *ud, pd_err *err);
