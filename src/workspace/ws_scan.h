/* ws_scan.h — one walk of a host tree that yields its manifest (and, for copy-in, writes
 * each entry out as it goes). Shared by ws_manifest_from_dir() and ws_copyin(). Internal. */
#pragma once

#include "ws_manifest.h"
#include "ws_walk.h"

struct ws_scan_ops {
	/* WS_OK to keep the entry, else the note reason for leaving it out (not descended). */
	enum ws_reason (*exclude)(void *ud, const char *path, bool is_dir);
	/* Emits e. Directories and symlinks are complete; for files, fd is open on the file
	 * (verified to be the regular file that was stat'ed) and emit fills e->size and
	 * e->sha256 from exactly the bytes it used. */
	int (*emit)(void *ud, struct ws_entry *e, int fd, const struct stat *st, pd_err *err);
	void *ud;
};

int ws_scan(int rootfd, const struct ws_limits *lim, const struct ws_scan_ops *ops,
	    struct ws_manifest *ret, struct ws_notes *notes, pd_err *err);
