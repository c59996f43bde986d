/* ns_idmount.h — idmapped writable binds for boxes started by host root (parent side).
 *
 * Host uid 0 is never mapped into a box, so the agent of a box of root is a subordinate uid
 * and could not write root's project through a plain bind. For each writable bind the
 * supervisor clones the host tree itself (open_tree, detached), gives the clone the mount id
 * map of ns_idmap_build_mount (the agent's host id <-> root on disk) and hands its fd to the
 * box's first process through the plan, which attaches it with move_mount instead of cloning
 * the source. docs/architecture.md, "Identity mapping for host root". */
#pragma once

#include "runtime/ns/ns.h"
#include "runtime/ns/ns_idmap.h"

/* For each of binds[0..n): ret_fds[i] is the fd of a detached, idmapped, nosuid+nodev clone
 * of the host path (O_CLOEXEC), or -1 for a read-only bind, a source the parent cannot open
 * as a plain directory or file (the child refuses it as before), a world-writable sticky
 * directory (/tmp: root-owned files and symlinks planted there would defeat the host's
 * protected_symlinks) or a filesystem/kernel that refuses idmapped mounts (EINVAL, EPERM,
 * ENOSYS, EOPNOTSUPP). The child binds those plainly; *ret_plain counts the last two kinds. The maps are the box's (ns_idmaps_for_caller of host root).
 * On error every fd is closed and set to -1, and no helper process is left. */
int ns_idmount_open(const struct box_bind *binds, size_t n, const struct ns_idmaps *box, int ret_fds[],
		    size_t *ret_plain, pd_err *err);
/* Closes fds[0..n) that are open and sets them to -1. */
void ns_idmount_close(int fds[], size_t n);
