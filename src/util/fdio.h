/* fdio.h — fd and file helpers: full reads/writes with EINTR handling, whole-file reads,
 * atomic writes, mkdir -p. All fds opened here are O_CLOEXEC. All return 0 or -errno. */
#pragma once

#include "error.h"

int fd_write_all(int fd, const void *buf, size_t len);
/* One read(2), retried on EINTR: the byte count (0 at EOF) or -errno. */
ssize_t fd_read(int fd, void *buf, size_t len);
/* Reads exactly len bytes; -EPIPE on early EOF. */
int fd_read_exact(int fd, void *buf, size_t len);
int fd_set_nonblock(int fd, bool on);
int fd_set_cloexec(int fd, bool on);
/* Reads all of fd (at most max bytes, NUL-terminated); -EFBIG if there is more. */
int read_fd_all(int fd, size_t max, char **ret_buf, size_t *ret_len);
/* Reads a whole (small) file at dirfd/path into a NUL-terminated buffer of at most max bytes;
 * -EFBIG if larger. */
int read_file_at(int dirfd, const char *path, size_t max, char **ret_buf, size_t *ret_len);
/* Writes buf to dirfd/path atomically: temp file + fsync + rename. */
int write_file_atomic_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode);
/* The same with the fsync optional (state that need not survive a crash). */
int write_file_replace_at(int dirfd, const char *path, const void *buf, size_t len, mode_t mode, bool durable);
/* Closes every fd from 3 up except keep (in a forked child that holds fds it must not keep
 * alive: a box's control socket or TAP, a CLI's flock). */
void fd_close_all_but(int keep);
/* Closes fd without waiting for the last close to finish: a forked grandchild holds the last
 * reference. For fds whose release is slow (a TAP device waits for an RCU grace period,
 * tens of ms) on a path someone is timing. Call only while single-threaded. */
void fd_close_async(int fd);
/* fd_close_async, then (in the same detached process) rm_rf(dir) when dir is set: a
 * directory already renamed out of sight whose removal need not be waited for. exiting: the
 * caller exits soon and reaps nothing, so one fork suffices (init reaps the closer). */
void fd_close_async_rm(int fd, const char *dir, bool exiting);
/* The general form: in the detached process, first(ud) runs (with only `keep` open beside
 * fd, under its own number), then fd is closed and dir removed. Where no process can be
 * made, all of it runs here. */
struct async_job {
	int fd;                  /* closed last, or -1 */
	const char *dir;         /* removed last, or NULL */
	int keep;                /* an fd first() needs (>= 3), or -1 */
	void (*first)(void *ud); /* or NULL */
	void *ud;
	bool exiting;
};
void fd_close_async_job(const struct async_job *j);
/* Writes len bytes at data, which lie in this program's own file-backed image (an embedded
 * blob in .rodata), to fd: copied from the executable through the page cache (sendfile),
 * so the blob is not faulted into this process's memory (~1 MB of paddock's peak RSS);
 * falls back to writing from memory. */
int fd_write_image_data(int fd, const void *data, size_t len);
/* Writes a string to an existing file (e.g. /proc or cgroupfs knobs). */
int write_file_str(const char *path, const char *s);
int mkdir_p(const char *path, mode_t mode);
/* Removes a directory tree without following symlinks and without crossing mount points. */
int rm_rf(const char *path);
/* The same for the entry name of directory dirfd: nothing above it is resolved by name again,
 * so a symlink swapped in for a parent directory cannot redirect the removal. */
int rm_rf_at(int dirfd, const char *name);
/* The names in directory fd (not "." and ".."), in directory order, as a strv (never NULL on
 * success); fd itself is left as it was (read through a duplicate from the start). */
int dir_list_names(int fd, char ***ret);
