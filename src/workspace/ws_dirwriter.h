/* ws_dirwriter.h — the direct copy-in's writing half: a thread that creates the project's
 * entries beneath a box directory while the walk reads, hashes and queues the next ones.
 *
 * Why a thread: the copy is two jobs of about equal cost — reading and hashing the project,
 * and creating and filling its copy — and `tar -c | tar -x` runs them on two cores; one
 * thread doing both took 1.8× as long. The queue is bounded (entries and bytes), so memory
 * stays flat on any tree.
 *
 * The thread takes the destination owner's fs ids (setfsuid/setfsgid act on the calling
 * thread only), so every entry is created as the box's user while the reading thread keeps
 * the caller's identity. Names are resolved beneath the destination without following any
 * symlink and created exclusively; an existing non-directory (an image's own content) is
 * replaced, as tar -x would. Files and directories get the project's permission bits and
 * mtimes; directories are 0700 while their entries are made and get theirs at the end,
 * deepest first. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "util/error.h"
#include "ws_manifest.h"

struct ws_dirwriter;

/* One queued piece of work. A file is one or more items: the first carries its path, each
 * later one (path NULL) continues it; `last` ends it. A directory or symlink is one item. */
struct ws_dw_item {
	char *path;               /* owned; NULL: the file before continues */
	char *target;             /* owned; a symlink's target */
	enum ws_type type;
	mode_t mode;              /* permission bits */
	struct timespec atim, mtim;
	char *data;               /* owned; a file's bytes */
	size_t len;
	bool last;                /* a file's last item */
};

struct ws_bscan;

/* Starts the thread writing beneath dst_fd (borrowed: open until ws_dirwriter_finish). With
 * scan, it also records each entry it made as the box's own scan would (ws_bscan_add_stat):
 * the baseline diff compares the box's later scan against, taken without a round trip. */
int ws_dirwriter_start(int dst_fd, struct ws_bscan *scan, struct ws_dirwriter **ret, pd_err *err);

/* Queues *item (its buffers are taken, on failure too). Blocks while the queue is full.
 * Fails once the thread has failed: the reason comes from ws_dirwriter_finish. */
int ws_dirwriter_put(struct ws_dirwriter *w, struct ws_dw_item *item);

/* Lets the thread drain the queue (or drops it when !complete), sets the directories' modes
 * and times, joins it and frees w. Returns the thread's first error, described in *err. */
int ws_dirwriter_finish(struct ws_dirwriter *w, bool complete, pd_err *err);
