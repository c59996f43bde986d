/* ns_idmap.h — who is who inside a box: parsing /etc/subuid, building and writing the
 * uid/gid maps of the box's user namespace, and checking what the kernel took.
 *
 * Policy (docs/ns-backend.md):
 *  - ordinary caller with a subordinate range S (count N): inside i -> S+i for i < min(N,65536),
 *    except inside 1000 ("agent") -> the caller, so files the box writes belong to the user;
 *    written with newuidmap/newgidmap (setgroups stays "allow" and the child drops groups);
 *  - ordinary caller without a range: only 1000 -> caller, written by us with setgroups
 *    "deny"; inside root does not exist (PADDOCK_ROOT_OK=0);
 *  - host root: inside 0..65535 -> root's first /etc/subuid range, else the fixed range
 *    NS_HOST_ROOT_BASE..+65535. Host uid 0 is never mapped into a box; its writable binds
 *    are idmapped mounts instead (ns_idmap_build_mount, ns_idmount.h). */
#pragma once

#include "util/error.h"

/* 2,000,000,000: above Debian's SUB_UID_MAX (600,100,000) so useradd never hands it out,
 * outside systemd's container (524288..1879048191) and foreign (0x7FFE0000..) ranges, below
 * 2^31 so tools that treat uid_t as signed are safe. Checked against /etc/passwd, /etc/group
 * and /etc/sub[ug]id before use. */
#define NS_HOST_ROOT_BASE 2000000000u
#define NS_MAP_SPAN 65536u

#define NS_SUBID_MAX_TEXT (1u << 20)    /* bytes of /etc/subuid we read */
#define NS_SUBID_MAX_LINES 65536u

struct ns_subid_range {
	uint32_t start, count;
};

/* Finds the first range of user `name` (or of the numeric id, as newuidmap accepts) in
 * /etc/subuid-format text. Malformed lines are skipped. 0, -ENOENT, -E2BIG past the caps. */
int ns_subid_find(const char *text, size_t len, const char *name, uint32_t id, struct ns_subid_range *ret);
/* True if any range in subuid-format text intersects [start, start+count). */
bool ns_subid_overlaps(const char *text, size_t len, uint32_t start, uint32_t count);
/* True if the third field (uid of passwd, gid of group) of any line is in [start, start+count). */
bool ns_idfile_overlaps(const char *text, size_t len, uint32_t start, uint32_t count);

struct ns_idmap_extent {
	uint32_t inside, outside, count;
};
struct ns_idmap {
	struct ns_idmap_extent e[4];
	size_t n;
};

/* Builds the map for one id kind. sub may be NULL (no range). caller_is_root selects the
 * host-root policy, where sub must be set (root's range or the fixed one). */
void ns_idmap_build(uint32_t caller_id, bool caller_is_root, const struct ns_subid_range *sub, struct ns_idmap *ret);
/* The id map of an idmapped mount for a writable bind of a box started by host root
 * (docs/architecture.md, "Identity mapping for host root"). Pure. From the box's map (inside
 * -> outside): the agent's host id (the outside id of inside NS_AGENT_ID) <-> inside
 * caller_id, and every other outside id of the box map as itself, split around the agent's.
 * In mount-idmap terms "inside" is the id on disk and "outside" the id a process holds, so
 * on disk the agent's writes belong to the caller, the caller's files are the agent's, and
 * box root's writes keep its subordinate id. -EINVAL when the agent is unmapped or caller_id
 * falls in the box's outside ranges, -E2BIG past the map's capacity. */
int ns_idmap_build_mount(const struct ns_idmap *box, uint32_t caller_id, struct ns_idmap *ret);
/* True if inside id `id` is mapped. */
bool ns_idmap_maps(const struct ns_idmap *m, uint32_t id);
/* Writes "inside outside count\n" lines. -ENOBUFS if buf is too small. */
int ns_idmap_format(const struct ns_idmap *m, char *buf, size_t size);
/* True if /proc/PID/uid_map text describes exactly m (same extents, any order). */
bool ns_idmap_matches(const struct ns_idmap *m, const char *text);

/* The maps one box gets, and how they are written. */
struct ns_idmaps {
	struct ns_idmap uid, gid;
	bool use_helpers;      /* newuidmap/newgidmap (ordinary caller with ranges) */
	bool setgroups_deny;   /* we write the gid map ourselves without privilege */
	bool root_ok;          /* inside 0 is mapped */
};
/* Decides the maps for the calling process (reads /etc/subuid, /etc/subgid, /etc/passwd,
 * /etc/group as needed). */
int ns_idmaps_for_caller(struct ns_idmaps *ret, pd_err *err);
/* Writes and verifies the maps of process pid (our unreaped child, so the pid cannot be
 * reused meanwhile). */
int ns_idmaps_write(const struct ns_idmaps *m, pid_t pid, pd_err *err);
/* The first /etc/subuid (gid: /etc/subgid) range of the user with this uid. */
int ns_subid_lookup(bool gid, uid_t uid, struct ns_subid_range *ret);
/* Path of newuidmap/newgidmap, or NULL. */
const char *ns_idmap_helper(bool gid);
