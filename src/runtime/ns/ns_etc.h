/* ns_etc.h — the box's /etc: a short list of host files copied (never bound, so the box's
 * edits stay in the box) or bound read-only, plus files paddock writes itself. Nothing else
 * of the host's /etc (shadow, ssh keys, sudoers, ld.so.preload, environment, gitconfig...)
 * is ever visible. */
#pragma once

#include "runtime/ns/ns.h"

enum ns_etc_kind {
	NS_ETC_COPY,       /* a regular file (copied) or a symlink (re-created) */
	NS_ETC_COPY_DIR,   /* the regular files and symlinks directly inside a directory */
	NS_ETC_BIND_RO,    /* a directory bound read-only */
};

struct ns_etc_entry {
	const char *name;  /* relative to /etc, may contain one '/' */
	enum ns_etc_kind kind;
};

/* Caps on what is copied from the host's /etc. */
#define NS_ETC_MAX_FILE (4u << 20)
#define NS_ETC_MAX_DIR_ENTRIES 256

/* Pure: the host /etc entries a box gets; every one is optional. */
const struct ns_etc_entry *ns_etc_entries(size_t *ret_n);
/* Pure: true for names paddock writes itself (so a host copy is never taken). */
bool ns_etc_generated(const char *name);

#define NS_ETC_N_GENERATED 6
/* Pure: passwd, group, hosts, hostname, resolv.conf and nsswitch.conf for a box. shell is the
 * agent's login shell. Fills ret[NS_ETC_N_GENERATED] with malloc'd data (ns_etc_files_free). */
void ns_etc_generate(const char *hostname, const char *shell, struct ns_file ret[NS_ETC_N_GENERATED]);
void ns_etc_files_free(struct ns_file *f, size_t n);
