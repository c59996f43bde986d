/* ws_diff.h — what a box changed: a pure comparison of the copy-in manifest (base) with the
 * box's manifest, and renderers for people (--stat, unified text diff) and programs (JSON).
 *
 * Every name and every content byte a renderer prints passes ws_escape(); colour is used only
 * when the caller asks (it decides isatty). Contents come from a ws_content source so the
 * comparison itself stays pure. */
#pragma once

#include <stdio.h>

#include "ws_manifest.h"

enum ws_change {
	WS_CHG_INVALID = 0,
	WS_CHG_ADDED,
	WS_CHG_DELETED,
	WS_CHG_MODIFIED, /* file content (mode_changed: the mode too) */
	WS_CHG_MODE,     /* file permission bits only */
	WS_CHG_SYMLINK,  /* symlink target */
	WS_CHG_TYPE,     /* e.g. file -> symlink, dir -> file */
	WS_CHG_RENAMED,  /* a deleted file's exact content reappears at a new path */
	WS_CHG_REFUSED,  /* the box has something that is never applied */
	WS_CHG_MAX
};

struct ws_delta {
	enum ws_change kind;
	const struct ws_entry *base; /* NULL when added */
	const struct ws_entry *box;  /* NULL when deleted */
	bool mode_changed;
	enum ws_reason refused;      /* WS_CHG_REFUSED: why */
	enum ws_exec exec;           /* set by ws_diff_mark_exec() */
};

struct ws_diff {
	struct ws_delta *v;
	size_t n;
};

/* Deltas point into base and box, which must outlive the diff; both must be sorted. Deltas
 * come out in path order. Directory permission changes are not changes (never applied). */
void ws_diff_compute(const struct ws_manifest *base, const struct ws_manifest *box, struct ws_diff *ret);
void ws_diff_free(struct ws_diff *d);
const char *ws_change_str(enum ws_change c);
const char *ws_delta_path(const struct ws_delta *d); /* the box's path, else the base's */
/* paths NULL: everything; else the delta's old or new path is one of paths or beneath one. */
bool ws_delta_selected(const struct ws_delta *d, char *const *paths);
/* Flags writes of host-executing paths (ws_manifest_exec on the box's entry) and deletions
 * of paths whose name alone is host-executing. */
void ws_diff_mark_exec(struct ws_diff *d, const struct ws_manifest *box, int staging_fd);

/* Where file contents come from. load() returns 0 with a malloc'd buffer whose SHA-256 was
 * checked against e->sha256, -EFBIG if e is larger than max, another -errno if unavailable. */
struct ws_content {
	int (*load)(void *ud, const struct ws_entry *e, bool from_box, size_t max,
		    char **ret_buf, size_t *ret_len);
	void *ud;
};

/* The usual source: content by hash from the staging directory, else (base side only) the
 * host file, opened beneath host_rootfd without following symlinks. */
struct ws_content_host {
	int host_rootfd;
	int staging_fd;
};
int ws_content_host_load(void *ud, const struct ws_entry *e, bool from_box, size_t max,
			 char **ret_buf, size_t *ret_len);

struct ws_render_opts {
	bool color;
	char *const *paths;               /* NULL: all deltas */
	const struct ws_content *content; /* NULL: no line counts, no text diffs */
	unsigned context;                 /* unified context lines; 0 means 3 */
};

#define WS_TEXT_MAX (1u << 20) /* bigger files are summarised, never diffed */

void ws_diff_render_stat(FILE *out, const struct ws_diff *d, const struct ws_render_opts *o);
void ws_diff_render_patch(FILE *out, const struct ws_diff *d, const struct ws_render_opts *o);
/* Returns a malloc'd JSON document {"changes":[...]}. */
char *ws_diff_render_json(const struct ws_diff *d, const struct ws_render_opts *o);

/* Text diffing (ws_udiff.c). A text is binary if it has a NUL in its first 8 KiB or is not
 * valid UTF-8. The line diff is Myers' with a cost cap: past it, the changed middle is shown
 * as removed and added whole (still a correct diff, just not a minimal one). */
bool ws_text_is_binary(const char *buf, size_t len);
void ws_udiff_count(const char *a, size_t alen, const char *b, size_t blen,
		    unsigned *ret_added, unsigned *ret_deleted);
void ws_udiff_write(FILE *out, const char *a, size_t alen, const char *b, size_t blen,
		    unsigned context, bool color);
