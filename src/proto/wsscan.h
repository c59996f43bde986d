/* wsscan.h — the box's own manifest of its workspace copy: one record per entry, sent by
 * paddock-init's ws-scan built-in on a session's stdout (so it travels over the control
 * protocol like any exec output, on every backend) and read by the host as hostile input.
 * Only metadata crosses: the host decides from it which entries changed since copy-in and
 * fetches just those as a tar stream, whose bytes it hashes itself.
 *
 * Record (all integers little-endian), WSSCAN_HDR bytes then path then target:
 *     u8 kind | u8 0 | u16 path_len | u16 target_len | u16 0 | u32 mode
 *     u64 size | u64 ino | i64 mtime_s | u32 mtime_ns | i64 ctime_s | u32 ctime_ns
 * kind: 'f' file, 'd' directory, 'l' symlink (target_len >= 1), 'o' anything else, 'n' a
 * directory not read whole: one too deep or unreadable (no 'd' record of its own), or one
 * with a name too long beneath it (after its 'd' record: the only path sent twice), 'E' the end (path
 * empty, size = number of records before it). Paths are relative to the scanned root, never
 * empty, at most WSSCAN_MAX_PATH bytes, without NUL; mode is st_mode & 07777. Pure. */
#pragma once

#include "util/util.h"

#define WSSCAN_HDR 52u
#define WSSCAN_MAX_PATH 4096u
#define WSSCAN_BUILTIN "paddock-init:ws-scan" /* argv[0] of the built-in (never a program) */
#define WSALIAS_BUILTIN "paddock-init:ws-alias" /* the project's host path -> /workspace */

enum wsscan_kind {
	WSSCAN_FILE = 'f',
	WSSCAN_DIR = 'd',
	WSSCAN_LINK = 'l',
	WSSCAN_OTHER = 'o',
	WSSCAN_NOTE = 'n',
	WSSCAN_END = 'E',
};

struct wsscan_rec {
	uint8_t kind;
	uint32_t mode;
	uint64_t size, ino;
	int64_t mtime_s, ctime_s;
	uint32_t mtime_ns, ctime_ns;
	const char *path;   /* not NUL-terminated; points into the decoded buffer */
	size_t path_len;
	const char *target; /* WSSCAN_LINK only */
	size_t target_len;
};

/* Encodes r into out (cap bytes); returns the bytes used, or 0 when it does not fit or r is
 * not a valid record. */
size_t wsscan_encode(uint8_t *out, size_t cap, const struct wsscan_rec *r);
/* Decodes one record from buf: 1 with *ret and *ret_used, 0 when more bytes are needed,
 * -EBADMSG for anything malformed (unknown kind, non-zero padding, bad lengths, a NUL in a
 * name, mode past 07777, nanoseconds past 999999999). */
int wsscan_decode(const uint8_t *buf, size_t len, struct wsscan_rec *ret, size_t *ret_used);
