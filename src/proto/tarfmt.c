/* tarfmt.c — ustar + pax encoding and a strict reader (see tarfmt.h). Pure. */
#include <inttypes.h>
#include <sys/param.h>

#include "proto/tarfmt.h"

/* ustar header fields: offset, width */
enum {
	F_NAME = 0, W_NAME = 100,
	F_MODE = 100, F_UID = 108, F_GID = 116, W_ID = 8,
	F_SIZE = 124, F_MTIME = 136, W_NUM = 12,
	F_CHKSUM = 148,
	F_TYPE = 156,
	F_LINK = 157,
	F_MAGIC = 257,
	F_DEVMAJOR = 329, F_DEVMINOR = 337,
	F_PREFIX = 345, W_PREFIX = 155,
};

static const char type_flags[TARFMT_MAX] = {
	[TARFMT_FILE] = '0', [TARFMT_HARDLINK] = '1', [TARFMT_SYMLINK] = '2', [TARFMT_CHR] = '3',
	[TARFMT_BLK] = '4', [TARFMT_DIR] = '5', [TARFMT_FIFO] = '6',
};

/* --- encoding --------------------------------------------------------------------------- */

/* w-1 octal digits and a NUL; v must fit */
static void put_octal(uint8_t *f, size_t w, uint64_t v)
{
	f[w - 1] = 0;
	for (size_t i = w - 1; i-- > 0; v >>= 3)
		f[i] = (uint8_t)('0' + (v & 7));
}

static bool fits_octal(uint64_t v, size_t w) { return v < (UINT64_C(1) << (3 * (w - 1))); }

