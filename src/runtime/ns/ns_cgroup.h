/* ns_cgroup.h — the box's cgroup: memory, pids and cpu limits set before any box process
 * runs, and a way to kill everything in it.
 *
 * Where a box cgroup goes (first that works):
 *   cgroup v2, host root:       <v2>/paddock/box-NAME          (controllers enabled on the way)
 *   cgroup v2, ordinary user:   <parent of the caller's cgroup>/box-NAME when that parent is
 *                               owned by the user and has the controllers (systemd user@.service
 *                               delegation), else <v2>/paddock/<uid>/box-NAME when root made it
 *                               (ns_cgroup_setup_user) and the caller already runs beneath it
 *                               (v2 only lets a user move processes inside a subtree it owns)
 *   cgroup v1 (hybrid hosts):   /sys/fs/cgroup/<memory|pids|cpu|freezer>/paddock[/<uid>]/box-NAME
 * If none works the start is refused. */
#pragma once

#include "runtime/ns/ns.h"

enum ns_cg_ctrl {
	NS_CG_MEMORY,
	NS_CG_PIDS,
	NS_CG_CPU,
	NS_CG_FREEZER,   /* v1 only, optional: used to kill the box without pid races */
	NS_CG_MAX,
};

/* One limit to write: <dir>/<file> = value. */
struct ns_knob {
	enum ns_cg_ctrl ctrl;    /* which v1 hierarchy (ignored on v2) */
	const char *file;
	char value[32];
	bool optional;           /* absent file is fine (swap accounting off) */
};
#define NS_MAX_KNOBS 8
/* Pure: the knobs for these limits. version is 1 or 2. Returns the count. */
size_t ns_cgroup_knobs(int version, const struct ns_limits *lim, struct ns_knob ret[NS_MAX_KNOBS]);
/* Pure: cfs quota in microseconds per 100 ms period for cpus_milli (>= 1000 us). */
uint64_t ns_cgroup_cpu_quota(uint32_t cpus_milli);

struct ns_cgroup {
	int version;                 /* 1 or 2 */
	char *dirs[NS_CG_MAX];       /* v2: dirs[0] only; v1: one per controller (freezer may be NULL) */
};

/* Where the box cgroup of this caller would be made, for paddock doctor; changes nothing.
 * Fills *ret with the parent directories (caller frees with ns_cgroup_free). */
int ns_cgroup_locate(bool need_cpu, struct ns_cgroup **ret, pd_err *err);
/* The box cgroup's name for box NAME whose state lives in state_dir: NAME.HHHHHHHH, the hash
 * of state_dir and its inode number, so that boxes of one name in two PADDOCK_HOMEs of one
 * user never share (or block) a cgroup, nor does a box with the cgroup of the earlier box of
 * its name that a run --rm remover has not removed yet (that one's state directory, renamed
 * away but not deleted until then, holds its inode); NAME alone when state_dir is NULL
 * (runtime tests). Caller frees. */
char *ns_cgroup_leaf(const char *name, const char *state_dir);
/* Creates box-NAME with the limits (NAME: a leaf from ns_cgroup_leaf). On failure nothing is left behind. */
int ns_cgroup_create(const char *name, const struct ns_limits *lim, struct ns_cgroup **ret, pd_err *err);
/* Moves pid (not yet running box code) into the box cgroup(s). The slow way: a write of a pid
 * to cgroup.procs takes the kernel's global threadgroup rwsem for writing, and the first
 * writer after an idle period waits for an RCU grace period (6-18 ms measured here). Only the
 * fallback for v2 kernels without CLONE_INTO_CGROUP. */
int ns_cgroup_attach(const struct ns_cgroup *cg, pid_t pid, pd_err *err);

/* How the box's first process gets into the box cgroup without that global lock:
 *   v2: clone3(CLONE_INTO_CGROUP) with *ret_clone_fd (the box cgroup's directory): the
 *       process is born there, nothing migrates;
 *   v1: the child writes "0" (itself) to each hierarchy's `tasks` file (ret_task_fds, opened
 *       here by the parent), which migrates one thread — the kernel skips the global lock
 *       for that case — and is charged to the box from its first allocation on.
 * The kernel checks permission against the credentials the file was opened with (the
 * parent's), which is why the parent opens them. Unused fds are -1; all are O_CLOEXEC. */
int ns_cgroup_open_join(const struct ns_cgroup *cg, int *ret_clone_fd, int ret_task_fds[NS_CG_MAX], pd_err *err);
/* child: joins the box cgroup through p->cg_join_fds (no-op for fds of -1). */
int ns_cgroup_join_self(const struct ns_plan *p, struct ns_report *rep);
/* SIGKILLs, through pidfds, each of pids[0..n) that relist (a second reading of the
 * cgroup's members, made after the pidfds were opened) still lists: a pid reused by a process
 * outside the box between the first reading and the opens is left alone. Returns n. */
size_t ns_cgroup_kill_pids(const pid_t *pids, size_t n, size_t (*relist)(void *ctx, pid_t **ret), void *ctx);
/* SIGKILLs every process in the box cgroup (cgroup.kill on v2, freeze + kill + thaw on v1). */
void ns_cgroup_kill(const struct ns_cgroup *cg);
/* Removes the box cgroup directories, retrying briefly while they drain. */
int ns_cgroup_remove(const struct ns_cgroup *cg);
/* One attempt at removing them: -EBUSY while a process is still in one. */
int ns_cgroup_remove_now(const struct ns_cgroup *cg);
void ns_cgroup_free(struct ns_cgroup *cg);
/* Removes the empty cgroup a box left when its supervisor was killed (paddock rm of a dead
 * box). Best effort; a cgroup that still holds processes stays. */
bool ns_cgroup_remove_stale(const char *name); /* true: none of them is left */
static inline void ns_cgroup_freep(struct ns_cgroup **cg) { ns_cgroup_free(*cg); }

/* As root: pre-creates the per-user delegated parents (v2 <v2>/paddock/<uid>, v1
 * /sys/fs/cgroup/<ctrl>/paddock/<uid>) owned by uid:gid, so that user's boxes get limits.
 * Exposed as `paddock system setup --user NAME`. */
int ns_cgroup_setup_user(uid_t uid, gid_t gid, pd_err *err);
