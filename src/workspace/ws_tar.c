/* ws_tar.c — a manifest from a box's tar stream: the untrusted side of copy-out.
 *
 * Every header is checked before its data is touched: the entry count, the declared size
 * (a 100 GB sparse file is refused before a byte of it is expanded), the running total, the
 * raw stream length. Names go through ws_path_normalize(); parents must be directories;
 * duplicates are refused. Regular files are written into the host-owned staging directory
 * under a random temp name and renamed to their hex SHA-256: a name the box chose is never
 * a host path. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "util/fdio.h"
#include "ws_ignore.h"
#include "ws_manifest.h"

#define RAW_CHUNK (64u * 1024u)
#define RAW_PER_ENTRY (16u * 1024u) /* headers + pax records + padding allowed per entry */
#define STAGE_IN_MEMORY (1u << 20) /* files up to this size are hashed before anything is written */

/* path -> index into the (unsorted) manifest, open addressing */
struct pmap {
	size_t *slots; /* index + 1, 0 = empty */
	size_t cap, n;
};

struct tar_ctx {
	const struct ws_tar_opts *o;
	const struct ws_limits *lim;
	struct archive *a;
	struct ws_manifest m;
	struct pmap map;
	struct ws_notes *notes;
	uint64_t entries, total, raw_read, raw_max, names;
	bool overflow; /* the manifest grew past max_entries or max_names (implied dirs count) */
	int fd;
	char *rawbuf;
	uint8_t (*staged)[WS_SHA256_LEN]; /* hashes written to staging by this run */
	size_t nstaged, capstaged;
	pd_err *err;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static size_t *pmap_slot(const struct pmap *p, const struct ws_manifest *m, const char *path)
{
	for (size_t i = hash_str(path) & (p->cap - 1);; i = (i + 1) & (p->cap - 1))
		if (!p->slots[i] || streq(m->v[p->slots[i] - 1].path, path))
			return &p->slots[i];
}

static void pmap_grow(struct pmap *p, const struct ws_manifest *m)
{
	struct pmap old = *p;
	p->cap = old.cap ? old.cap * 2 : 1024;
	p->slots = xcalloc(p->cap, sizeof(size_t));
	for (size_t i = 0; i < old.cap; i++)
		if (old.slots[i])
			*pmap_slot(p, m, m->v[old.slots[i] - 1].path) = old.slots[i];
	free(old.slots);
}

static struct ws_entry *lookup(struct tar_ctx *c, const char *path)
{
	if (!c->map.cap)
		return NULL;
	size_t *s = pmap_slot(&c->map, &c->m, path);
	return *s ? &c->m.v[*s - 1] : NULL;
}

static struct ws_entry *add(struct tar_ctx *c, const struct ws_entry *e)
{
	if (2 * (c->map.n + 1) > c->map.cap)
		pmap_grow(&c->map, &c->m);
	struct ws_entry *d = ws_manifest_add(&c->m, e);
	*pmap_slot(&c->map, &c->m, e->path) = c->m.n;
	c->map.n++;
	c->names += strlen(e->path) + (e->target ? strlen(e->target) : 0);
	if (c->m.n > c->lim->max_entries || c->names > c->lim->max_names)
		c->overflow = true;
	return d;
}

static la_ssize_t raw_read(struct archive *a, void *ud, const void **buf)
{
	struct tar_ctx *c = ud;
	if (c->raw_read >= c->raw_max) {
		archive_set_error(a, EFBIG, "tar stream longer than the limits allow");
		return -1;
	}
	ssize_t n;
	do
		n = read(c->fd, c->rawbuf, RAW_CHUNK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		archive_set_error(a, errno, "cannot read the tar stream");
		return -1;
	}
	c->raw_read += (uint64_t)n;
	*buf = c->rawbuf;
	return n;
}

/* The error of the archive reader, escaped: it may quote names from the stream. */
static int archive_fail(struct tar_ctx *c, int errnum, const char *what)
{
	const char *s = archive_error_string(c->a);
	_cleanup_free_ char *esc = ws_escape(s ? s : "unknown error", s ? strlen(s) : 13, WS_ESC_NAME);
	int e = archive_errno(c->a);
	return pd_error_msg(c->err, errnum ? errnum : (e > 0 ? e : EIO), "%s: %s", what, esc);
}

/* Every ancestor must be a directory; missing ones are added as implied 0755 dirs. */
static enum ws_reason ensure_parents(struct tar_ctx *c, const char *path)
{
	_cleanup_free_ char *p = xstrdup(path);
	for (char *s = strchr(p, '/'); s; s = strchr(s + 1, '/')) {
		*s = '\0';
		struct ws_entry *e = lookup(c, p);
		if (e && e->type == WS_REFUSED)
			return WS_R_PARENT_REFUSED;
		if (e && e->type != WS_DIR)
			return WS_R_PARENT_NOT_DIR;
		if (!e)
			add(c, &(struct ws_entry){.path = p, .type = WS_DIR, .mode = 0755});
		*s = '/';
	}
	return WS_OK;
}

static void note_staged(struct tar_ctx *c, const uint8_t sha[WS_SHA256_LEN])
{
	if (c->nstaged == c->capstaged) {
		c->capstaged = c->capstaged ? c->capstaged * 2 : 64;
		c->staged = xrealloc(c->staged, c->capstaged * WS_SHA256_LEN);
	}
	memcpy(c->staged[c->nstaged++], sha, WS_SHA256_LEN);
}

/* Reads the entry's data (exactly size bytes) into out (or nowhere) or, when mem is set, into
 * mem (size bytes), hashing it. */
/* Writes n bytes of buf to out, leaving 4 KiB blocks of zeros as holes (seeked over): a box's
 * sparse file (900 MiB that hold 4 KiB) must not become 900 MiB of the host's disk in the
 * staging directory. The caller sets the final size (a trailing hole has no write). */
#define SPARSE_BLOCK 4096
static bool all_zero(const char *p, size_t n)
{
	return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

static int write_sparse(int out, const char *buf, size_t n)
{
	size_t off = 0;
	while (off < n) {
		size_t len = n - off < SPARSE_BLOCK ? n - off : SPARSE_BLOCK;
		bool zero = all_zero(buf + off, len);
		size_t run = len;
		while (off + run < n) { /* the run of blocks of the same kind */
			size_t next = n - off - run < SPARSE_BLOCK ? n - off - run : SPARSE_BLOCK;
			if (all_zero(buf + off + run, next) != zero)
				break;
			run += next;
		}
		if (zero) {
			if (lseek(out, (off_t)run, SEEK_CUR) < 0)
				return -errno;
		} else {
			int r = fd_write_all(out, buf + off, run);
			if (r < 0)
				return r;
		}
		off += run;
	}
	return 0;
}

static int read_data(struct tar_ctx *c, int out, uint8_t *mem, uint64_t size, uint8_t ret_sha[WS_SHA256_LEN])
{
	_cleanup_free_ char *buf = mem ? NULL : xmalloc(WS_IO_CHUNK);
	ws_hasher *h = ws_hasher_new();
	uint64_t got = 0;
	int r = 0;
	for (;;) {
		char *to = mem ? (char *)mem + got : buf;
		size_t room = mem ? (size_t)(size - got) : WS_IO_CHUNK;
		la_ssize_t n = archive_read_data(c->a, to, room ? room : 1);
		if (n < 0 || got + (uint64_t)n > size) {
			r = n < 0 ? archive_fail(c, 0, "cannot read tar entry data")
				  : pd_error_msg(c->err, EFBIG, "tar entry longer than declared");
			break;
		}
		if (n == 0)
			break;
		ws_hasher_update(h, to, (size_t)n);
		got += (uint64_t)n;
		if (!mem && out >= 0 && (r = write_sparse(out, buf, (size_t)n)) < 0) {
			pd_error(c->err, r, "cannot write to the staging directory");
			break;
		}
	}
	ws_hasher_final(h, ret_sha);
	if (r == 0 && got != size)
		r = pd_error_msg(c->err, EPIPE, "tar entry shorter than declared");
	if (r == 0 && out >= 0 && ftruncate(out, (off_t)size) < 0) /* a trailing hole */
		r = pd_error(c->err, errno, "cannot write to the staging directory");
	return r;
}

/* Writes data to a random temp name, then renames it to its hash: the content store's names
 * are chosen by the host, so nothing the box names ever becomes a host path. */
static int stage_write(struct tar_ctx *c, const uint8_t *data, uint64_t size, const uint8_t sha[WS_SHA256_LEN])
{
	char tmp[WS_TMP_NAME_MAX], hex[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(sha, hex);
	struct stat st;
	/* content-addressed and host-owned: a file with this name already holds these bytes (a
	 * previous snapshot staged them); apply re-hashes whatever it copies anyway */
	if (fstatat(c->o->staging_fd, hex, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
	    (uint64_t)st.st_size == size)
		return 0;
	_cleanup_close_ int fd = -1;
	int r = ws_tmpfile_at(c->o->staging_fd, tmp, &fd);
	if (r < 0)
		return pd_error(c->err, r, "cannot create a file in the staging directory");
	r = fd_write_all(fd, data, (size_t)size);
	if (r < 0)
		pd_error(c->err, r, "cannot write to the staging directory");
	if (r == 0 && renameat(c->o->staging_fd, tmp, c->o->staging_fd, hex) < 0)
		r = pd_error(c->err, errno, "cannot rename staged file");
	if (r < 0)
		unlinkat(c->o->staging_fd, tmp, 0);
	return r;
}

static int stage(struct tar_ctx *c, uint64_t size, uint8_t ret_sha[WS_SHA256_LEN])
{
	if (c->o->staging_fd < 0)
		return read_data(c, -1, NULL, size, ret_sha);
	int r;
	if (size <= STAGE_IN_MEMORY) { /* hashed first: no file at all when it is staged already */
		_cleanup_free_ uint8_t *mem = xmalloc(size ? size : 1);
		r = read_data(c, -1, mem, size, ret_sha);
		if (r == 0)
			r = stage_write(c, mem, size, ret_sha);
	} else {
		char tmp[WS_TMP_NAME_MAX], hex[2 * WS_SHA256_LEN + 1];
		_cleanup_close_ int fd = -1;
		r = ws_tmpfile_at(c->o->staging_fd, tmp, &fd);
		if (r < 0)
			return pd_error(c->err, r, "cannot create a file in the staging directory");
		r = read_data(c, fd, NULL, size, ret_sha);
		ws_sha256_hex(ret_sha, hex);
		if (r == 0 && renameat(c->o->staging_fd, tmp, c->o->staging_fd, hex) < 0)
			r = pd_error(c->err, errno, "cannot rename staged file");
		if (r < 0)
			unlinkat(c->o->staging_fd, tmp, 0);
	}
	if (r == 0)
		note_staged(c, ret_sha);
	return r;
}

static enum ws_reason type_refusal(mode_t type)
{
	switch (type) {
	case AE_IFCHR:
	case AE_IFBLK:
		return WS_R_DEVICE;
	case AE_IFIFO:
		return WS_R_FIFO;
	case AE_IFSOCK:
		return WS_R_SOCKET;
	default:
		return WS_R_UNKNOWN_TYPE;
	}
}

/* A hard link becomes a copy of an earlier regular file of this stream, or is refused. */
static void take_hardlink(struct tar_ctx *c, struct ws_entry *e, const char *raw_target)
{
	_cleanup_free_ char *t = NULL;
	const struct ws_entry *src = NULL;
	if (ws_path_normalize(raw_target, c->lim, &t) == WS_OK)
		src = lookup(c, t);
	if (!src || src->type != WS_FILE) {
		e->type = WS_REFUSED;
		e->reason = WS_R_HARDLINK_OUTSIDE;
		return;
	}
	e->type = WS_FILE;
	e->size = src->size;
	e->mode = src->mode;
	memcpy(e->sha256, src->sha256, WS_SHA256_LEN);
}

/* A symlink that fails the check stays acceptable only if the host tree had the very same
 * link at the same path (copied in, left alone): that is no change, never written. */
static void take_symlink(struct tar_ctx *c, struct ws_entry *e, const char *target)
{
	e->reason = ws_symlink_check(e->path, target, c->lim);
	const struct ws_entry *b = c->o->base ? ws_manifest_find(c->o->base, e->path) : NULL;
	if (e->reason != WS_OK && b && b->type == WS_SYMLINK && streq(b->target, target))
		e->reason = WS_OK;
	e->type = e->reason == WS_OK ? WS_SYMLINK : WS_REFUSED;
	e->target = e->reason == WS_OK ? (char *)target : NULL;
	e->mode = 0777;
}

static int take_content(struct tar_ctx *c, struct archive_entry *ae, struct ws_entry *e)
{
	const char *link = archive_entry_hardlink(ae);
	mode_t type = archive_entry_filetype(ae);
	if (link) {
		take_hardlink(c, e, link);
	} else if (type == AE_IFREG) {
		e->type = WS_FILE;
		e->size = (uint64_t)archive_entry_size(ae);
		return stage(c, e->size, e->sha256);
	} else if (type == AE_IFDIR) {
		e->type = WS_DIR;
	} else if (type == AE_IFLNK && archive_entry_symlink(ae)) {
		take_symlink(c, e, archive_entry_symlink(ae));
	} else {
		e->type = WS_REFUSED;
		e->reason = type_refusal(type);
	}
	return 0;
}

/* Size checks that must pass before a byte of data is read. */
static int check_declared(struct tar_ctx *c, struct archive_entry *ae, const char *name)
{
	la_int64_t size = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : 0;
	_cleanup_free_ char *esc = ws_escape_name(name);
	if (++c->entries > c->lim->max_entries)
		return pd_error_msg(c->err, EFBIG, "tar stream has more than %llu entries",
				    (unsigned long long)c->lim->max_entries);
	if (size < 0 || (uint64_t)size > c->lim->max_file)
		return pd_error_msg(c->err, EFBIG, "%s: declared size %lld is over the %llu byte limit",
				    esc, (long long)size, (unsigned long long)c->lim->max_file);
	c->total += (uint64_t)size;
	if (c->total > c->lim->max_total)
		return pd_error_msg(c->err, EFBIG, "tar stream holds more than %llu bytes",
				    (unsigned long long)c->lim->max_total);
	return 0;
}

/* An entry with a good name: merge an explicit directory, refuse duplicates, take the rest. */
static int take_entry(struct tar_ctx *c, struct archive_entry *ae, const char *path)
{
	bool is_dir = archive_entry_filetype(ae) == AE_IFDIR && !archive_entry_hardlink(ae);
	mode_t mode = archive_entry_perm(ae);
	/* the ignore rules keep new entries out; one the copy-in gave the box is always read
	 * back (rules added since must not turn it into a deletion) */
	if (c->o->ignore && !(c->o->base && ws_manifest_find(c->o->base, path)) &&
	    ws_ignore_match(c->o->ignore, path, is_dir) != WS_OK) {
		if (c->o->ignored && archive_entry_filetype(ae) == AE_IFREG && !archive_entry_hardlink(ae) &&
		    c->o->ignored->n < WS_IGNORED_MAX)
			ws_manifest_add(c->o->ignored, &(struct ws_entry){.path = (char *)path, .type = WS_FILE,
									   .size = (uint64_t)archive_entry_size(ae)});
		return 0;
	}
	enum ws_reason pr = ensure_parents(c, path);
	struct ws_entry *old = lookup(c, path);
	if (pr != WS_OK || (old && !(old->type == WS_DIR && is_dir))) {
		ws_notes_add(c->notes, pr != WS_OK ? pr : WS_R_DUPLICATE, path, NULL);
		return 0;
	}
	if (mode & 07000)
		ws_notes_add(c->notes, WS_R_SETID_STRIPPED, path, NULL);
	if (old) { /* an implied directory made explicit */
		old->mode = mode & 0777;
		return 0;
	}
	struct ws_entry e = {.path = (char *)path, .mode = mode & 0777};
	int r = take_content(c, ae, &e);
	if (r == 0)
		add(c, &e);
	return r;
}

static const char *entry_name(struct archive_entry *ae)
{
	const char *n = archive_entry_pathname(ae);
	return n ? n : archive_entry_pathname_utf8(ae);
}

static int ingest_one(struct tar_ctx *c, struct archive_entry *ae)
{
	const char *raw = entry_name(ae);
	int r = check_declared(c, ae, raw ? raw : "(unnamed)");
	if (r < 0)
		return r;
	_cleanup_free_ char *path = NULL;
	enum ws_reason why = raw ? ws_path_normalize(raw, c->lim, &path) : WS_R_EMPTY;
	if (why == WS_R_ROOT)
		return 0;
	if (why != WS_OK) {
		ws_notes_add(c->notes, why, raw ? raw : "", NULL);
		return 0; /* the reader skips the data of an entry we did not read */
	}
	r = take_entry(c, ae, path);
	if (r == 0 && c->overflow)
		r = pd_error_msg(c->err, EFBIG, "tar stream holds more entries or longer names than the limits allow");
	return r;
}

static int cmp_sha(const void *a, const void *b)
{
	return memcmp(a, b, WS_SHA256_LEN);
}

/* Drops staged content that apply will never need: the same bytes at the same path as in
 * the base (unchanged files). Run once, after the whole stream, because a later hard link
 * may need the content of an unchanged file at a new path. */
static void drop_unneeded(struct tar_ctx *c)
{
	if (c->o->staging_fd < 0 || !c->o->base || c->nstaged == 0)
		return;
	qsort(c->staged, c->nstaged, WS_SHA256_LEN, cmp_sha);
	size_t u = 1; /* the same content staged twice is one file: keep each hash once */
	for (size_t i = 1; i < c->nstaged; i++)
		if (memcmp(c->staged[i], c->staged[u - 1], WS_SHA256_LEN) != 0)
			memcpy(c->staged[u++], c->staged[i], WS_SHA256_LEN);
	c->nstaged = u;
	_cleanup_free_ uint8_t *needed = xcalloc(c->nstaged, 1);
	for (size_t i = 0; i < c->m.n; i++) {
		const struct ws_entry *e = &c->m.v[i];
		if (e->type != WS_FILE)
			continue;
		const struct ws_entry *b = ws_manifest_find(c->o->base, e->path);
		if (b && b->type == WS_FILE && memcmp(b->sha256, e->sha256, WS_SHA256_LEN) == 0)
			continue;
		uint8_t(*hit)[WS_SHA256_LEN] = bsearch(e->sha256, c->staged, c->nstaged, WS_SHA256_LEN, cmp_sha);
		if (hit)
			needed[hit - c->staged] = 1;
	}
	char hex[2 * WS_SHA256_LEN + 1];
	for (size_t i = 0; i < c->nstaged; i++) {
		if (needed[i])
			continue;
		ws_sha256_hex(c->staged[i], hex);
		unlinkat(c->o->staging_fd, hex, 0);
	}
}

static int read_all(struct tar_ctx *c)
{
	for (;;) {
		struct archive_entry *ae;
		int r = archive_read_next_header(c->a, &ae);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN)
			return archive_fail(c, 0, "bad tar stream");
		r = ingest_one(c, ae);
		if (r < 0)
			return r;
	}
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

static int open_reader(struct tar_ctx *c)
{
	c->a = archive_read_new();
	if (!c->a)
		abort();
	/* plain tar only (ustar, pax, GNU): no decompression filter, so no decompression bomb */
	archive_read_support_format_tar(c->a);
	if (archive_read_open(c->a, c, NULL, raw_read, NULL) != ARCHIVE_OK)
		return archive_fail(c, 0, "cannot read the tar stream");
	return 0;
}

int ws_manifest_from_tar(int fd, const struct ws_tar_opts *o, struct ws_manifest *ret,
			 struct ws_notes *notes, pd_err *err)
{
	struct tar_ctx c = {
		.o = o, .lim = o->limits ? o->limits : &WS_LIMITS_DEFAULT, .notes = notes,
		.fd = fd, .err = err, .rawbuf = xmalloc(RAW_CHUNK),
	};
	c.raw_max = sat_add(sat_add(c.lim->max_total, sat_mul(c.lim->max_entries + 1, RAW_PER_ENTRY)), 1 << 20);
	int r = open_reader(&c);
	if (r == 0)
		r = read_all(&c);
	if (r == 0) {
		drop_unneeded(&c);
		ws_manifest_sort(&c.m);
		*ret = c.m;
	} else {
		ws_manifest_free(&c.m);
	}
	archive_read_free(c.a);
	free(c.map.slots);
	free(c.staged);
	free(c.rawbuf);
	return r;
}
