/* ns.h — internals of the ns backend: how the layers of one box start fit together.
 *
 * The supervisor side (the "parent") prepares everything that needs memory or libraries in
 * a struct ns_plan: id maps, the compiled seccomp program, the files to write into /etc, the
 * environment of paddock-init. The box's first process (the "child") is created with a raw
 * clone3(), which bypasses glibc's fork handlers: if the supervisor is multi-threaded another
 * thread may hold the malloc lock, so the child only makes system calls on the plan and never
 * calls malloc, stdio or anything that may lock. Every child-side function says so with
 * "child:" in its comment. */
#pragma once

#include <linux/filter.h>
#include <sys/resource.h>

#include "runtime/runtime.h"

/* Defaults when box_config leaves a limit at 0. */
#define NS_DEFAULT_MEMORY (UINT64_C(2) << 30)
#define NS_DEFAULT_PIDS 1024u
#define NS_DEFAULT_DISK (UINT64_C(2) << 30)

#define NS_AGENT_ID 1000u       /* uid and gid of "agent" inside every box */
#define NS_MAX_BINDS 64         /* cfg->binds beyond this are refused */
#define NS_CTL_FD 3             /* where paddock-init finds its control socket */
#define NS_SETUP_TIMEOUT_MS 30000

/* The layers of a box, in the order they are put in place. Each failure names its layer. */
enum ns_layer {
	NS_LAYER_INVALID = 0,
	NS_LAYER_CGROUP,     /* memory/pids/cpu limits */
	NS_LAYER_USERNS,     /* clone3 with the namespaces, uid/gid maps */
	NS_LAYER_NS,         /* cgroup namespace, hostname, loopback */
	NS_LAYER_MOUNT,      /* the box's root filesystem */
	NS_LAYER_PIVOT,      /* pivot_root into it, old root detached */
	NS_LAYER_FDS,        /* only the control socket and /dev/null survive */
	NS_LAYER_NNP,        /* PR_SET_NO_NEW_PRIVS */
	NS_LAYER_RLIMIT,
	NS_LAYER_CAPS,       /* bounding set, ambient and inheritable sets */
	NS_LAYER_LANDLOCK,
	NS_LAYER_SECCOMP,
	NS_LAYER_EXEC,       /* execveat of paddock-init */
	NS_LAYER_NET,        /* the box's one interface: a TAP whose fd goes to the supervisor */
	NS_LAYER_MAX,
};

const char *ns_layer_name(enum ns_layer l);
/* What a user can do about a failure of this layer (one sentence). */
const char *ns_layer_hint(enum ns_layer l);
/* Parses a comma-separated list of layer names ("cgroup,landlock") into a mask of
 * (1u << layer). Unknown names are ignored. NULL gives 0. */
unsigned ns_fail_mask_parse(const char *list);
/* The mask to inject for cfg: non-zero only when PADDOCK_TESTING=1 is in the environment. */
unsigned ns_fail_mask_from_cfg(const struct box_config *cfg);

/* Limits of one box, defaults applied. */
struct ns_limits {
	uint64_t memory;      /* bytes */
	uint32_t pids;
	uint32_t cpus_milli;  /* 0 = no cpu limit */
	uint64_t disk;        /* bytes of the box's writable tmpfs */
};
void ns_limits_from_cfg(const struct box_config *cfg, struct ns_limits *ret);
/* The box's writable tmpfs is charged to its memory: at most the memory limit less /dev/shm's
 * quarter and a reserve for processes (a quarter, 64 MiB..512 MiB), so a full disk is ENOSPC
 * and never an out-of-memory kill. Pure. */
uint64_t ns_disk_cap(uint64_t disk, uint64_t memory);

/* Box names double as hostnames and cgroup directory names: 1..63 of [A-Za-z0-9_.-], first
 * character alphanumeric. */
bool ns_name_valid(const char *name);
/* A bind's path inside the box: absolute, normalised (no "." or ".." component, no "//", no
 * trailing "/"), not "/" and not inside /proc, /dev or /sys, shorter than PATH_MAX. */
bool ns_box_path_valid(const char *path);

/* A file the parent generated for /etc (passwd, hosts, ...). */
struct ns_file {
	const char *name;     /* relative to /etc */
	char *data;
	size_t len;
	mode_t mode;
};

/* Everything the child needs, prepared by the parent. Strings point into parent memory that
 * the child sees through its copy-on-write copy of the address space. */
