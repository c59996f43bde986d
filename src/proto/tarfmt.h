/* tarfmt.h — the tar format of paddock-init's tar built-in (src/guest/wstar.c): POSIX ustar
 * headers, with a pax extended header ('x') before an entry whose name, link target, size,
 * ids or nanosecond mtime do not fit ustar. Encoding the entries the built-in sends, and a
 * reader for the streams it is fed. Pure: bytes in, entries out.
 *
 * Why not libarchive, which the host uses for every tar it reads: paddock-init is a static
 * binary, and libarchive's static archive pulls in ACL, bzip2, lzma and libxml2 code that
 * Debian ships no static libacl for. What the built-in reads was written by the host with
 * libarchive (copy-in, `paddock cp` into a box, a saved workspace) or by GNU tar (a
 * workspace saved by an older paddock); what it writes the host parses with libarchive as
 * hostile input. So this reader only has to be strict, not complete: ustar and GNU magic,
 * pax 'x' records (path, linkpath, size, mtime, uid, gid; others ignored) and 'g' headers
 * (skipped); anything else is refused. Caps: TARFMT_MAX_PATH for names, TARFMT_MAX_PAX for
 * an extended header. */
#pragma once

#include <sys/types.h>

#include "util/util.h"

#define WSTAR_BUILTIN "paddock-init:tar" /* argv[0] of the built-in (never a program) */

#define TARFMT_BLOCK 512u
#define TARFMT_MAX_PATH 4096u
#define TARFMT_MAX_PAX (64u * 1024)
/* the most header bytes tarfmt_encode writes for one entry */
#define TARFMT_HDR_MAX (3 * TARFMT_BLOCK + 2 * TARFMT_MAX_PATH + 1024)

enum tarfmt_type {
	TARFMT_INVALID,
	TARFMT_FILE,
	TARFMT_DIR,
	TARFMT_SYMLINK,
	TARFMT_HARDLINK, /* link: an earlier entry's path */
	TARFMT_FIFO,
	TARFMT_CHR,
	TARFMT_BLK,
	TARFMT_MAX,
};

struct tarfmt_entry {
	enum tarfmt_type type;
	char path[TARFMT_MAX_PATH + 1]; /* as in the stream: never empty, no NUL */
	char link[TARFMT_MAX_PATH + 1]; /* symlink target or hard link's path; "" otherwise */
	uint32_t mode;                  /* permission bits, & 07777 */
	uint64_t size;                  /* bytes of content following (files only) */
	int64_t mtime_s;
	uint32_t mtime_ns;
	uint64_t uid, gid;
	uint32_t devmajor, devminor;
};

/* Writes e's header blocks (a pax header first when needed) into out, which holds at least
 * TARFMT_HDR_MAX bytes. Returns the bytes written (a multiple of TARFMT_BLOCK), or 0 when e
 * cannot be encoded (an empty or over-long name, a NUL, a bad type or mode). The content,
 * if any, follows, padded with zeros to a block. */
size_t tarfmt_encode(uint8_t *out, const struct tarfmt_entry *e);

/* The padding after len bytes of content. */
static inline size_t tarfmt_pad(uint64_t len) { return (size_t)((TARFMT_BLOCK - len % TARFMT_BLOCK) % TARFMT_BLOCK); }

/* The reader. read fills buf with exactly len bytes and returns len, fewer at the end of
 * the input, or a negative errno. */
typedef ssize_t (*tarfmt_read_fn)(void *ud, void *buf, size_t len);

struct tarfmt_reader {
	tarfmt_read_fn read;
	void *ud;
	uint64_t left;  /* content of the current entry not yet read */
	size_t pad;     /* and its padding */
	bool done;
	uint8_t blk[TARFMT_BLOCK];
};

static inline void tarfmt_reader_init(struct tarfmt_reader *r, tarfmt_read_fn read, void *ud)
{
	*r = (struct tarfmt_reader){.read = read, .ud = ud};
}

/* The next entry into *ret, skipping what is left of the current one's content: 1, or 0 at
 * the end of the archive (a zero block), -EBADMSG for a malformed or unsupported stream or
 * one that ends early, or the read function's error. */
int tarfmt_next(struct tarfmt_reader *r, struct tarfmt_entry *ret);

/* Up to cap bytes of the current entry's content: the count, 0 when it is all read, or a
 * negative errno (-EBADMSG when the stream ends inside it). */
ssize_t tarfmt_read_data(struct tarfmt_reader *r, void *buf, size_t cap);

/* A read function over a buffer (tests, the fuzz target). */
struct tarfmt_mem {
	const uint8_t *p;
	size_t len, off;
};
ssize_t tarfmt_mem_read(void *ud, void *buf, size_t len);

/* Parses a pax mtime value ("S" or "S.FRACTION", S possibly negative). Exposed for tests. */
bool tarfmt_parse_time(const char *v, size_t len, int64_t *ret_s, uint32_t *ret_ns);

/* Normalises an entry's path in place to the form it is created under: leading "/" and
 * "./", empty and "." components and trailing slashes dropped ("" is the archive's root).
 * False (p unspecified) when a component is "..". */
bool tarfmt_clean_path(char *p);