static bool ascii(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

static unsigned checksum(const uint8_t *h)
{
	unsigned sum = 0;
	for (size_t i = 0; i < TARFMT_BLOCK; i++)
		sum += i >= F_CHKSUM && i < F_CHKSUM + 8 ? ' ' : h[i];
	return sum;
}

static void ustar(uint8_t *h, const char *name, char type, uint32_t mode, uint64_t uid, uint64_t gid,
		  uint64_t size, int64_t mtime, const char *link, uint32_t maj, uint32_t min)
{
	memset(h, 0, TARFMT_BLOCK);
	memcpy(h + F_NAME, name, MIN(strlen(name), (size_t)W_NAME));
	put_octal(h + F_MODE, W_ID, mode);
	put_octal(h + F_UID, W_ID, fits_octal(uid, W_ID) ? uid : 0);
	put_octal(h + F_GID, W_ID, fits_octal(gid, W_ID) ? gid : 0);
	put_octal(h + F_SIZE, W_NUM, fits_octal(size, W_NUM) ? size : 0);
	put_octal(h + F_MTIME, W_NUM, mtime >= 0 && fits_octal((uint64_t)mtime, W_NUM) ? (uint64_t)mtime : 0);
	h[F_TYPE] = (uint8_t)type;
	if (link)
		memcpy(h + F_LINK, link, MIN(strlen(link), (size_t)W_NAME));
	memcpy(h + F_MAGIC, "ustar\0" "00", 8);
	put_octal(h + F_DEVMAJOR, W_ID, fits_octal(maj, W_ID) ? maj : 0);
	put_octal(h + F_DEVMINOR, W_ID, fits_octal(min, W_ID) ? min : 0);
	unsigned sum = checksum(h);
	put_octal(h + F_CHKSUM, 7, sum); /* six digits, NUL, and the space left in place */
	h[F_CHKSUM + 7] = ' ';
}

static size_t digits(size_t n)
{
	size_t d = 1;
	for (; n >= 10; n /= 10)
		d++;
	return d;
}

/* One pax record "LEN KEY=VALUE\n", LEN counting itself. */
static size_t pax_rec(char *out, const char *key, const char *val)
{
	size_t body = 1 + strlen(key) + 1 + strlen(val) + 1, total = body + 1;
	while (digits(total) + body != total)
		total = digits(total) + body;
	sprintf(out, "%zu %s=%s\n", total, key, val);
	return total;
}

static bool entry_ok(const struct tarfmt_entry *e)
{
	size_t pl = strnlen(e->path, TARFMT_MAX_PATH + 1), ll = strnlen(e->link, TARFMT_MAX_PATH + 1);
	bool linked = e->type == TARFMT_SYMLINK || e->type == TARFMT_HARDLINK;
	return e->type > TARFMT_INVALID && e->type < TARFMT_MAX && pl > 0 && pl <= TARFMT_MAX_PATH &&
	       ll <= TARFMT_MAX_PATH && (linked ? ll > 0 : ll == 0) && e->mode <= 07777 &&
	       e->mtime_ns <= 999999999u && (e->type == TARFMT_FILE || e->size == 0);
}

size_t tarfmt_encode(uint8_t *out, const struct tarfmt_entry *e)
{
	if (!entry_ok(e))
		return 0;
	/* what ustar cannot hold goes into a pax header before the entry */
	char pax[2 * TARFMT_MAX_PATH + 512], num[64];
	size_t n = 0;
	bool binary = !ascii(e->path) || !ascii(e->link);
	if (binary) /* names are raw bytes, not UTF-8 (libarchive would try to convert them) */
		n += pax_rec(pax + n, "hdrcharset", "BINARY");
	if (strlen(e->path) > W_NAME || binary)
		n += pax_rec(pax + n, "path", e->path);
	if (e->link[0] && (strlen(e->link) > W_NAME || binary))
		n += pax_rec(pax + n, "linkpath", e->link);
	if (!fits_octal(e->size, W_NUM))
		n += (snprintf(num, sizeof(num), "%" PRIu64, e->size), pax_rec(pax + n, "size", num));
	if (e->mtime_ns || e->mtime_s < 0 || !fits_octal((uint64_t)e->mtime_s, W_NUM)) {
		if (e->mtime_s >= 0 || !e->mtime_ns)
			snprintf(num, sizeof(num), "%" PRId64 ".%09" PRIu32, e->mtime_s, e->mtime_ns);
		else /* -1.25 s is -2 s + 750 ms */
			snprintf(num, sizeof(num), "-%" PRIu64 ".%09" PRIu32, (uint64_t)-(e->mtime_s + 1),
				 1000000000u - e->mtime_ns);
		n += pax_rec(pax + n, "mtime", num);
	}
	if (!fits_octal(e->uid, W_ID))
		n += (snprintf(num, sizeof(num), "%" PRIu64, e->uid), pax_rec(pax + n, "uid", num));
	if (!fits_octal(e->gid, W_ID))
		n += (snprintf(num, sizeof(num), "%" PRIu64, e->gid), pax_rec(pax + n, "gid", num));
	size_t off = 0;
	if (n) {
		ustar(out, "./PaxHeaders/entry", 'x', 0644, 0, 0, n, 0, NULL, 0, 0);
		memcpy(out + TARFMT_BLOCK, pax, n);
		memset(out + TARFMT_BLOCK + n, 0, tarfmt_pad(n));
		off = TARFMT_BLOCK + n + tarfmt_pad(n);
	}
	ustar(out + off, e->path, type_flags[e->type], e->mode, e->uid, e->gid, e->size,
	      e->mtime_s, e->link[0] ? e->link : NULL, e->devmajor, e->devminor);
	return off + TARFMT_BLOCK;
}

/* --- reading ---------------------------------------------------------------------------- */

/* the values of the extended headers before an entry */
struct pax {
	bool has_path, has_link, has_size, has_mtime, has_uid, has_gid;
	uint64_t size, uid, gid;
	int64_t mtime_s;
	uint32_t mtime_ns;
	char path[TARFMT_MAX_PATH + 1], link[TARFMT_MAX_PATH + 1];
};

static bool dec(const char *v, size_t len, uint64_t *ret)
{
	uint64_t n = 0;
	if (len == 0 || len > 20)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' || n > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return false;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*ret = n;
	return true;
}

bool tarfmt_parse_time(const char *v, size_t len, int64_t *ret_s, uint32_t *ret_ns)
{
	bool neg = len > 0 && v[0] == '-';
	const char *dot = memchr(v, '.', len);
	size_t whole = dot ? (size_t)(dot - v) : len;
	uint64_t s, frac = 0;
	if (!dec(v + neg, whole - neg, &s) || s > (uint64_t)INT64_MAX - 1)
		return false;
	if (dot) {
		size_t fl = len - whole - 1;
		if (fl == 0)
			return false;
		for (size_t i = 0; i < fl; i++) {
			char c = dot[1 + i];
			if (c < '0' || c > '9')
				return false;
			if (i < 9)
				frac = frac * 10 + (uint64_t)(c - '0');
		}
		for (size_t i = fl; i < 9; i++)
			frac *= 10;
	}
	if (!neg) {
		*ret_s = (int64_t)s, *ret_ns = (uint32_t)frac;
	} else if (frac) {
		*ret_s = -(int64_t)s - 1, *ret_ns = (uint32_t)(1000000000u - frac);
	} else {
		*ret_s = -(int64_t)s, *ret_ns = 0;
	}
	return true;
}

static bool set_name(char *dst, const char *v, size_t len)
{
	if (len == 0 || len > TARFMT_MAX_PATH || memchr(v, 0, len))
		return false;
	memcpy(dst, v, len);
	dst[len] = 0;
	return true;
}

static int pax_parse(const char *buf, size_t len, struct pax *p)
{
	for (size_t off = 0; off < len;) {
		const char *rec = buf + off, *sp = memchr(rec, ' ', MIN(len - off, (size_t)21));
		uint64_t n;
		if (!sp || !dec(rec, (size_t)(sp - rec), &n) || n > len - off || n < (size_t)(sp - rec) + 4 ||
		    rec[n - 1] != '\n')
			return -EBADMSG;
		const char *key = sp + 1, *end = rec + n - 1, *eq = memchr(key, '=', (size_t)(end - key));
		if (!eq || eq == key)
			return -EBADMSG;
		size_t kl = (size_t)(eq - key), vl = (size_t)(end - eq - 1);
		const char *v = eq + 1;
#define KEY(k) (kl == sizeof(k) - 1 && memcmp(key, k, kl) == 0)
		bool ok = true;
		/* an empty value unsets a keyword (POSIX pax) */
		if (KEY("path"))
			ok = !vl ? !(p->has_path = false) : (p->has_path = set_name(p->path, v, vl));
		else if (KEY("linkpath"))
			ok = !vl ? !(p->has_link = false) : (p->has_link = set_name(p->link, v, vl));
		else if (KEY("size"))
			ok = p->has_size = dec(v, vl, &p->size);
		else if (KEY("mtime"))
			ok = p->has_mtime = tarfmt_parse_time(v, vl, &p->mtime_s, &p->mtime_ns);
		else if (KEY("uid"))
			ok = p->has_uid = dec(v, vl, &p->uid);
		else if (KEY("gid"))
			ok = p->has_gid = dec(v, vl, &p->gid);
#undef KEY
		if (!ok)
			return -EBADMSG;
		off += n;
	}
	return 0;
}

/* An octal field (leading spaces, digits, then NUL or space or its end), or base-256 (first
 * byte 0x80: a positive big-endian number in the rest). */
static bool get_num(const uint8_t *f, size_t w, uint64_t *ret)
{
	uint64_t n = 0;
	if (f[0] == 0x80) {
		for (size_t i = 1; i < w; i++) {
			if (n >> 55)
				return false;
			n = n << 8 | f[i];
		}
		*ret = n;
		return true;
	}
	size_t i = 0;
	while (i < w && f[i] == ' ')
		i++;
	for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
		if (n >> 60)
			return false;
		n = n << 3 | (uint64_t)(f[i] - '0');
	}
	for (; i < w; i++)
		if (f[i] != 0 && f[i] != ' ')
			return false;
	*ret = n;
	return true;
}

