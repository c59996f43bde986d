/* ws_boxscan.h — the box's own scan of its workspace (records of proto/wsscan.h) read as
 * hostile input, and the plan it makes possible: which entries the box still holds exactly
 * as it received them (taken from the copy-in manifest, never fetched) and which must be
 * fetched as a tar stream and hashed on the host.
 *
 * "Unchanged" needs the box's word on an entry's inode, size, mode, mtime and ctime being
 * what they were right after copy-in (the baseline scan taken then). A box that lies can
 * only hide its own changes: an unchanged entry is the host's copy-in entry, never anything
 * the box wrote, and everything fetched is hashed from the bytes actually received. */
#pragma once

#include <sys/stat.h>

#include "workspace/ws_ignore.h"
#include "workspace/ws_manifest.h"

struct ws_bstat {
	char *path;   /* raw bytes as the box sent them, NUL-free */
	char *target; /* symlinks */
	uint8_t kind; /* enum wsscan_kind */
	uint32_t mode;
	uint64_t size, ino;
	int64_t mtime_s, ctime_s;
	uint32_t mtime_ns, ctime_ns;
};

struct ws_bscan {
	struct ws_bstat *v;
	size_t n, cap;
	uint64_t names; /* bytes of names held */
	bool done;      /* the END record was read */
	uint8_t *pend;  /* an incomplete record carried to the next feed */
	size_t pend_len, pend_cap;
};

void ws_bscan_free(struct ws_bscan *s);
/* Appends the record the box's scan would make of path (relative to the scanned root) with
 * lstat result st: the host's own scan of a copy it has just written (ws_dirwriter). Unsorted:
 * the loader sorts. */
void ws_bscan_add_stat(struct ws_bscan *s, const char *path, const char *target, const struct stat *st);
/* Feeds n more bytes of the stream. Returns 1 once the END record has been read (its count
 * must match; nothing may follow it in the same feed), 0 when more is needed, -EBADMSG for
 * a malformed record, -EFBIG past lim's entry or name-bytes caps. On success the records
 * are sorted by path (strcmp) and a duplicate path is -EBADMSG. */
int ws_bscan_feed(struct ws_bscan *s, const uint8_t *p, size_t n, const struct ws_limits *lim, pd_err *err);
/* Reads from fd until the END record (never past it when reading a pipe byte-exactly is not
 * needed: the stream ends there). -EPIPE when the stream ends before END. */
int ws_bscan_read_fd(int fd, const struct ws_limits *lim, struct ws_bscan *ret, pd_err *err);
/* Loads a whole saved scan from dirfd/name (-ENOENT when absent). */
int ws_bscan_load(int dirfd, const char *name, const struct ws_limits *lim, struct ws_bscan *ret, pd_err *err);

/* Keeps only the records of regular files whose content `restored` (the manifest of what was
 * copied in: a saved copy, not the project) holds exactly as `base` does — a baseline taken
 * after restoring a saved copy is valid for those alone. Pure. */
void ws_bscan_keep_unchanged(struct ws_bscan *s, const struct ws_manifest *restored, const struct ws_manifest *base);
/* Encodes s back into records plus the end record; returns the length of *ret (caller frees). */
size_t ws_bscan_encode(const struct ws_bscan *s, uint8_t **ret);

struct ws_bplan {
	struct ws_manifest same; /* copy-in entries the box holds unchanged (sorted) */
	struct ws_manifest unread; /* directories the box could not read, refused (sorted) */
	char *fetch;             /* "./PATH\0" for each entry to fetch, NUL-separated */
	size_t fetch_len, n_fetch;
	struct ws_manifest ignored; /* new files the ignore rules keep out: path and size (capped) */
};
void ws_bplan_free(struct ws_bplan *p);

/* Plans a snapshot from the box's scan `now`, the baseline scan taken right after copy-in
 * (NULL: none, every file is fetched), the copy-in manifest `base` and the host's ignore
 * rules (may be NULL; they keep new entries out, never a copy-in entry). Names the box could
 * not hand back become notes, unscanned directories `unread` entries. Pure. */
void ws_bplan_make(const struct ws_bscan *now, const struct ws_bscan *baseline, const struct ws_manifest *base,
		   const struct ws_ignore *ig, const struct ws_limits *lim, struct ws_bplan *ret,
		   struct ws_notes *notes);

/* A file the box deleted (in base, not in box) whose name and size a new file kept out by
 * the ignore rules has (plan->ignored) was most likely moved there: notes it, so the user
 * does not lose it to an apply that deletes it on the host while its new place is not shown.
 * Pure. */
#define WS_BPLAN_IGNORED_MAX WS_IGNORED_MAX
void ws_bplan_note_moves(const struct ws_bplan *plan, const struct ws_manifest *base, const struct ws_manifest *box,
			 struct ws_notes *notes);

/* What the box could not hand back, marked in fetched (sorted, and sorted again): each
 * directory its scan could not read (plan->unread) and each listed entry the stream lacks
 * (its tar could not read it) becomes a refused entry (WS_R_NOT_READ) — so a diff shows it
 * refused and whatever the copy-in had beneath it refused with it, never deleted. Pure. */
void ws_bplan_refuse_unread(const struct ws_bplan *plan, struct ws_manifest *fetched);

/* The snapshot: the fetched manifest (from ws_manifest_from_tar) plus the unchanged
 * entries, sorted, fetched entries winning a tie; an entry whose parent is not a directory of
 * the result is dropped with a note (the tree stays a tree whatever the box claimed). Pure. */
void ws_bscan_merge(const struct ws_manifest *fetched, const struct ws_manifest *same, struct ws_manifest *ret,
		    struct ws_notes *notes);
