/* store.c — the image store's directory, its lock and its content-addressed blobs (store.h). */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "image/layer.h"
#include "image/store.h"
#include "util/fdio.h"
#include "workspace/ws_io.h"

static const char *const store_dirs[] = {"blobs", "blobs/sha256", "rootfs", "records", "uses", "tmp", "vmdisk"};

void img_store_close(struct img_store *s)
{
	if (!s)
		return;
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	free(s->home);
	free(s->dir);
	free(s);
}

static int take_lock(struct img_store *s, enum img_lock lock, pd_err *err)
{
	if (lock == IMG_LOCK_NONE)
		return 0;
	s->lockfd = openat(s->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (s->lockfd < 0)
		return pd_error(err, errno, "cannot open %s/lock", s->dir);
	int op = lock == IMG_LOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH;
	/* gc waits for builds and imports to finish: said, not a silent hang (a progress line,
	 * like the layer lines; the one place here that writes) */
	if (lock == IMG_LOCK_EXCLUSIVE && flock(s->lockfd, op | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		fprintf(stderr, "paddock: waiting for the image store (an image is being built, imported or used to start a box)\n");
	while (flock(s->lockfd, op) < 0)
		if (errno != EINTR)
			return pd_error(err, errno, "cannot lock the image store %s", s->dir);
	return 0;
}

int img_store_open(const char *home, enum img_lock lock, struct img_store **ret, pd_err *err)
{
	struct img_store *s = xcalloc(1, sizeof(*s));
	_cleanup_(img_store_closep) struct img_store *guard = s;
	s->dirfd = s->lockfd = s->link_fd = -1;
	s->home = xstrdup(home);
	s->dir = xasprintf("%s/images", home);
	int r = mkdir_p(s->dir, 0700);
	if (r < 0)
		return pd_error(err, r, "cannot create %s", s->dir);
	s->dirfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s->dirfd < 0)
		return pd_error(err, errno, "cannot open %s", s->dir);
	/* The trees keep an image's set-user-ID files when host root unpacks them (as docker's
	 * /var/lib/docker does), so the store is its owner's only: no other host user may reach
	 * a tree to exec one. Its owner must be us, whatever its mode: another uid could chmod
	 * it open again, or plant a symlink in it that root's unpack, import or gc would follow
	 * into the host. */
	struct stat st;
	if (fstat(s->dirfd, &st) < 0)
		return pd_error(err, errno, "cannot inspect %s", s->dir);
	if (st.st_uid != geteuid())
		return pd_error_msg(err, EPERM, "%s belongs to uid %u, not to uid %u who runs paddock; refusing it "
				    "(remove it, or set PADDOCK_HOME to a directory of your own)",
				    s->dir, (unsigned)st.st_uid, (unsigned)geteuid());
	if ((st.st_mode & 077) && fchmod(s->dirfd, 0700) < 0)
		return pd_error(err, errno, "cannot make %s private", s->dir);
	for (size_t i = 0; i < ARRAY_SIZE(store_dirs); i++) {
		if (mkdirat(s->dirfd, store_dirs[i], 0700) < 0 && errno != EEXIST)
			return pd_error(err, errno, "cannot create %s/%s", s->dir, store_dirs[i]);
		/* mkdirat's EEXIST may be a symlink: the store refuses to open rather than hand
		 * paths through it to unpack, mkfs or a box's mount later */
		_cleanup_close_ int fd = -1;
		if ((r = img_store_open_dir(s, store_dirs[i], &fd, err)) < 0)
			return r;
	}
	r = take_lock(s, lock, err);
	if (r < 0)
		return r;
	*ret = TAKE_PTR(guard);
	return 0;
}

void img_store_link_layer(struct img_store *s, const char *digest, int fd)
{
	s->link_fd = fd;
	snprintf(s->link_layer, sizeof(s->link_layer), "%s", fd >= 0 && digest ? digest : "");
}

static const char *file_type_name(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ? "a device"
	       : S_ISDIR(m) ? "a directory" : S_ISLNK(m) ? "a symlink" : "not a regular file";
}

int img_open_regular(int dirfd, const char *path, const char *what, int *ret_fd, pd_err *err)
{
	_cleanup_close_ int fd = -1;
	/* why safe: no symlink in any component (ws_open_beneath), and O_NONBLOCK so that a
	 * FIFO opens at once instead of waiting for a writer; fstat then refuses anything but a
	 * regular file before a byte is read */
	int r = ws_open_beneath(dirfd, path, O_RDONLY | O_NONBLOCK | O_NOCTTY, &fd);
	if (r == -ELOOP)
		return pd_error_msg(err, ELOOP, "%s is a symlink or lies behind one; refusing to follow it", what);
	if (r < 0)
		return pd_error(err, r, "cannot open %s", what);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return pd_error(err, errno, "cannot inspect %s", what);
	if (!S_ISREG(st.st_mode))
		return pd_error_msg(err, EINVAL, "%s is %s, not a regular file; refusing it", what,
				    file_type_name(st.st_mode));
	if ((r = fd_set_nonblock(fd, false)) < 0)
		return pd_error(err, r, "cannot read %s", what);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

int img_store_open_dir(struct img_store *s, const char *relpath, int *ret_fd, pd_err *err)
{
	int r = ws_open_beneath(s->dirfd, relpath, O_RDONLY | O_DIRECTORY, ret_fd);
	if (r == -ELOOP)
		return pd_error_msg(err, ELOOP, "%s/%s: a symlink on the way; refusing to follow it out of the store (remove it)",
				    s->dir, relpath);
	return r < 0 ? pd_error(err, r, "cannot open %s/%s", s->dir, relpath) : 0;
}

/* ---- hashing ---- */

static void hex_digest(const unsigned char *md, char ret[OCI_DIGEST_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	memcpy(ret, "sha256:", 7);
	for (int i = 0; i < 32; i++) {
		ret[7 + 2 * i] = hex[md[i] >> 4];
		ret[8 + 2 * i] = hex[md[i] & 15];
	}
	ret[OCI_DIGEST_LEN] = '\0';
}

void img_sha256_digest(const void *buf, size_t len, char ret[OCI_DIGEST_LEN + 1])
{
	uint8_t md[WS_SHA256_LEN];
	ws_sha256(buf, len, md);
	hex_digest(md, ret);
}

int img_layer_diff_id(int fd, uint64_t max_bytes, char ret[OCI_DIGEST_LEN + 1], pd_err *err)
{
	struct archive *a = archive_read_new();
	struct sha256_ctx md;
	sha256_init(&md);
	if (!a)
		abort(); /* out of memory */
	/* the same decompressors the applier accepts; "raw": the decompressed bytes as they are */
	layer_read_support_filters(a);
	archive_read_support_format_raw(a);
	struct archive_entry *e;
	int r = archive_read_open_fd(a, fd, 64 * 1024) != ARCHIVE_OK || archive_read_next_header(a, &e) != ARCHIVE_OK
			? pd_error_msg(err, EINVAL, "cannot read the layer: %s", archive_error_string(a) ?: "unknown format")
			: 0;
	uint64_t total = 0;
	_cleanup_free_ char *buf = xmalloc(256 * 1024);
	while (r == 0) {
		la_ssize_t n = archive_read_data(a, buf, 256 * 1024);
		if (n == 0)
			break;
		if (n < 0)
			r = pd_error_msg(err, EINVAL, "cannot read the layer: %s", archive_error_string(a) ?: "corrupt");
		else if ((total += (uint64_t)n) > max_bytes)
			r = pd_error_msg(err, EFBIG, "the layer decompresses to more than %llu bytes",
					 (unsigned long long)max_bytes);
		else
			sha256_update(&md, (size_t)n, (const uint8_t *)buf);
	}
	uint8_t out[SHA256_DIGEST_SIZE];
	if (r == 0) {
		sha256_digest(&md, sizeof(out), out);
		hex_digest(out, ret);
	}
	archive_read_free(a);
	return r;
}

/* ---- blobs ---- */

char *img_blob_relpath(const char *digest)
{
	return xasprintf("blobs/sha256/%s", digest + 7);
}

bool img_blob_exists(struct img_store *s, const char *digest)
{
	if (!oci_digest_valid(digest))
		return false;
	_cleanup_free_ char *p = img_blob_relpath(digest);
	_cleanup_close_ int fd = -1;
	struct stat st;
	/* O_PATH: looked at, never opened for reading (a FIFO does not block) */
	return ws_open_beneath(s->dirfd, p, O_PATH, &fd) == 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

int img_blob_open(struct img_store *s, const char *digest, pd_err *err)
{
	if (!oci_digest_valid(digest))
		return pd_error_msg(err, EINVAL, "not a sha256 digest: %.80s", digest);
	_cleanup_free_ char *p = img_blob_relpath(digest), *what = xasprintf("blob %s", digest);
	int fd = -1;
	int r = img_open_regular(s->dirfd, p, what, &fd, err);
	return r < 0 ? r : fd;
}

struct img_blob_writer {
	struct img_store *s;
	int tmpfd;          /* the store's tmp/, opened without following symlinks */
	char tmp[WS_TMP_NAME_MAX];  /* the blob's name in it, "" once renamed */
	int fd;
	struct sha256_ctx md;
	uint64_t size, max;
};

void img_blob_writer_abort(struct img_blob_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp[0])
		unlinkat(w->tmpfd, w->tmp, 0);
	if (w->tmpfd >= 0)
		close(w->tmpfd);
	free(w);
}

int img_blob_writer_new(struct img_store *s, uint64_t max, struct img_blob_writer **ret, pd_err *err)
{
	struct img_blob_writer *w = xcalloc(1, sizeof(*w));
	w->s = s;
	w->max = max;
	w->fd = w->tmpfd = -1;
	int r = img_store_open_dir(s, "tmp", &w->tmpfd, err);
	if (r == 0 && (r = ws_tmpfile_at(w->tmpfd, w->tmp, &w->fd)) < 0) {
		w->tmp[0] = '\0';
		r = pd_error(err, r, "cannot create a temporary blob in %s/tmp", s->dir);
	}
	if (r < 0) {
		img_blob_writer_abort(w);
		return r;
	}
	sha256_init(&w->md);
	*ret = w;
	return 0;
}

int img_blob_writer_write(struct img_blob_writer *w, const void *buf, size_t len, pd_err *err)
{
	if (len > w->max - w->size)
		return pd_error_msg(err, EFBIG, "blob larger than %llu bytes", (unsigned long long)w->max);
	w->size += len;
	sha256_update(&w->md, len, buf);
	int r = fd_write_all(w->fd, buf, len);
	return r < 0 ? pd_error(err, r, "cannot write %s/tmp/%s", w->s->dir, w->tmp) : 0;
}

int img_blob_writer_commit(struct img_blob_writer *w, const char *expect_digest, uint64_t expect_size,
			   char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err)
{
	uint8_t md[SHA256_DIGEST_SIZE];
	char digest[OCI_DIGEST_LEN + 1];
	int r = 0;
	sha256_digest(&w->md, sizeof(md), md);
	hex_digest(md, digest);
	/* the one check that makes a registry or an archive unable to slip other bytes in */
	if (expect_digest && !streq(digest, expect_digest))
		r = pd_error_msg(err, EBADMSG, "digest mismatch: expected %s, got %s (%llu bytes); refusing the content",
				 expect_digest, digest, (unsigned long long)w->size);
	else if (expect_digest && expect_size != UINT64_MAX && w->size != expect_size)
		r = pd_error_msg(err, EBADMSG, "size mismatch for %s: expected %llu bytes, got %llu",
				 expect_digest, (unsigned long long)expect_size, (unsigned long long)w->size);
	if (r == 0 && fsync(w->fd) < 0)
		r = pd_error(err, errno, "cannot sync %s/tmp/%s", w->s->dir, w->tmp);
	if (r == 0 && fchmod(w->fd, 0644) < 0)
		r = pd_error(err, errno, "cannot chmod %s/tmp/%s", w->s->dir, w->tmp);
	_cleanup_close_ int blobsfd = -1;
	if (r == 0)
		r = img_store_open_dir(w->s, "blobs/sha256", &blobsfd, err);
	/* both ends are fds opened without following symlinks, and plain names in them */
	if (r == 0 && renameat(w->tmpfd, w->tmp, blobsfd, digest + 7) < 0)
		r = pd_error(err, errno, "cannot store blob %s", digest);
	if (r == 0) {
		w->tmp[0] = '\0'; /* renamed: nothing to unlink */
		if (ret_digest)
			memcpy(ret_digest, digest, sizeof(digest));
		if (ret_size)
			*ret_size = w->size;
	}
	img_blob_writer_abort(w);
	return r;
}

int img_blob_put_stream(struct img_store *s, img_read_fn rd, void *ctx, const char *expect_digest,
			uint64_t expect_size, char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err)
{
	struct img_blob_writer *w;
	int r = img_blob_writer_new(s, OCI_BLOB_SIZE_MAX, &w, err);
	if (r < 0)
		return r;
	_cleanup_free_ char *buf = xmalloc(1 << 17);
	for (;;) {
		ssize_t n = rd(ctx, buf, 1 << 17, err);
		if (n < 0) {
			img_blob_writer_abort(w);
			return (int)n;
		}
		if (n == 0)
			break;
		if ((r = img_blob_writer_write(w, buf, (size_t)n, err)) < 0) {
			img_blob_writer_abort(w);
			return r;
		}
	}
	return img_blob_writer_commit(w, expect_digest, expect_size, ret_digest, ret_size, err);
}

ssize_t img_read_fd(void *ctx, void *buf, size_t len, pd_err *err)
{
	for (;;) {
		ssize_t n = read(*(int *)ctx, buf, len);
		if (n >= 0)
			return n;
		if (errno != EINTR)
			return pd_error(err, errno, "cannot read blob content");
	}
}

int img_blob_put_fd(struct img_store *s, int fd, const char *expect_digest, uint64_t expect_size,
		    char ret_digest[OCI_DIGEST_LEN + 1], uint64_t *ret_size, pd_err *err)
{
	return img_blob_put_stream(s, img_read_fd, &fd, expect_digest, expect_size, ret_digest, ret_size, err);
}

int img_blob_put_buf(struct img_store *s, const void *buf, size_t len, const char *expect_digest,
		     char ret_digest[OCI_DIGEST_LEN + 1], pd_err *err)
{
	struct img_blob_writer *w;
	int r = img_blob_writer_new(s, OCI_BLOB_SIZE_MAX, &w, err);
	if (r == 0 && (r = img_blob_writer_write(w, buf, len, err)) < 0)
		img_blob_writer_abort(w);
	return r < 0 ? r : img_blob_writer_commit(w, expect_digest, len, ret_digest, NULL, err);
}

int img_blob_read(struct img_store *s, const char *digest, size_t max, char **ret_buf,
		  size_t *ret_len, pd_err *err)
{
	_cleanup_close_ int fd = img_blob_open(s, digest, err);
	if (fd < 0)
		return fd;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = read_fd_all(fd, max, &buf, &len);
	if (r < 0)
		return pd_error(err, r, "cannot read blob %s", digest);
	char got[OCI_DIGEST_LEN + 1];
	img_sha256_digest(buf, len, got);
	if (!streq(got, digest))
		return pd_error_msg(err, EBADMSG, "stored blob %s is corrupt (hashes to %s); run 'paddock image gc' and fetch it again",
				    digest, got);
	*ret_buf = TAKE_PTR(buf);
	if (ret_len)
		*ret_len = len;
	return 0;
}
