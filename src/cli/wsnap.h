/* wsnap.h — the box's workspace as the host sees it: a tar stream taken through an exec
 * session (`tar -c` inside the box), read by the workspace library as hostile input into a
 * manifest and a content-addressed staging directory beside the box. */
#pragma once

#include "workspace/ws_manifest.h"

struct wsnap {
	char *box_dir;
	int box_fd;                 /* box_dir, O_PATH */
	char *project;              /* host project path (or the mount's host path) */
	char *box_path;             /* where the box holds its copy: /workspace or the mount */
	int mount;                  /* -1: the workspace; else the index in WSNAP_MOUNTS */
	struct ws_manifest base;    /* what the box received */
	struct ws_manifest box;     /* what it holds now */
	struct ws_notes notes;
	int staging_fd;             /* box_dir/staging */
	int64_t taken;              /* unix time of the snapshot */
};

/* The profile mounts a vm box got as copies (a guest shares no host path), beside the box:
 * records "BOXPATH\0HOSTPATH\0"; mount N's copy-in manifest is mount-N.manifest. Only
 * read-write directories are recorded: those are offered back through diff/apply --mount. */
#define WSNAP_MOUNTS "mounts.list"
#define WSNAP_MOUNTS_MAX (1u << 20)
char *wsnap_mount_manifest(int index);
/* Appends box/host to box_dir's WSNAP_MOUNTS; returns the new record's index or <0. */
int wsnap_mount_record(const char *box_dir, const char *box, const char *host, pd_err *err);
/* The record for box path `mount` in the list beside the box (box_fd): its index and host
 * path; -ENOENT (with a message naming the sandbox) when there is none. */
int wsnap_mount_find(int box_fd, const char *name, const char *mount, int *ret_index, char **ret_host, pd_err *err);

/* Takes a fresh snapshot of a running box (NAME) — of its workspace, or with mount (a box
 * path) of that copied mount — saving it as box.manifest (mount-N.box.manifest): what diff
 * shows is what apply applies. */
int wsnap_take(const char *name, const char *mount, struct wsnap *ret, pd_err *err);
/* Forgets the saved snapshot of s (one `apply` took for itself and applied): a later apply
 * takes its own instead of reapplying this one as if a diff had shown it. 0 or -errno. */
int wsnap_forget(const struct wsnap *s);
/* Replaces the baseline of s (what the box's diff and apply start from) with m: an apply's
 * ws_apply_opts.ret_base. */
int wsnap_save_base(const struct wsnap *s, const struct ws_manifest *m, pd_err *err);
/* Loads the snapshot the last `diff` saved; -ENOENT when there is none. */
int wsnap_load(const char *name, const char *mount, struct wsnap *ret, pd_err *err);
void wsnap_free(struct wsnap *s);
/* The notes of a snapshot (or of a copy), on stderr, escaped: at most 20 and a count; with
 * kept_only, those about entries that are not left out (an apply's report lists the rest). */
void wsnap_print_notes(const struct ws_notes *n, bool kept_only);
/* The paths a `diff` of the snapshot was limited to (NULL/empty: none), kept beside it so
 * that `apply` without paths applies what that diff showed; and read back (NULL: none). */
int wsnap_save_paths(const struct wsnap *s, char **paths, pd_err *err);
/* The paths a user named for diff/apply, as the workspace's relative paths: "./x" and "x/"
 * are "x"; an absolute path is taken beneath the project's host path or the box's copy (for
 * the workspace: /workspace). Each must name something in the box's copy or its copy-in.
 * *ret: NULL when no path was given or one names the whole tree. -EINVAL with err said
 * otherwise (a usage error). */
int wsnap_paths(const struct wsnap *s, char *const *paths, char ***ret, pd_err *err);
char **wsnap_load_paths(const struct wsnap *s);
/* Saves a running box's workspace as a tar stream beside it (the box's writable layer does
 * not outlive a stop); the next boot copies it back in instead of the project. No-op for
 * boxes without a copied workspace. */
int wsnap_save_tar(const char *box_dir, pd_err *err);
