/* ws_host.c — host-side reads and writes of apply, one verified dirfd + one name at a time
 * (see ws_host.h). Each write carries a comment saying why it cannot land outside the
 * project or through a symlink. */
#include <fcntl.h>

#include "ws_host.h"

static enum ws_type kind_of(mode_t m)
{
	if (S_ISREG(m))
		return WS_FILE;
	if (S_ISDIR(m))
		return WS_DIR;
	if (S_ISLNK(m))
		return WS_SYMLINK;
	return WS_REFUSED;
}

int ws_host_stat(int dirfd, const char *name, struct ws_host *ret)
{
	struct stat st;
	*ret = (struct ws_host){0};
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -errno;
	*ret = (struct ws_host){
		.kind = kind_of(st.st_mode), .mode = st.st_mode & 0777, .size = (uint64_t)st.st_size,
		.dev = st.st_dev, .ino = st.st_ino, .mtime = st.st_mtim,
	};
	if (ret->kind != WS_SYMLINK)
		return 0;
	char buf[4097];
	ssize_t n = readlinkat(dirfd, name, buf, sizeof(buf) - 1);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	ret->target = xstrdup(buf);
	return 0;
}

void ws_host_free(struct ws_host *h)
{
	free(h->target);
	h->target = NULL;
}

/* Opens the regular file h describes: O_NOFOLLOW|O_NONBLOCK so neither a symlink nor a FIFO
 * swapped in since the stat can redirect or block us; the inode must be the same. */
static int open_same(int dirfd, const char *name, const struct ws_host *h, int flags)
{
	int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != h->ino || st.st_dev != h->dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static bool host_hash(int dirfd, const char *name, struct ws_host *h)
{
	if (h->hashed)
		return true;
	_cleanup_close_ int fd = open_same(dirfd, name, h, O_RDONLY);
	if (fd < 0 || ws_hash_fd(fd, UINT64_MAX, h->sha256, NULL) < 0)
		return false;
	h->hashed = true;
	return true;
}

bool ws_host_matches(int dirfd, const char *name, struct ws_host *h, const struct ws_entry *e, bool with_mode)
{
	if (!e)
		return h->kind == WS_TYPE_INVALID;
	if (h->kind != e->type)
		return false;
	if (e->type == WS_SYMLINK)
		return streq(h->target, e->target);
	if (e->type != WS_FILE)
		return e->type == WS_DIR;
	if (h->size != e->size || (with_mode && h->mode != e->mode))
		return false;
	return host_hash(dirfd, name, h) && memcmp(h->sha256, e->sha256, WS_SHA256_LEN) == 0;
}

bool ws_host_unchanged(int dirfd, const char *name, const struct ws_host *h)
{
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT && h->kind == WS_TYPE_INVALID;
	return h->kind == kind_of(st.st_mode) && st.st_ino == h->ino && st.st_dev == h->dev &&
	       (uint64_t)st.st_size == h->size && st.st_mtim.tv_sec == h->mtime.tv_sec &&
	       st.st_mtim.tv_nsec == h->mtime.tv_nsec;
}

static int open_staged(int staging_fd, const struct ws_entry *e)
{
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(e->sha256, hex);
	int fd = openat(staging_fd, hex, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size) {
		close(fd);
		return -EBADMSG;
	}
	return fd;
}

/* Permission bits only (no setuid/setgid/sticky ever reach the host); writeback starts now
 * so the caller's fsync, later, mostly waits for nothing. */
static int finish_tmp(int fd, const struct ws_entry *e)
{
	if (fchmod(fd, e->mode & 0777) < 0)
		return -errno;
	(void)sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	return 0;
}

/* Copies e's content from in into a new temp file of dirfd, hashing exactly the bytes
 * written: what lands on the host is the content the diff showed (e->sha256) or nothing
 * (mismatch_err). The caller owns *ret_fd. */
static int stage_from(int dirfd, int in, const struct ws_entry *e, int mismatch_err,
		      char ret_tmp[WS_TMP_NAME_MAX], int *ret_fd)
{
	_cleanup_close_ int fd = -1;
	/* why safe: a fresh name created O_EXCL|O_NOFOLLOW inside the verified dirfd, owned by
	 * us, mode 0600 until complete; a crash leaves only a recognisable temp file */
	int r = ws_tmpfile_at(dirfd, ret_tmp, &fd);
	if (r < 0)
		return r;
	uint8_t sha[WS_SHA256_LEN];
	r = ws_copy_hashed(in, fd, e->size, sha);
	if (r == 0 && memcmp(sha, e->sha256, WS_SHA256_LEN) != 0)
		r = mismatch_err;
	if (r == 0)
		r = finish_tmp(fd, e);
	if (r < 0) {
		ws_host_discard(dirfd, ret_tmp);
		return r;
	}
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int ws_host_stage_file(int dirfd, int staging_fd, const struct ws_entry *e,
		       char ret_tmp[WS_TMP_NAME_MAX], int *ret_fd)
{
	_cleanup_close_ int in = open_staged(staging_fd, e);
	return in < 0 ? in : stage_from(dirfd, in, e, -EBADMSG, ret_tmp, ret_fd);
}

int ws_host_stage_copy(int dirfd, const char *name, const struct ws_host *h, const struct ws_entry *e,
		       char ret_tmp[WS_TMP_NAME_MAX], int *ret_fd)
{
	/* the host file is only read, through the fd of the inode we checked */
	_cleanup_close_ int in = open_same(dirfd, name, h, O_RDONLY);
	return in < 0 ? in : stage_from(dirfd, in, e, -ESTALE, ret_tmp, ret_fd);
}

int ws_host_stage_symlink(int dirfd, const char *target, char ret_tmp[WS_TMP_NAME_MAX])
{
	for (int tries = 0; tries < 16; tries++) {
		ws_tmpname(ret_tmp);
		/* why safe: symlinkat creates a new name in the verified dirfd and fails if it
		 * exists; the target was checked by ws_symlink_check() to stay in the tree */
		if (symlinkat(target, dirfd, ret_tmp) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}

int ws_host_commit(int dirfd, const char *tmp, const char *name)
{
	/* why safe: both names are single components in the same verified dirfd; rename
	 * replaces the directory entry itself and never follows a symlink found at name */
	if (renameat(dirfd, tmp, dirfd, name) == 0)
		return 0;
	int r = -errno;
	ws_host_discard(dirfd, tmp);
	return r;
}

void ws_host_discard(int dirfd, const char *tmp)
{
	/* why safe: removes only our own temp name; unlinkat never follows symlinks */
	unlinkat(dirfd, tmp, 0);
}

int ws_host_mkdir(int dirfd, const char *name)
{
	/* why safe: one new component in the verified dirfd; mkdirat fails on an existing name
	 * (including a symlink) and never follows it */
	return mkdirat(dirfd, name, 0755) < 0 ? -errno : 0;
}

int ws_host_remove(int dirfd, const char *name, const struct ws_host *h)
{
	if (!ws_host_unchanged(dirfd, name, h))
		return -ESTALE;
	/* why safe: unlinkat of one name in the verified dirfd never follows a symlink; a
	 * directory goes only when empty (no recursive removal of anything the host holds) */
	if (unlinkat(dirfd, name, h->kind == WS_DIR ? AT_REMOVEDIR : 0) < 0)
		return -errno;
	return 0;
}