struct ns_plan {
	/* credentials inside the box */
	uid_t uid;                /* what the child becomes: 0 when inside root is mapped, else 1000 */
	gid_t gid;
	bool root_ok;             /* inside uid 0 is mapped */
	bool may_setgroups;       /* setgroups is "allow": drop the caller's supplementary groups */
	int tty_gid;              /* gid=5 for devpts when mapped, else -1 */
	/* root filesystem */
	const char *hostname;
	char root_opts[64];       /* tmpfs options of the writable layer */
	char shm_opts[64];
	const struct box_bind *binds;
	size_t n_binds;
	int bind_trees[NS_MAX_BINDS]; /* per bind: a detached, idmapped tree made by the parent
				       * (ns_idmount.h) to attach instead of a clone, or -1 */
	const char *rootfs;       /* an image's tree as the root's lower layer, or NULL: host view */
	const char *rootfs_upper; /* with rootfs: a host dir with upper/ and work/ for the overlay */
	const char *ws_alias;     /* the project's host path: a symlink to /workspace, or NULL */
	const struct ns_file *etc_files;
	size_t n_etc_files;
	/* confinement */
	struct rlimit lim_core, lim_nofile, lim_nproc, lim_fsize;
	uint64_t caps_keep;       /* bit per capability kept in the bounding set */
	int cap_last;
	int landlock_abi;
	uint64_t ll_handled_fs;
	uint64_t ll_scoped;
	struct sock_fprog seccomp;
	char *argv[2];
	char *envp[7];
	char env_store[6][96];
	unsigned fail_mask;
	/* network (issue 4): a TAP "eth0" in the box's netns, its fd sent back on sync_fd */
	bool network;
	bool ws_fd_wanted;        /* hand the box's /workspace (a directory fd) to the parent */
	/* fds as the child sees them */
	int sync_fd;              /* parent writes one byte when the id maps (and a cgroup it had to
				   * move the child into) are in place */
	int cg_join_fds[4];       /* cgroup v1: the box cgroups' `tasks` files, opened by the parent,
				   * that the child writes "0" to first (see ns_cgroup_join_self);
				   * -1 when unused (v2: the child is born in its cgroup) */
	int report_fd;            /* CLOEXEC pipe: a struct ns_report on failure, EOF on exec */
	int ctl_fd;               /* becomes NS_CTL_FD */
	int init_fd;              /* sealed memfd of paddock-init */
	int trace_fd;             /* PADDOCK_DEBUG: stderr for timestamps of the setup steps, else -1 */
};

/* What the child sends through report_fd when a layer fails (one atomic write). */
struct ns_report {
	int32_t layer;
	int32_t code;             /* positive errno */
	char msg[440];
};

/* child: records a failure into rep (vsnprintf only, no malloc) and returns -1. */
int ns_fail(struct ns_report *rep, enum ns_layer layer, int code, const char *fmt, ...) _printf_(4, 5);
/* child: with PADDOCK_DEBUG, one timestamped line per setup step on the caller's stderr (a
 * stack buffer and write(2): nothing that allocates or locks). */
void ns_trace(const struct ns_plan *p, const char *step);
/* child: true when tests asked this layer to fail. */
static inline bool ns_injected(const struct ns_plan *p, enum ns_layer l)
{
	return (p->fail_mask & (1u << l)) != 0;
}

/* child: creates the TAP "eth0" in the box's network namespace, gives it the fixed box
 * address and a default route to the virtual gateway, and sends its fd to the parent over
 * p->sync_fd (SCM_RIGHTS); then the explicit proxy's listening socket, bound on the proxy's
 * address made local to the box. Must run while the child still holds CAP_NET_ADMIN over its own
 * namespaces (before become_box_user). No-op without p->network. */
int ns_net_tap(const struct ns_plan *p, struct ns_report *rep);
/* parent: receives the TAP fd the child sent and then the explicit proxy's listening socket
 * (bound in the box's namespace, see ns_net.c) (the child has already exec'd or failed). */
int ns_net_recv_tap(int sock, int *ret_fd, int *ret_proxy_fd, pd_err *err);
/* child, after the pivot: sends an fd of the box's /workspace to the parent over p->sync_fd
 * (after the TAP's), so the supervisor can copy the project in before any session runs.
 * No-op without p->ws_fd_wanted. */
int ns_ws_send(const struct ns_plan *p, struct ns_report *rep);
/* parent: receives it. */
int ns_ws_recv(int sock, int *ret_fd, pd_err *err);

/* child: the whole setup of the box after clone3; never returns. */
_noreturn_ void ns_child_main(const struct ns_plan *p);

/* Starts a box running the given init memfd (the runtime passes guest_init_memfd(); tests
 * pass a stub). init_fd stays owned by the caller. */
int ns_start_with_init(const struct box_config *cfg, int init_fd, struct box_handle *ret, pd_err *err);
