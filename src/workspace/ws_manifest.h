/* ws_manifest.h — a manifest is the sorted list of what a tree holds: path, type, permission
 * bits, size, SHA-256 and symlink target of every entry. Built from a host directory (never
 * following symlinks) or from a box's tar stream (every byte hostile: names checked, limits
 * enforced, regular files staged into a host-owned content-addressed directory), saved to and
 * loaded from a line-based file. diff and apply work on manifests only. */
#pragma once

#include "util/error.h"
#include "ws_io.h"
#include "ws_path.h"

enum ws_type {
	WS_TYPE_INVALID = 0,
	WS_FILE,
	WS_DIR,
	WS_SYMLINK,
	WS_REFUSED, /* the box has something here that is never applied (reason says what) */
	WS_TYPE_MAX
};

struct ws_entry {
	char *path;            /* normalised, checked by ws_path_check() */
	char *target;          /* WS_SYMLINK only */
	uint64_t size;         /* WS_FILE only */
	enum ws_type type;
	mode_t mode;           /* permission bits only (& 0777) */
	enum ws_reason reason; /* WS_REFUSED only */
	uint8_t sha256[WS_SHA256_LEN]; /* WS_FILE only */
};

struct ws_manifest {
	struct ws_entry *v;
	size_t n, cap;
};

/* Things left out or changed on the way, for the user to see (never fatal). */
struct ws_note {
	enum ws_reason reason;
	char *path;   /* raw bytes as received: escape before printing */
	char *detail; /* may be NULL */
};

struct ws_notes {
	struct ws_note *v;
	size_t n, cap;
	size_t dropped; /* notes beyond WS_NOTES_MAX are only counted */
};
#define WS_NOTES_MAX 10000

void ws_manifest_free(struct ws_manifest *m);
/* Appends a copy of e (path and target duplicated); returns the new entry. */
struct ws_entry *ws_manifest_add(struct ws_manifest *m, const struct ws_entry *e);
/* Sorts by path (strcmp); ws_manifest_find() needs a sorted manifest. */
void ws_manifest_sort(struct ws_manifest *m);
const struct ws_entry *ws_manifest_find(const struct ws_manifest *m, const char *path);
/* The box may not widen who can write on the host: a file's or directory's group/other write
 * bits survive only where the host entry of that path and type had them (its copy-in base),
 * or, for a new entry, where the host user's umask lets them. Exec and read bits are the
 * box's. Run on a box snapshot (sorted base), before diff shows it and apply writes it. */
void ws_manifest_limit_modes(struct ws_manifest *box, const struct ws_manifest *base, mode_t umask_bits);
const char *ws_type_str(enum ws_type t);

void ws_notes_add(struct ws_notes *n, enum ws_reason r, const char *path, const char *detail);
void ws_notes_free(struct ws_notes *n);
/* A snapshot's notes beside its manifest (ws_mfile.c; loaded strictly, never trusted as paths). */
int ws_notes_save(const struct ws_notes *n, int dirfd, const char *name, pd_err *err);
int ws_notes_load(int dirfd, const char *name, struct ws_notes *ret, pd_err *err);

/* Saves atomically (temp + fsync + rename) to dirfd/name; loads it back, re-checking every
 * path, the sort order and the limits. The format is described in docs/workspace.md. */
int ws_manifest_save(const struct ws_manifest *m, int dirfd, const char *name, pd_err *err);
/* The same without the fsync (still atomic against a crash of paddock, not of the host): for
 * a record that dies with the host anyway — an ns box's copy lives in its memory — and that
 * whoever makes it outlive a host crash syncs then (wsnap_save_tar). The fsync of a 50,000-
 * entry manifest is tens of milliseconds of a box's start on a slow disk. */
int ws_manifest_save_nosync(const struct ws_manifest *m, int dirfd, const char *name, pd_err *err);
int ws_manifest_load(int dirfd, const char *name, const struct ws_limits *lim,
		     struct ws_manifest *ret, pd_err *err);

/* Walks the host tree beneath rootfd (fstatat AT_SYMLINK_NOFOLLOW, O_NOFOLLOW opens); special
 * files, names ws_path_check() refuses and leftover temp files are skipped with a note. */
int ws_manifest_from_dir(int rootfd, const struct ws_limits *lim, struct ws_manifest *ret,
			 struct ws_notes *notes, pd_err *err);

struct ws_ignore;

/* the most ignored files a snapshot lists for ws_bplan_note_moves */
#define WS_IGNORED_MAX 65536
struct ws_tar_opts {
	const struct ws_limits *limits;  /* NULL: WS_LIMITS_DEFAULT */
	int staging_fd;                  /* content store (files named by hex SHA-256); -1: hash only */
	const struct ws_manifest *base;  /* content equal to base's for the same path is not staged */
	const struct ws_ignore *ignore;  /* entries the host's ignore rules match are skipped */
	struct ws_manifest *ignored;     /* NULL, or: regular files so skipped, path and size (capped) */
};

/* Reads an uncompressed tar stream from fd. Entries with bad names are noted and left out;
 * entries with good names but refused content (devices, FIFOs, sockets, escaping symlinks,
 * hard links out of the tree) become WS_REFUSED; limit overruns (count, declared size, total,
 * raw stream bytes) fail the whole stream with -EFBIG before the data is read. The result is
 * sorted. Nothing the box names is ever used as a host path: staged files are named by hash. */
int ws_manifest_from_tar(int fd, const struct ws_tar_opts *o, struct ws_manifest *ret,
			 struct ws_notes *notes, pd_err *err);

/* The host-executing class of entry e of manifest m, by path, by content for gitattributes
 * (read from staging_fd; unreadable counts as executing) and by context (a "config" or
 * "hooks/" beside a HEAD file and an objects/ directory is a bare git repository's). */
enum ws_exec ws_manifest_exec(const struct ws_manifest *m, const struct ws_entry *e, int staging_fd);
