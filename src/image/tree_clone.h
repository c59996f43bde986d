/* tree_clone.h — a new tree that shares every non-directory of an existing one by hard link.
 *
 * An image whose first layers are another stored image's (a profile image over its base, a
 * derived image pulled over a shared base) starts from a clone of that tree instead of
 * unpacking those layers again: directories are made anew (mode, owner, times, user.*
 * attributes copied), files, symlinks, FIFOs and device nodes are hard links. Sound because
 * the layer applier never writes through an existing file: it removes what is there and
 * creates a new one (layer.h), so applying the remaining layers onto the clone never changes
 * the source tree; and trees are only ever mounted read-only. */
#pragma once

#include "util/error.h"

#define TREE_CLONE_DEPTH_MAX 256

/* Clones the contents of srcfd into the (empty) directory dstfd; ret_entries (may be NULL)
 * counts what was made. */
int img_tree_clone(int srcfd, int dstfd, uint64_t *ret_entries, pd_err *err);
