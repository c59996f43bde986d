/* wsnap.h — the box's workspace as the host sees it: a tar stream taken through an exec
 * session (`tar -c` inside the box), read by the workspace library as hostile input into a
 * manifest and a content-addressed staging directory beside the box. */
#pragma once

#include "workspace/ws_manifest.h"

struct wsnap {
	char *box_dir;
	int box_fd;                 /* box_dir, O_PATH */
	char *project;              /* host project path */
	struct ws_manifest base;    /* what the box received */
	struct ws_manifest box;     /* what it holds now */
	struct ws_notes notes;
	int staging_fd;             /* box_dir/staging */
	int64_t taken;              /* unix time of the snapshot */
};

/* Takes a fresh snapshot of a running box (NAME), saving it as box.manifest (what diff shows
 * is what apply applies). */
int wsnap_take(const char *name, struct wsnap *ret, pd_err *err);
/* Loads the snapshot the last `diff` saved; -ENOENT when there is none. */
int wsnap_load(const char *name, struct wsnap *ret, pd_err *err);
void wsnap_free(struct wsnap *s);
/* Saves a running box's workspace as a tar stream beside it (the box's writable layer does
 * not outlive a stop); the next boot copies it back in instead of the project. No-op for
 * boxes without a copied workspace. */
int wsnap_save_tar(const char *box_dir, pd_err *err);
