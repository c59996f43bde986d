/* ws_host.h — the only code that writes to the user's project (internal to apply). Every
 * function works on a directory fd that ws_open_beneath() verified and a single name inside
 * it (never a path): no symlink is followed, nothing outside the root is reachable. New
 * content goes to a WS_TMP_PREFIX temp file in the same directory and replaces the old
 * name with one renameat(), so a host file is always either old or new. */
#pragma once

#include <sys/stat.h>

#include "ws_manifest.h"

/* What the host has at one name. kind WS_TYPE_INVALID: nothing; WS_REFUSED: a special file. */
struct ws_host {
	enum ws_type kind;
	mode_t mode;
	uint64_t size;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	char *target;
	bool hashed;
	uint8_t sha256[WS_SHA256_LEN];
};

int ws_host_stat(int dirfd, const char *name, struct ws_host *ret);
void ws_host_free(struct ws_host *h);
/* Whether the host state equals entry e (NULL: absent). Files are hashed lazily, through an
 * O_NOFOLLOW fd checked to be the inode that was stat'ed. with_mode: compare the mode too. */
bool ws_host_matches(int dirfd, const char *name, struct ws_host *h, const struct ws_entry *e, bool with_mode);
/* True if the name still is what ws_host_stat() saw (same inode, size, mtime, type). */
bool ws_host_unchanged(int dirfd, const char *name, const struct ws_host *h);

/* Writes the staged content of e into a new temp file in dirfd, re-hashing every byte and
 * refusing (-EBADMSG) if it differs from e->sha256; sets the mode and starts writeback.
 * Returns the temp file's fd in *ret_fd: the caller fsyncs it before the rename. */
int ws_host_stage_file(int dirfd, int staging_fd, const struct ws_entry *e,
		       char ret_tmp[WS_TMP_NAME_MAX], int *ret_fd);
int ws_host_stage_symlink(int dirfd, const char *target, char ret_tmp[WS_TMP_NAME_MAX]);
/* Renames tmp over name (atomic replace); on failure removes tmp. */
int ws_host_commit(int dirfd, const char *tmp, const char *name);
void ws_host_discard(int dirfd, const char *tmp);

int ws_host_mkdir(int dirfd, const char *name);
/* A mode change: copies the host file h describes (which must hold e's content) into a
 * temp file with e's mode. The existing inode is never chmod'ed in place: it may be hard
 * linked from outside the project. */
int ws_host_stage_copy(int dirfd, const char *name, const struct ws_host *h, const struct ws_entry *e,
		       char ret_tmp[WS_TMP_NAME_MAX], int *ret_fd);
/* Removes name if it still is the inode h describes; directories only when empty. */
int ws_host_remove(int dirfd, const char *name, const struct ws_host *h);
