/* ws_io.c — hashing, hashed copies and temp files for the workspace module. */
#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <nettle/sha2.h>

#include "ws_io.h"
#include "util/fdio.h"
#include "ws_path.h"

struct ws_hasher {
	struct sha256_ctx ctx;
};

ws_hasher *ws_hasher_new(void)
{
	ws_hasher *h = xmalloc(sizeof(*h));
	sha256_init(&h->ctx);
	return h;
}

void ws_hasher_update(ws_hasher *h, const void *buf, size_t len)
{
	sha256_update(&h->ctx, len, buf);
}

void ws_hasher_final(ws_hasher *h, uint8_t ret[WS_SHA256_LEN])
{
	sha256_digest(&h->ctx, WS_SHA256_LEN, ret);
	free(h);
}

void ws_sha256(const void *buf, size_t len, uint8_t ret[WS_SHA256_LEN])
{
	ws_hasher *h = ws_hasher_new();
	ws_hasher_update(h, buf, len);
	ws_hasher_final(h, ret);
}

void ws_sha256_hex(const uint8_t sha[WS_SHA256_LEN], char ret[2 * WS_SHA256_LEN + 1])
{
	hex_encode(sha, WS_SHA256_LEN, ret);
}

int ws_sha256_parse(const char *hex, uint8_t ret[WS_SHA256_LEN])
{
	return hex_decode(hex, ret, WS_SHA256_LEN);
}

int ws_err_path(pd_err *err, int errnum, const char *what, const char *path)
{
	_cleanup_free_ char *esc = ws_escape_name(path);
	return pd_error(err, errnum, "%s %s", what, esc);
}

int ws_err_path_msg(pd_err *err, int errnum, const char *what, const char *path)
{
	_cleanup_free_ char *esc = ws_escape_name(path);
	return pd_error_msg(err, errnum, "%s %s", what, esc);
}

static ssize_t read_some(int fd, void *buf, size_t len)
{
	for (;;) {
		ssize_t n = read(fd, buf, len);
		if (n >= 0 || errno != EINTR)
			return n < 0 ? -errno : n;
	}
}

int ws_hash_fd(int fd, uint64_t max, uint8_t ret_sha[WS_SHA256_LEN], uint64_t *ret_size)
{
	_cleanup_free_ char *buf = xmalloc(WS_IO_CHUNK);
	ws_hasher *h = ws_hasher_new();
	uint64_t total = 0;
	for (;;) {
		ssize_t n = read_some(fd, buf, WS_IO_CHUNK);
		if (n < 0 || total + (uint64_t)n > max) {
			uint8_t junk[WS_SHA256_LEN];
			ws_hasher_final(h, junk);
			return n < 0 ? (int)n : -EFBIG;
		}
		if (n == 0)
			break;
		ws_hasher_update(h, buf, (size_t)n);
		total += (uint64_t)n;
	}
	ws_hasher_final(h, ret_sha);
	if (ret_size)
		*ret_size = total;
	return 0;
}

int ws_copy_hashed(int in, int out, uint64_t size, uint8_t ret_sha[WS_SHA256_LEN])
{
	_cleanup_free_ char *buf = xmalloc(WS_IO_CHUNK);
	ws_hasher *h = ws_hasher_new();
	int r = 0;
	for (uint64_t left = size; left > 0 && r == 0;) {
		ssize_t n = read_some(in, buf, left < WS_IO_CHUNK ? (size_t)left : WS_IO_CHUNK);
		if (n <= 0) {
			r = n < 0 ? (int)n : -EPIPE;
			break;
		}
		ws_hasher_update(h, buf, (size_t)n);
		if (out >= 0)
			r = fd_write_all(out, buf, (size_t)n);
		left -= (uint64_t)n;
	}
	uint8_t sha[WS_SHA256_LEN];
	ws_hasher_final(h, sha);
	if (r == 0)
		memcpy(ret_sha, sha, WS_SHA256_LEN);
	return r;
}

void ws_tmpname(char ret_name[WS_TMP_NAME_MAX])
{
	uint8_t rnd[8];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		abort(); /* the kernel's CSPRNG cannot fail once seeded */
	int n = snprintf(ret_name, WS_TMP_NAME_MAX, "%s", WS_TMP_PREFIX);
	for (size_t i = 0; i < sizeof(rnd); i++)
		n += snprintf(ret_name + n, WS_TMP_NAME_MAX - (size_t)n, "%02x", rnd[i]);
}

int ws_tmpfile_at(int dirfd, char ret_name[WS_TMP_NAME_MAX], int *ret_fd)
{
	for (int tries = 0; tries < 16; tries++) {
		ws_tmpname(ret_name);
		/* O_EXCL|O_NOFOLLOW: we only ever write to a file we just created ourselves */
		int fd = openat(dirfd, ret_name,
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd >= 0) {
			*ret_fd = fd;
			return 0;
		}
		if (errno != EEXIST)
			return -errno;
	}
	return -EEXIST;
}
