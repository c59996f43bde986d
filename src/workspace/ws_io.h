/* ws_io.h — workspace I/O helpers: SHA-256 over fds (nettle), hashed copies, temp files
 * with paddock's recognisable prefix, and the safe resolver that opens host paths beneath a
 * root without following any symlink (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, with a
 * component-by-component fallback). Internal to src/workspace, exported for its tests. */
#pragma once

#include "util/error.h"

#define WS_SHA256_LEN 32
#define WS_IO_CHUNK (128u * 1024u)

typedef struct ws_hasher ws_hasher; /* nettle's sha256_ctx */
ws_hasher *ws_hasher_new(void);
void ws_hasher_update(ws_hasher *h, const void *buf, size_t len);
void ws_hasher_final(ws_hasher *h, uint8_t ret[WS_SHA256_LEN]); /* also frees h */
void ws_sha256(const void *buf, size_t len, uint8_t ret[WS_SHA256_LEN]);
void ws_sha256_hex(const uint8_t sha[WS_SHA256_LEN], char ret[2 * WS_SHA256_LEN + 1]);
int ws_sha256_parse(const char *hex, uint8_t ret[WS_SHA256_LEN]); /* 0 or -EINVAL */

/* pd_error()/pd_error_msg() for "<what> <path>" with the path escaped for a terminal. */
int ws_err_path(pd_err *err, int errnum, const char *what, const char *path);
int ws_err_path_msg(pd_err *err, int errnum, const char *what, const char *path);

/* Reads fd to EOF (at most max bytes, else -EFBIG), hashing it. */
int ws_hash_fd(int fd, uint64_t max, uint8_t ret_sha[WS_SHA256_LEN], uint64_t *ret_size);

/* Copies exactly size bytes (-EPIPE on early EOF; more data is ignored) from in to out
 * (out < 0: hash only), hashing exactly the bytes written. */
int ws_copy_hashed(int in, int out, uint64_t size, uint8_t ret_sha[WS_SHA256_LEN]);

/* Creates dirfd/WS_TMP_PREFIX<16 random hex> with O_EXCL|O_NOFOLLOW, mode 0600.
 * ret_name must hold WS_TMP_NAME_MAX bytes. */
#define WS_TMP_NAME_MAX 64
int ws_tmpfile_at(int dirfd, char ret_name[WS_TMP_NAME_MAX], int *ret_fd);
void ws_tmpname(char ret_name[WS_TMP_NAME_MAX]);

/* Opens the relative, already validated path beneath rootfd, never following a symlink in
 * any component, never leaving the root. flags are open(2) flags (O_CLOEXEC and O_NOFOLLOW
 * are added). path "" opens the root itself. Returns 0 or -errno; a symlink anywhere on the
 * way gives -ELOOP. */
int ws_open_beneath(int rootfd, const char *path, int flags, int *ret_fd);

/* Opens the parent directory of path beneath rootfd (O_RDONLY|O_DIRECTORY) and points
 * *ret_name at path's last component. */
int ws_open_parent(int rootfd, const char *path, int *ret_dirfd, const char **ret_name);

/* Tests: force the fallback resolver (as if openat2 returned ENOSYS). The environment
 * variable PADDOCK_TEST_NO_OPENAT2=1 does the same. */
void ws_resolve_force_fallback(bool on);
bool ws_resolve_uses_openat2(void);
