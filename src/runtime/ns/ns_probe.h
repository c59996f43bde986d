/* ns_probe.h — what this host offers the ns backend, for `paddock doctor`. Probes run in
 * short-lived child processes and change nothing on the host (no cgroup is created, no
 * controller enabled). Every field the ns backend needs is a reason it would refuse to start:
 * userns, the seven namespace types, overlayfs and the new mount API in a user namespace,
 * Landlock (ABI >= 1), seccomp filters and a writable cgroup. Subordinate ids are optional:
 * without them boxes have no root user (PADDOCK_ROOT_OK=0). */
#pragma once

#include <limits.h>

#include "util/error.h"

enum ns_probe_ns {
	NS_PROBE_USER = 1u << 0,
	NS_PROBE_MNT = 1u << 1,
	NS_PROBE_PID = 1u << 2,
	NS_PROBE_IPC = 1u << 3,
	NS_PROBE_UTS = 1u << 4,
	NS_PROBE_NET = 1u << 5,
	NS_PROBE_CGROUP = 1u << 6,
	NS_PROBE_ALL = (1u << 7) - 1,
};

struct ns_probe_result {
	bool userns;                 /* this caller can create a user namespace */
	bool userns_unprivileged;    /* ordinary users can (sysctls; as root: tried as nobody) */
	char newuidmap[64];          /* path of newuidmap, "" if absent */
	char newgidmap[64];
	bool subid_range;            /* this user has /etc/subuid and /etc/subgid ranges */
	uint32_t subuid_start, subuid_count;
	unsigned namespaces;         /* enum ns_probe_ns bits that could be created in a userns */
	bool overlay_userns;         /* overlayfs mountable inside a user namespace */
	bool mount_api;              /* open_tree + mount_setattr work inside a user namespace */
	int landlock_abi;            /* 0 = no Landlock */
	bool seccomp_filter;
	int cgroup_version;          /* 2 or 1 for where boxes would go, 0 = none */
	bool cgroup_ok;              /* a writable (delegated) cgroup exists for this caller */
	char cgroup_path[PATH_MAX];  /* its parent directory */
	char cgroup_error[512];      /* why not, with what to do */
};

/* Fills *ret; returns 0 when the ns backend can start boxes for this caller, -EOPNOTSUPP
 * when a required layer is missing (the fields say which). */
int ns_probe(struct ns_probe_result *ret);
