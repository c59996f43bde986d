/* layer.h — applies one OCI / Docker image layer (a tar stream, plain, gzip or zstd) onto a
 * directory tree, safely.
 *
 * The tar is untrusted. What keeps it inside the tree:
 *   - every entry name is normalised lexically first: a leading "/" or "./" is dropped, "."
 *     and empty components are dropped, and a ".." component refuses the whole layer;
 *   - every parent directory is opened beneath the root fd with openat2(RESOLVE_BENEATH |
 *     RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS), or an O_NOFOLLOW component walk where
 *     openat2 is missing (src/workspace/ws_resolve.c); a symlink on the way — e.g. one an
 *     earlier entry planted — refuses the layer, nothing is written through it;
 *   - the last component is only ever created (O_CREAT|O_EXCL|O_NOFOLLOW, mkdirat,
 *     symlinkat, linkat, mknodat) after removing what was there: an existing file or symlink
 *     is never opened for writing or followed;
 *   - symlinks are created as written (their targets are data inside the image);
 *   - hard links may only point at regular files extracted earlier in the same layer.
 * OCI semantics: ".wh.NAME" deletes NAME of a lower layer, ".wh..wh..opq" empties its
 * directory of lower-layer content (entries of this layer survive both, whatever the order);
 * other ".wh..wh.*" (aufs bookkeeping) are skipped; an existing directory met by a directory
 * entry is kept (merged), anything else is replaced.
 * Privilege: ownership, setuid/setgid bits and device nodes only when opts.privileged
 * (default: running as root). Otherwise owners are ignored, setuid/setgid are stripped,
 * char/block devices are skipped (counted) and directories keep u+rwx so later layers can
 * still be applied. Extended attributes: only "user.*" but "user.overlay.*" is applied
 * (security.capability, trusted.*, security.selinux, overlayfs's own are skipped and counted). The root directory's own entry is
 * ignored. Limits: total bytes, entry count (a parent directory no entry names counts as one
 * when it is made), depth, PATH_MAX / NAME_MAX, and the bytes of all the paths the layer
 * writes (the applier keeps them in memory: a layer of deep, long names is refused before
 * it fills it). */
#pragma once

#include "util/error.h"

#define LAYER_BYTES_MAX_DEFAULT (32ULL << 30)
#define LAYER_ENTRIES_MAX_DEFAULT 1000000
#define LAYER_DEPTH_MAX_DEFAULT 128
#define LAYER_PATH_BYTES_MAX_DEFAULT (256ULL << 20)
#define LAYER_XATTR_VALUE_MAX (64 * 1024)
#define LAYER_SHIFT_SPAN 65536

struct layer_options {
	bool privileged;       /* apply owners, keep setuid/setgid, create device nodes */
	uint64_t max_bytes;    /* file data (and apparent sizes) of the whole layer */
	uint64_t max_entries;  /* entries, and parent directories made for them */
	uint64_t max_path_bytes; /* the paths written and their parents, each counted once */
	unsigned max_depth;    /* path components of one entry */
	/* privileged only: owners land at shift + id (ids 0..65535; others become shift+65534),
	 * the way a box's user namespace maps them (root's boxes never see host uid 0) */
	uint32_t uid_shift, gid_shift;
	/* privileged only, -1 = none: a directory holding this layer's regular files at their
	 * paths (the profile build's upper layer, the layer was captured from it): a file found
	 * there with the entry's size and mtime is hard-linked into the tree instead of written,
	 * every extended attribute of the inode replaced by the entry's (layer_options_default
	 * sets -1) */
	int link_from;
};

struct layer_stats {
	uint64_t entries, files, dirs, symlinks, hardlinks, others;  /* others: fifos, devices */
	uint64_t whiteouts, opaque_dirs, bytes;
	uint64_t devices_skipped, xattrs_skipped, setid_stripped, ignored;  /* sockets, aufs, "." */
	uint64_t linked;  /* files hard-linked from link_from (counted in files too) */
	uint64_t implicit_dirs;  /* parent directories made that no entry named */
};

struct archive;
/* The decompressors a layer may use (gzip, zstd; plain needs none), for every reader of
 * layer blobs (the applier, the diff_id check) to accept the same set. */
void layer_read_support_filters(struct archive *a);

/* privileged = (geteuid() == 0), the default limits. */
void layer_options_default(struct layer_options *o);

/* Applies the tar read from tarfd onto the tree at rootfd. On error the tree may hold part of
 * the layer (callers extract into a fresh directory and discard it on failure); it never holds
 * anything outside rootfd. ret_stats may be NULL. */
int layer_apply_fd(int rootfd, int tarfd, const struct layer_options *o,
		   struct layer_stats *ret_stats, pd_err *err);
/* The same from memory (tests, fuzzing). */
int layer_apply_buffer(int rootfd, const void *buf, size_t len, const struct layer_options *o,
		       struct layer_stats *ret_stats, pd_err *err);
