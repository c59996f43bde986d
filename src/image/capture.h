/* capture.h — an overlayfs upper directory turned into an OCI layer (an uncompressed tar).
 *
 * A profile build runs its install commands in a box whose overlay writes into a host
 * directory (runtime.h, rootfs_upper); what the box changed is then exactly that directory,
 * in overlayfs's own encoding (with `userxattr`, as unprivileged mounts use):
 *   - a character device 0:0 is a whiteout: "NAME" becomes the entry ".wh.NAME";
 *   - a directory with user.overlay.opaque = "y" hides the lower directory: the directory's
 *     entry is followed by "DIR/.wh..wh..opq";
 *   - user.overlay.redirect and user.overlay.metacopy (a renamed lower directory, a file
 *     whose data is still below) cannot be expressed as a layer: the capture fails (userxattr
 *     mounts never write them: redirect_dir=nofollow and metacopy=off are forced there);
 *   - other user.overlay.* attributes (origin, impure) are bookkeeping and left out.
 * Entries are written in sorted order with owners as the caller sees them (the builder walks
 * from inside the box's user namespace, so these are the box's ids), modes, mtimes, user.*
 * xattrs, symlinks as written, and hard links between files of the tree. Sockets are left
 * out. `skip` names relative paths (and their subtrees) to leave out entirely: what the box's
 * runtime generates at every start (/etc/passwd, /tmp, ...), never part of an image. */
#pragma once

#include "util/error.h"

#define CAPTURE_DEPTH_MAX 128

struct capture_stats {
	uint64_t entries, files, bytes, whiteouts, opaque_dirs, hardlinks, skipped;
};

/* Writes the layer for the tree at dirfd to out_fd (pax tar, not compressed). ret_stats may
 * be NULL. libarchive converts names from the locale's charset to pax's UTF-8: the caller runs
 * in a UTF-8 locale (C.UTF-8), where names pass as they are and one that is not valid UTF-8
 * is written as bytes with hdrcharset=BINARY for that entry alone (in the C locale a non-ASCII
 * name fails to convert, and forcing BINARY for the archive puts a pax header on every
 * entry). */
int img_capture_upper(int dirfd, int out_fd, char *const *skip, struct capture_stats *ret_stats, pd_err *err);
