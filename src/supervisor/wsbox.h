/* wsbox.h — the workspace's way into a box: at boot, the project (or the copy saved when the
 * box was last stopped) goes in as a tar stream through an exec session of paddock-init, the
 * same path on every backend. The copy-in manifest (what the box received) is saved beside
 * the box as base.manifest for diff/apply; what was left out is saved as copyin.notes. */
#pragma once

#include "supervisor/supervisor.h"

#define WSBOX_STREAM 0x7fffff00u       /* stream ids the supervisor uses for itself */
#define WSBOX_BASE_MANIFEST "base.manifest"
#define WSBOX_NOTES "copyin.notes"
#define WSBOX_SAVED_TAR "workspace.tar"
/* A vm box's: its disk holds the completed copy-in (boot.c) */
#define WSBOX_ON_DISK "workspace.on-disk"
#define WSBOX_BASELINE "box.baseline"    /* the box's scan of its fresh copy (ws-scan records) */
#define WSBOX_BASELINE_MAX (512ull << 20)

/* The copy of one boot: box_workspace_begin (before the box starts) walks the project into a
 * pipe on a thread of its own; box_workspace_copyin (once paddock-init greeted) feeds it to
 * the box; box_workspace_end joins and frees (also when the box never came up). *ret is NULL
 * when the spec asks for no copy. */
struct wsbox_copy;
int box_workspace_begin(const struct box_spec *spec, const char *box_dir, bool direct, struct wsbox_copy **ret,
			pd_err *err);
/* Whether this copy goes straight into the box's /workspace (direct: the backend can hand it
 * over, and there is no saved copy to restore): the caller then asks the backend for it. */
bool box_workspace_direct(const struct wsbox_copy *c);
int box_workspace_copyin(struct box *b, struct wsbox_copy *c, pd_err *err);
void box_workspace_end(struct wsbox_copy *c);

/* Runs argv inside the box on the raw init channel, feeding in_fd (or nothing when -1) as
 * its stdin; returns its exit status, or <0. stderr (the first 2 KiB) goes to ret_stderr. */
int box_run_fed(int ctl_fd, uint32_t stream, char *const *argv, const char *user, int in_fd,
		char *ret_stderr, size_t stderr_len, pd_err *err);
