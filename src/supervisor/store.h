/* store.h — sandboxes on disk: $PADDOCK_HOME/boxes/NAME/{config.json,state.json,lock,
 * supervisor.lock,ctl.sock,supervisor.log}.
 *
 * A box's status is derived, never trusted from a file alone: the supervisor holds an
 * exclusive flock on supervisor.lock for its whole life, so "lock is free but state says
 * running" means the supervisor died (SIGKILL, crash) and the box is dead with it. CLI verbs
 * that change a box take `lock` exclusively, so concurrent calls on one box serialise. */
#pragma once

#include "runtime/runtime.h"

#define BOX_NAME_MAX 63

enum box_status {
	BOX_STATUS_INVALID = 0,
	BOX_STATUS_CREATED,  /* defined, never started */
	BOX_STATUS_RUNNING,  /* supervisor alive */
	BOX_STATUS_STOPPED,  /* stopped cleanly */
	BOX_STATUS_DEAD,     /* supervisor vanished without a clean stop */
	BOX_STATUS_MAX,
};

/* What the user asked for; persisted in config.json. */
struct box_spec {
	char *name;
	char *backend;        /* "ns" */
	char *accel;          /* vm: "kvm" | "tcg" | "auto", or NULL ($PADDOCK_VM_ACCEL, else auto) */
	bool guest_aslr;      /* vm: --guest-aslr (keep the guest's ASLR under TCG too) */
	char *user;           /* default session user: "agent" | "root" */
	uint64_t memory, disk;
	uint32_t cpus_milli, pids;
	struct box_bind *binds;
	size_t n_binds;
	char **env;           /* KEY=VALUE given with -e, applied to every session */
	char *workdir;        /* default cwd of sessions inside the box, or NULL */
	int64_t created;      /* unix time */
	bool rm;              /* remove when the supervisor exits (run --rm) */
	/* workspace (issue 3): how the project appears inside */
	char *workspace;      /* "none" | "ro" | "rw" | "copy" */
	char *project;        /* absolute host path of the project, or NULL */
	/* image (issue 6): the box's root is this image's tree instead of the host view */
	char *image;          /* the image's name, or NULL */
	char *rootfs;         /* its unpacked tree (image/store.h), or NULL */
	char *profile;        /* `paddock run PROFILE`: the profile's name, or NULL */
	char *vm_disk;        /* vm boxes from an image: the image's base disk, or NULL */
	char *ca_file;        /* vm: a host PEM bundle copied to /run/paddock/ca.pem at each boot */
	char *rootfs_upper;   /* image builds only (in-process, never persisted): runtime.h */
	/* network (issue 4): the egress policy of this box */
	struct box_net {
		char *preset;     /* "none" | "balanced" | "open" */
		char **allow;     /* rules (policy.h syntax) */
		char **deny;
		char **resolve;   /* NAME=ADDR */
		char **publish;   /* [HOSTADDR:]HOSTPORT:BOXPORT */
	} net;
};

struct box_state {
	enum box_status status;
	pid_t supervisor_pid;
	int64_t started, stopped;
	int last_exit;        /* -1 when unknown */
	bool in_run;          /* a `run --rm` box: its run is its supervisor, no state file */
};

void box_spec_free(struct box_spec *s);
const char *box_status_name(enum box_status s);
bool box_name_valid(const char *name);

/* $PADDOCK_HOME, or $XDG_DATA_HOME/paddock, or ~/.local/share/paddock; created 0700. */
int store_home(char **ret, pd_err *err);
char *store_box_dir(const char *home, const char *name);

/* Creates the box directory atomically (EEXIST if the name is taken) and writes config.json. */
/* Refuses (EINVAL) a spec that would show the box paddock's own state under home (any bind
 * at, above or below it; a project copy holding it) or its configuration read-write. */
int store_check_mounts(const char *home, const struct box_spec *spec, pd_err *err);
/* store_check_mounts, then the box's directory and configuration. */
int store_create(const char *home, const struct box_spec *spec, pd_err *err);
int store_load_spec(const char *box_dir, struct box_spec *ret, pd_err *err);
int store_save_state(const char *box_dir, const struct box_state *st, pd_err *err);
int store_load_state(const char *box_dir, struct box_state *ret);
/* Derives the live status (checks supervisor.lock). */
enum box_status store_status(const char *box_dir, struct box_state *ret_state);
/* Names of every box, sorted. */
int store_list(const char *home, char ***ret_names, pd_err *err);
/* State directories of ended --rm boxes are renamed to boxes/.gone-… and removed by a
 * detached process; this removes any such directory left behind (nothing uses them). */
#define STORE_GONE_PREFIX ".gone-"
/* a box being created: made under this name, renamed into place once its configuration is
 * written (store_create); one older than STORE_NEW_STALE_S was left by a create killed
 * half-way, and store_sweep_gone removes it */
#define STORE_NEW_PREFIX ".new-"
#define STORE_NEW_STALE_S 30
void store_sweep_gone(const char *home);
/* Removes a box's state directory, and first the image store's record that the box uses an
 * image (images/uses/NAME, image/store.h), so gc may take that image's tree at once. */
int store_remove(const char *box_dir, pd_err *err);
/* The image-use record alone (for a state directory moved aside before its removal). */
void store_drop_image_use(const char *home, const char *name);

/* flock helpers: returns an fd holding the lock, or -errno (-EWOULDBLOCK when nonblocking). */
int store_lock(const char *box_dir, const char *file, bool wait);
/* The same lock file taken shared, waiting. */
int store_lock_shared(const char *box_dir, const char *file);

/* Held exclusively while `diff`/`apply` pause the box, scan and fetch its workspace; user
 * sessions (exec, shell, a run's reconnect) hold it shared until their process exists, so
 * none starts unpaused in the middle of a snapshot. */
#define STORE_SNAPSHOT_LOCK "snapshot.lock"

/* Serialise the spec to/from JSON (pure; tested). */
char *box_spec_to_json(const struct box_spec *s);
int box_spec_from_json(const char *json, struct box_spec *ret, pd_err *err);
/* Builds the runtime config for a spec. Strings point into spec; free with box_config_clear. */
void box_config_from_spec(const struct box_spec *s, const char *box_dir, struct box_config *ret);
