/* runtime.h — what a backend must provide: build a box around paddock-init and hand the
 * supervisor a control channel to it. A backend only decides *how the box is built*; exec
 * sessions, the protocol, the network and the policy are shared. */
#pragma once

#include "util/error.h"

enum box_user {
	BOX_USER_INVALID = 0,
	BOX_USER_AGENT, /* uid/gid 1000 "agent", home /home/agent: the default */
	BOX_USER_ROOT,  /* uid 0 inside the box, no capabilities */
	BOX_USER_MAX,
};

struct box_bind {
	char *host;  /* absolute host path */
	char *box;   /* absolute path inside the box */
	bool readonly;
};

/* Everything a runtime needs to build one box. Owned by the supervisor. */
struct box_config {
	char *name;        /* sandbox name (also the box's hostname) */
	char *state_dir;   /* $PADDOCK_HOME/boxes/NAME: private to this box, mode 0700 */
	uint64_t memory;   /* bytes, 0 = backend default */
	uint32_t cpus_milli; /* 1000 = one CPU, 0 = no limit */
	uint32_t pids;     /* max tasks, 0 = backend default */
	uint64_t disk;     /* bytes for the box's writable layer, 0 = default */
	struct box_bind *binds;
	size_t n_binds;
	/* Images (issue 6): an image's unpacked tree (image/store.h) used read-only as the root's
	 * lower layer, or NULL for the backend's default (ns: the host view). */
	char *rootfs;
	/* Image builds: a host directory holding `upper/` and `work/`, used as the overlay's
	 * writable layer instead of the box's tmpfs so what the box changed outlives it (the
	 * profile builder turns upper/ into a layer). NULL for every ordinary box. */
	char *rootfs_upper;
	/* vm: the image's base disk (image/vmdisk.h) in place of the default base image, or NULL */
	char *disk_image;
	/* vm: "kvm" | "tcg" | "auto" (--accel), or NULL: $PADDOCK_VM_ACCEL, else auto */
	const char *vm_accel;
	/* vm: keep the guest's ASLR under TCG too (--guest-aslr); under KVM it is always on */
	bool vm_guest_aslr;
	/* Tests force a layer to fail (fail-closed checks): a comma-separated list of layer
	 * names taken from $PADDOCK_TEST_FAIL_LAYER only when PADDOCK_TESTING=1 is set. */
	const char *test_fail_layer;
	/* Network (issue 4): when set, the box gets one interface whose frames the supervisor's
	 * network stack handles (ns: a TAP device in the box's netns, its fd in h->net_fd). */
	bool network;
	/* The project's host path, to be made a symlink to /workspace inside the box (copied
	 * workspaces), or NULL. Best effort; h->ws_alias_made says whether the backend did it
	 * (ns: while it builds the root; others leave it to a session of paddock-init). */
	const char *ws_alias;
	/* The supervisor copies the project straight into the box's /workspace (ns): the
	 * backend hands over a directory fd of it (h->ws_fd) before any session can run. */
	bool ws_direct;
	/* vm: boot even a fresh box (no template restore): the retry after a failed restore */
	bool vm_cold;
	/* Work of the supervisor's that needs no box, run while the backend waits for the box's
	 * first process (ns: its setup child works on another CPU meanwhile), or NULL. */
	void (*while_waiting)(void);
};

/* A running box as the supervisor sees it. */
struct box_handle {
	pid_t pid;         /* host pid of the box's PID 1 (or of qemu/runsc) */
	int ctl_fd;        /* connected control channel to paddock-init, O_CLOEXEC, HELLO not yet read */
	int pidfd;         /* pidfd of pid, or -1 */
	int net_fd;        /* the box's network interface as the supervisor sees it (TAP fd), or -1 */
	/* ns: the explicit proxy's listening TCP socket inside the box's own network namespace
	 * (the box reaches the proxy over its kernel loopback); otherwise the proxy is a forward
	 * of the network stack and this is unset */
	bool has_proxy_fd;
	int proxy_fd;
	bool ws_alias_made; /* cfg->ws_alias was handled (made, or found impossible) by the backend */
	bool has_ws_fd;     /* cfg->ws_direct: ws_fd is the box's /workspace (O_CLOEXEC) */
	int ws_fd;
	/* ns, host root: writable binds left plain (not idmapped), where the box writes as its own
	 * subordinate uids instead of as root (docs/architecture.md) */
	unsigned binds_plain;
	void *priv;        /* backend state (cgroup paths, ...) */
};

struct runtime_ops {
	const char *name;
	/* Builds and starts the box; on success fills *ret. On failure nothing is left behind
	 * (no process, no cgroup, no mount) and err says which layer failed and why. */
	int (*start)(const struct box_config *cfg, struct box_handle *ret, pd_err *err);
	/* Kills the whole box at once (SIGKILL to everything in it). Safe to call twice. */
	void (*kill)(struct box_handle *h);
	/* Releases backend resources after the box's PID 1 has exited (cgroups, ...); closes
	 * h->pidfd and sets it to -1. Safe to call once per successful start. */
	void (*cleanup)(struct box_handle *h);
	/* Optional: drops the handle in this process without releasing anything of the box, for
	 * a caller that has handed a copy of it (and its pidfd) to another process which waits
	 * for PID 1 and then calls cleanup on the copy. NULL: cleanup must run here. */
	void (*forget)(struct box_handle *h);
};

extern const struct runtime_ops runtime_ns;
