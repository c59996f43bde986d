/* ws_apply.h — write a box's changes into the user's project: the security boundary of the
 * workspace. See docs/workspace.md for the threat model. In short:
 *
 *  - the host root is opened once; every host path is opened beneath it with
 *    openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS) or the O_NOFOLLOW
 *    walk fallback; a symlink in any host path component refuses that entry;
 *  - what is applied is what diff showed: the box manifest diff saved, with every staged
 *    file re-hashed while it is copied;
 *  - a host entry that no longer matches the copy-in manifest is a conflict (skipped unless
 *    force); one that already matches the box's version is "already applied" (re-runs finish
 *    an interrupted apply);
 *  - files are replaced atomically (temp + fsync + renameat + directory fsync); leftover
 *    temp files (WS_TMP_PREFIX) are removed at the start of the next apply (with a journal:
 *    the next apply of a tree whose apply was interrupted);
 *  - host-executing paths are skipped unless listed in allow_exec; no special files, no
 *    setuid/setgid/sticky bits, no symlink whose target leaves the tree. */
#pragma once

#include <stdio.h>

#include "ws_diff.h"

enum ws_result {
	WS_RESULT_PENDING = 0,
	WS_APPLIED,      /* written (dry run: would be) */
	WS_ALREADY,      /* the host already has the box's version */
	WS_SKIPPED_EXEC, /* host-executing path not allowed */
	WS_CONFLICT,     /* the host changed since copy-in */
	WS_REFUSED_ENTRY,/* unsafe: refused entry, symlink on the host path, escaping target */
	WS_FAILED,       /* I/O error or bad staged content */
	WS_RESULT_MAX
};

enum ws_apply_phase {
	WS_PHASE_RESOLVED, /* parent dir open, host state checked, nothing written yet */
	WS_PHASE_STAGED,   /* temp file complete in the host directory, not renamed yet */
	WS_PHASE_DONE,     /* this entry is committed */
};

struct ws_apply_opts {
	bool dry_run;
	bool force;                /* overwrite/delete conflicting files (never directories) */
	char *const *paths;        /* NULL: everything */
	char *const *allow_exec;   /* host-executing paths allowed (equal to or beneath) */
	bool no_sync;              /* tests and fuzzing only: skip fsync */
	/* the apply journal (a directory of paddock's state): with it, only a host tree whose
	 * earlier apply was interrupted is walked for leftover temp files; NULL: every apply
	 * walks the whole tree */
	const char *journal_dir;
	/* tests only: called at each phase of each entry (to race or to crash there) */
	void (*hook)(void *ud, enum ws_apply_phase phase, const char *path, int dirfd);
	void *hook_ud;
	/* called once, before waiting, when another apply holds the lock of the host tree or of
	 * a tree that contains it (ws_apply.c tree_locks_take) */
	void (*waiting)(const char *host_root);
	/* called after each selected entry with how many of total are done (a progress bar) */
	void (*progress)(void *ud, size_t done, size_t total);
	void *progress_ud;
	/* when set (and not a dry run): filled with the baseline the box's next diff and apply
	 * start from, the copy-in manifest with what is now on the host taken in — every entry
	 * applied or found already applied. Without it, the agent's next change to a file an
	 * apply wrote is a conflict (the host no longer holds the copy-in version) */
	struct ws_manifest *ret_base;
};

struct ws_apply_item {
	char *path;
	enum ws_change change;
	enum ws_result result;
	enum ws_reason reason; /* for entries the box manifest refused */
	int err;               /* errno from the host side, 0 if none */
	const char *detail;    /* static text, may be NULL */
};

struct ws_apply_report {
	struct ws_apply_item *v;
	size_t n, cap;
	size_t count[WS_RESULT_MAX];
	size_t temps_removed;
	bool dry_run;           /* rendered as what would be done */
};

/* host_root: the project (followed if it is itself a symlink: the user named it). base: the
 * copy-in manifest; box and staging_fd: from ws_manifest_from_tar(), as diff showed them.
 * Returns 0 when the apply ran (see the report for what happened to each path), <0 when it
 * could not start. */
int ws_apply(const char *host_root, const struct ws_manifest *base, const struct ws_manifest *box,
	     int staging_fd, const struct ws_apply_opts *o, struct ws_apply_report *ret, pd_err *err);
void ws_apply_report_free(struct ws_apply_report *r);
const char *ws_result_str(enum ws_result r);
void ws_apply_report_render(FILE *out, const struct ws_apply_report *r, bool color);
/* Adds the box's entries the snapshot left out (notes of ws_reason_left_out reasons: names
 * that cannot be written on the host, duplicates, entries under a refused parent, …) as
 * refused items, those under paths only (NULL: all), so a report never passes over them. */
void ws_apply_report_add_notes(struct ws_apply_report *r, const struct ws_notes *n, char *const *paths);

/* Removes WS_TMP_PREFIX regular files and symlinks anywhere beneath rootfd (the walk never
 * follows a symlink). Returns the number removed or -errno. */
int ws_cleanup_temps(int rootfd, pd_err *err);
