/* ns_rootfs.h — the box's root filesystem, built by the box's first process inside its own
 * user and mount namespaces (all child-side: no malloc).
 *
 *   /            tmpfs of cfg->disk bytes: the whole writable layer (charged to the box's
 *                memory cgroup, never the host disk)
 *   /usr         overlay: host /usr read-only below, writes go to the tmpfs
 *   /bin /lib..  the host's merged-usr symlinks (or overlays like /usr when not merged)
 *   /etc         a synthesized directory (ns_etc.h)
 *   /dev         tmpfs, read-only, with the host's null zero full random urandom tty bound in
 *                read-only (writes to a device node work on a read-only mount, chmod does not),
 *                a private devpts, /dev/shm
 *   /proc        the box's own procfs with Docker's masked and read-only paths
 *   /sys         an empty directory: no sysfs
 *   binds        cfg->binds, read-only when asked
 * Never any host /home, /root, /run, /var, /tmp, /mnt, /media, /srv, /opt, /boot, /snap. */
#pragma once

#include "runtime/ns/ns.h"

/* Pure: the /proc paths hidden behind /dev/null (files) or an empty read-only tmpfs (dirs),
 * and the ones made read-only (runc's defaults). NULL-terminated. */
const char *const *ns_proc_masked(void);
const char *const *ns_proc_readonly(void);

/* With cfg->rootfs (an image's unpacked tree) the root is instead an overlay: the tree
 * read-only (nosuid, nodev) below, the tmpfs above; /etc is the image's with paddock's
 * generated files written over it; no host /usr. The skeleton, /dev, /proc and binds are the
 * same, and a skeleton path that is not a directory in the image is replaced.
 *
 * child: opens the host side of each bind (and the image tree, into fds[n_binds]) with
 * O_PATH|O_NOFOLLOW while the process still has the caller's host credentials, refusing
 * symlinks and device nodes. */
int ns_rootfs_open_binds(const struct ns_plan *p, int fds[], struct ns_report *rep);
/* child: builds the root, pivots into it and detaches the host's tree. */
int ns_rootfs_build(const struct ns_plan *p, const int bind_fds[], struct ns_report *rep);
