/* kernel_spawn.h — run a host tool (apt-get, dpkg-deb, qemu-img) to completion and capture
 * its output. Used to fetch the guest kernel through the host's own apt and by the vm runtime
 * for qemu-img; nothing here runs through a shell, and the child gets only fds 0-2. */
#pragma once

#include "util/error.h"

#define IMAGE_RUN_MAX_OUTPUT (1024u * 1024u)

/* Runs argv[0] (searched in PATH) in cwd (NULL = ours) with stdin on /dev/null, stdout and
 * stderr both captured (at most IMAGE_RUN_MAX_OUTPUT bytes), environment ours plus LC_ALL=C.
 * Returns 0 when it exits 0 (with *ret_out if non-NULL); otherwise an error that names the
 * tool and quotes the end of its output. */
int image_run(char *const argv[], const char *cwd, char **ret_out, pd_err *err);
