/* layer_int.h — internals of the layer applier (layer.h): entry-name normalisation, the set of
 * paths this layer has written, and the filesystem steps. */
#pragma once

#include <sys/stat.h>

#include "image/layer.h"

#define LAYER_NAME_MAX 255
#define LAYER_PATH_MAX 4095
#define LAYER_REMOVE_DEPTH_MAX 512

/* ---- layer_paths.c ---- */

/* Normalises a tar entry name (see layer.h) into a malloc'd relative path; "" is the root.
 * -EINVAL for a ".." component, -ENAMETOOLONG past PATH_MAX/NAME_MAX, -ELOOP when deeper than
 * max_depth components. */
int layer_path_normalize(const char *name, unsigned max_depth, char **ret);

/* The set of paths written by this layer (open addressing, grows as needed). */
struct layer_pathset;
struct layer_pathset *layer_pathset_new(void);
void layer_pathset_free(struct layer_pathset *s);
void layer_pathset_add(struct layer_pathset *s, const char *path);
/* Adds path and each of its parent directories. */
void layer_pathset_add_with_parents(struct layer_pathset *s, const char *path);
bool layer_pathset_has(const struct layer_pathset *s, const char *path);
/* The bytes of the paths in the set (each counted once, with its NUL). */
uint64_t layer_pathset_bytes(const struct layer_pathset *s);

/* ---- layer_fs.c ---- */

/* Opens directory path beneath rootfd (O_RDONLY|O_DIRECTORY), never through a symlink. With
 * create, missing components are made (mode 0755). -ELOOP when a component is a symlink,
 * -ENOTDIR when it is another non-directory. */
int layer_open_dir(int rootfd, const char *path, bool create, int *ret_fd);
/* How layer_open_dir_as makes the missing components: owned by uid:gid (not changed when
 * -1), and at most budget of them — each one made is taken from it, and when none is left
 * the next is not made (-E2BIG), so parents no entry names count against the entry limit. */
struct layer_mkdirs {
	uid_t uid;
	gid_t gid;
	uint64_t budget;
};
/* The same, making missing components as mk says (NULL: make none). */
int layer_open_dir_as(int rootfd, const char *path, struct layer_mkdirs *mk, int *ret_fd);
/* Removes dirfd/name whatever it is (directories recursively, never following symlinks);
 * absent is fine. */
int layer_remove_tree(int dirfd, const char *name, unsigned depth);
/* Makes room for a new dirfd/name: removes what is there, except a directory when keep_dir.
 * Returns 1 when a directory was kept, 0 otherwise. */
int layer_make_room(int dirfd, const char *name, bool keep_dir);
/* Removes from the directory dirfd (at dirpath) everything not in keep, descending into kept
 * directories (an opaque directory hides all lower content below it). */
int layer_clear_opaque(int dirfd, const char *dirpath, const struct layer_pathset *keep,
		       unsigned depth);
/* pwrite() all of buf at off. */
int layer_pwrite_all(int fd, const void *buf, size_t len, off_t off);
