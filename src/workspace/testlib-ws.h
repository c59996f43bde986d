/* testlib-ws.h — helpers for the workspace unit tests and fuzz target: temp trees, and tar
 * streams built with libarchive (hostile ones included: the writer does not sanitise). */
#pragma once

#include <sys/stat.h>

#include "ws_apply.h"
#include "ws_copyin.h"
#include "ws_ignore.h"

char *tl_tmpdir(void);                                /* a fresh mkdtemp directory */
void tl_rmrf(const char *path);
void tl_write(const char *root, const char *rel, const char *content, mode_t mode);
char *tl_read(const char *root, const char *rel);     /* NULL if missing */
bool tl_exists(const char *root, const char *rel);    /* lstat */
int tl_opendir(const char *path);                     /* O_RDONLY|O_DIRECTORY */
void tl_manifest_dir(const char *root, struct ws_manifest *ret);
size_t tl_count_entries(const char *dir);             /* entries directly in dir */

struct tl_tar;
struct tl_tar *tl_tar_new(void);
void tl_tar_file(struct tl_tar *t, const char *path, const char *content, mode_t mode);
void tl_tar_dir(struct tl_tar *t, const char *path, mode_t mode);
void tl_tar_symlink(struct tl_tar *t, const char *path, const char *target);
void tl_tar_hardlink(struct tl_tar *t, const char *path, const char *target);
void tl_tar_special(struct tl_tar *t, const char *path, mode_t type); /* AE_IFCHR, AE_IFIFO, ... */
/* Cuts the stream with a raw header declaring declared_size bytes and no data: nothing may
 * be added after it. */
void tl_tar_header_only(struct tl_tar *t, const char *path, int64_t declared_size);
/* Ends the stream (no end marker after tl_tar_header_only) and returns an fd at offset 0. */
int tl_tar_finish(struct tl_tar *t);

/* ws_manifest_from_tar with a staging dir and a base; returns its result. */
int tl_ingest(int tarfd, int staging_fd, const struct ws_manifest *base, const struct ws_limits *lim,
	      struct ws_manifest *ret, struct ws_notes *notes);