static bool zero_block(const uint8_t *h)
{
	for (size_t i = 0; i < TARFMT_BLOCK; i++)
		if (h[i])
			return false;
	return true;
}

static bool header_ok(const uint8_t *h)
{
	uint64_t want;
	if (memcmp(h + F_MAGIC, "ustar", 5) != 0 || !get_num(h + F_CHKSUM, 8, &want))
		return false;
	unsigned u = checksum(h);
	int s = 0;
	for (size_t i = 0; i < TARFMT_BLOCK; i++)
		s += i >= F_CHKSUM && i < F_CHKSUM + 8 ? ' ' : (signed char)h[i];
	return want == u || (s >= 0 && want == (uint64_t)s);
}

static int read_exact(struct tarfmt_reader *r, void *buf, size_t len)
{
	ssize_t n = r->read(r->ud, buf, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EBADMSG;
}

static int skip(struct tarfmt_reader *r, uint64_t len)
{
	uint8_t buf[16384];
	while (len) {
		size_t n = (size_t)MIN(len, (uint64_t)sizeof(buf));
		int e = read_exact(r, buf, n);
		if (e < 0)
			return e;
		len -= n;
	}
	return 0;
}

static enum tarfmt_type type_of(uint8_t flag)
{
	if (flag == 0 || flag == '7')
		return TARFMT_FILE;
	for (int t = TARFMT_INVALID + 1; t < TARFMT_MAX; t++)
		if (type_flags[t] == flag)
			return (enum tarfmt_type)t;
	return TARFMT_INVALID;
}

/* The data of an extended header (size bytes and padding) into a NUL-terminated buffer. */
static int read_ext(struct tarfmt_reader *r, uint64_t size, uint64_t cap, char **ret)
{
	if (size > cap)
		return -EBADMSG;
	_cleanup_free_ char *b = xmalloc(size + tarfmt_pad(size) + 1);
	int e = read_exact(r, b, size + tarfmt_pad(size));
	if (e < 0)
		return e;
	b[size] = 0;
	*ret = TAKE_PTR(b);
	return 0;
}

/* Fills e from the ustar header h and the extended values p. */
static int fill(const uint8_t *h, const struct pax *p, uint64_t size, struct tarfmt_entry *e)
{
	uint64_t mode, mtime, uid, gid, maj, min;
	if (!get_num(h + F_MODE, W_ID, &mode) || !get_num(h + F_MTIME, W_NUM, &mtime) ||
	    !get_num(h + F_UID, W_ID, &uid) || !get_num(h + F_GID, W_ID, &gid) ||
	    !get_num(h + F_DEVMAJOR, W_ID, &maj) || !get_num(h + F_DEVMINOR, W_ID, &min) ||
	    (e->type = type_of(h[F_TYPE])) == TARFMT_INVALID || mtime > INT64_MAX)
		return -EBADMSG;
	if (p->has_path) {
		memcpy(e->path, p->path, sizeof(e->path));
	} else {
		size_t nl = strnlen((const char *)h + F_NAME, W_NAME);
		size_t pl = memcmp(h + F_MAGIC, "ustar\0", 6) == 0 ? strnlen((const char *)h + F_PREFIX, W_PREFIX) : 0;
		if (pl)
			memcpy(e->path, h + F_PREFIX, pl), e->path[pl++] = '/';
		memcpy(e->path + pl, h + F_NAME, nl);
		e->path[pl + nl] = 0;
	}
	if (p->has_link)
		memcpy(e->link, p->link, sizeof(e->link));
	else if (e->type == TARFMT_SYMLINK || e->type == TARFMT_HARDLINK) {
		size_t ll = strnlen((const char *)h + F_LINK, W_NAME);
		memcpy(e->link, h + F_LINK, ll);
		e->link[ll] = 0;
	} else
		e->link[0] = 0;
	bool linked = e->type == TARFMT_SYMLINK || e->type == TARFMT_HARDLINK;
	if (!e->path[0] || (linked && !e->link[0]) || (!linked && e->link[0]))
		return -EBADMSG;
	e->mode = (uint32_t)(mode & 07777);
	e->size = e->type == TARFMT_FILE ? size : 0;
	e->mtime_s = p->has_mtime ? p->mtime_s : (int64_t)mtime;
	e->mtime_ns = p->has_mtime ? p->mtime_ns : 0;
	e->uid = p->has_uid ? p->uid : uid;
	e->gid = p->has_gid ? p->gid : gid;
	e->devmajor = (uint32_t)MIN(maj, (uint64_t)UINT32_MAX);
	e->devminor = (uint32_t)MIN(min, (uint64_t)UINT32_MAX);
	return 0;
}

int tarfmt_next(struct tarfmt_reader *r, struct tarfmt_entry *ret)
{
	if (r->done)
		return 0;
	int e = skip(r, r->left + r->pad);
	r->left = r->pad = 0;
	if (e < 0)
		return e;
	_cleanup_free_ struct pax *p = xcalloc(1, sizeof(*p));
	for (;;) {
		if ((e = read_exact(r, r->blk, TARFMT_BLOCK)) < 0)
			return e;
		if (zero_block(r->blk)) {
			r->done = true;
			return 0;
		}
		uint64_t size;
		if (!header_ok(r->blk) || !get_num(r->blk + F_SIZE, W_NUM, &size))
			return -EBADMSG;
		uint8_t flag = r->blk[F_TYPE];
		if (flag == 'x' || flag == 'g') { /* 'g' (global) values are not used: skipped */
			_cleanup_free_ char *b = NULL;
			if ((e = read_ext(r, size, TARFMT_MAX_PAX, &b)) < 0 || (flag == 'x' && (e = pax_parse(b, size, p)) < 0))
				return e;
			continue;
		}
		if (flag == 'L' || flag == 'K') { /* GNU long name or link: the value, NUL-terminated */
			_cleanup_free_ char *b = NULL;
			if ((e = read_ext(r, size, TARFMT_MAX_PATH + 1, &b)) < 0)
				return e;
			bool ok = flag == 'L' ? (p->has_path = set_name(p->path, b, strlen(b)))
					      : (p->has_link = set_name(p->link, b, strlen(b)));
			if (!ok)
				return -EBADMSG;
			continue;
		}
		if (p->has_size)
			size = p->size;
		if ((e = fill(r->blk, p, size, ret)) < 0)
			return e;
		r->left = size;
		r->pad = tarfmt_pad(size);
		return 1;
	}
}

ssize_t tarfmt_read_data(struct tarfmt_reader *r, void *buf, size_t cap)
{
	size_t n = (size_t)MIN((uint64_t)cap, r->left);
	if (n == 0)
		return 0;
	int e = read_exact(r, buf, n);
	if (e < 0)
		return e;
	r->left -= n;
	return (ssize_t)n;
}

bool tarfmt_clean_path(char *p)
{
	char *out = p;
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		const char *c = s;
		while (*s && *s != '/')
			s++;
		size_t n = (size_t)(s - c);
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return false;
		if (out != p)
			*out++ = '/';
		memmove(out, c, n);
		out += n;
	}
	*out = 0;
	return true;
}

ssize_t tarfmt_mem_read(void *ud, void *buf, size_t len)
{
	struct tarfmt_mem *m = ud;
	size_t n = MIN(len, m->len - m->off);
	memcpy(buf, m->p + m->off, n);
	m->off += n;
	return (ssize_t)n;
}
