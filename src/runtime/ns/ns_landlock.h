/* ns_landlock.h — Landlock for the box: every write-type filesystem access the running kernel
 * knows is handled, and allowed only beneath the box's writable directories and writable
 * binds. Reads and execution are not restricted (the mount layout decides what exists).
 * With ABI >= 6, abstract unix sockets and signals are scoped to the box. */
#pragma once

#include "runtime/ns/ns.h"

/* The ABI of the running kernel (landlock_create_ruleset(NULL, 0, VERSION)), or 0 when
 * Landlock is absent or disabled. */
int ns_landlock_abi(void);
/* Pure: the write-type access rights ABI abi handles (0 for abi < 1). */
uint64_t ns_landlock_fs_handled(int abi);
/* Pure: the subset of rights that apply to a regular file (for rules on file binds). */
uint64_t ns_landlock_fs_file_rights(int abi);
/* Pure: LANDLOCK_SCOPE_* flags for abi (0 below 6). */
uint64_t ns_landlock_scoped(int abi);
/* Pure: the box directories where writing is allowed (NULL-terminated). */
const char *const *ns_landlock_writable_dirs(void);

/* child: restricts the calling process (needs no_new_privs). */
int ns_landlock_apply(const struct ns_plan *p, struct ns_report *rep);
