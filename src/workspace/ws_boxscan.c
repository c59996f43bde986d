/* ws_boxscan.c — the box's scan as hostile input, the fetch plan and the merge (see
 * ws_boxscan.h). Everything but ws_bscan_read_fd/load is pure. */
#include <fcntl.h>

#include "proto/wsscan.h"
#include "util/fdio.h"
#include "workspace/ws_boxscan.h"

#define BSCAN_FILE_MAX (512u << 20)

void ws_bscan_add_stat(struct ws_bscan *s, const char *path, const char *target, const struct stat *st)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	mode_t m = st->st_mode;
	uint8_t kind = S_ISREG(m) ? WSSCAN_FILE : S_ISDIR(m) ? WSSCAN_DIR : S_ISLNK(m) && target ? WSSCAN_LINK : WSSCAN_OTHER;
	s->v[s->n++] = (struct ws_bstat){
		.path = xstrdup(path), .target = kind == WSSCAN_LINK ? xstrdup(target) : NULL, .kind = kind,
		.mode = m & 07777, .size = (uint64_t)st->st_size, .ino = st->st_ino,
		.mtime_s = st->st_mtim.tv_sec, .mtime_ns = (uint32_t)st->st_mtim.tv_nsec,
		.ctime_s = st->st_ctim.tv_sec, .ctime_ns = (uint32_t)st->st_ctim.tv_nsec,
	};
	s->names += strlen(path) + (target ? strlen(target) : 0);
}

void ws_bscan_free(struct ws_bscan *s)
{
	for (size_t i = 0; s && i < s->n; i++) {
		free(s->v[i].path);
		free(s->v[i].target);
	}
	if (s) {
		free(s->v);
		free(s->pend);
		*s = (struct ws_bscan){0};
	}
}

static int cmp_bstat(const void *a, const void *b)
{
	return strcmp(((const struct ws_bstat *)a)->path, ((const struct ws_bstat *)b)->path);
}

static bool dir_and_note(uint8_t a, uint8_t b)
{
	return (a == WSSCAN_DIR && b == WSSCAN_NOTE) || (a == WSSCAN_NOTE && b == WSSCAN_DIR);
}

static int finish(struct ws_bscan *s, const struct wsscan_rec *end, pd_err *err)
{
	if (end->size != s->n)
		return pd_error_msg(err, EBADMSG, "box scan: end record counts %llu entries, %zu were sent",
				    (unsigned long long)end->size, s->n);
	if (s->n) /* an empty scan has no array at all */
		qsort(s->v, s->n, sizeof(*s->v), cmp_bstat);
	/* one path, one record; but a directory read in part (a name too long beneath it) has a
	 * NOTE beside its 'd' record */
	for (size_t i = 1; i < s->n; i++)
		if (streq(s->v[i - 1].path, s->v[i].path) &&
		    !(dir_and_note(s->v[i - 1].kind, s->v[i].kind) && (i < 2 || !streq(s->v[i - 2].path, s->v[i].path))))
			return pd_error_msg(err, EBADMSG, "box scan: a path is listed twice");
	s->done = true;
	return 1;
}

static int take(struct ws_bscan *s, const struct wsscan_rec *r, const struct ws_limits *lim, pd_err *err)
{
	if (r->kind == WSSCAN_END)
		return finish(s, r, err);
	if (s->n >= lim->max_entries)
		return pd_error_msg(err, EFBIG, "box scan: more than %llu entries", (unsigned long long)lim->max_entries);
	s->names += r->path_len + r->target_len;
	if (s->names > lim->max_names)
		return pd_error_msg(err, EFBIG, "box scan: more than %llu bytes of names",
				    (unsigned long long)lim->max_names);
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
	s->v[s->n++] = (struct ws_bstat){
		.path = xstrndup(r->path, r->path_len),
		.target = r->target ? xstrndup(r->target, r->target_len) : NULL,
		.kind = r->kind, .mode = r->mode, .size = r->size, .ino = r->ino,
		.mtime_s = r->mtime_s, .mtime_ns = r->mtime_ns, .ctime_s = r->ctime_s, .ctime_ns = r->ctime_ns,
	};
	return 0;
}

/* decodes whole records from p; returns <0, 1 at END, else 0 with *ret_used consumed */
static int decode_all(struct ws_bscan *s, const uint8_t *p, size_t n, size_t *ret_used,
		      const struct ws_limits *lim, pd_err *err)
{
	size_t off = 0;
	int r = 0;
	while (r == 0) {
		struct wsscan_rec rec;
		size_t used;
		int d = wsscan_decode(p + off, n - off, &rec, &used);
		if (d < 0)
			return pd_error_msg(err, EBADMSG, "box scan: malformed record after %zu entries", s->n);
		if (d == 0)
			break;
		off += used;
		r = take(s, &rec, lim, err);
	}
	if (r == 1 && off != n)
		return pd_error_msg(err, EBADMSG, "box scan: bytes after the end record");
	*ret_used = off;
	return r;
}

int ws_bscan_feed(struct ws_bscan *s, const uint8_t *p, size_t n, const struct ws_limits *lim, pd_err *err)
{
	if (s->done)
		return n ? pd_error_msg(err, EBADMSG, "box scan: bytes after the end record") : 1;
	size_t used;
	int r;
	if (s->pend_len) { /* complete the carried record first, then go on in place */
		size_t need = WSSCAN_HDR + 2 * WSSCAN_MAX_PATH, add = n < need ? n : need;
		if (s->pend_len + add > s->pend_cap) {
			s->pend_cap = s->pend_len + add;
			s->pend = xrealloc(s->pend, s->pend_cap);
		}
		memcpy(s->pend + s->pend_len, p, add);
		struct wsscan_rec rec;
		int d = wsscan_decode(s->pend, s->pend_len + add, &rec, &used);
		if (d < 0)
			return pd_error_msg(err, EBADMSG, "box scan: malformed record after %zu entries", s->n);
		if (d == 0) {
			s->pend_len += add; /* add == n here: a record is shorter than `need` */
			return 0;
		}
		size_t from_p = used - s->pend_len;
		s->pend_len = 0;
		r = take(s, &rec, lim, err);
		if (r == 1 && from_p != n)
			return pd_error_msg(err, EBADMSG, "box scan: bytes after the end record");
		if (r != 0)
			return r;
		p += from_p, n -= from_p;
	}
	r = decode_all(s, p, n, &used, lim, err);
	if (r == 0 && used < n) {
		if (n - used > s->pend_cap) {
			s->pend_cap = n - used;
			s->pend = xrealloc(s->pend, s->pend_cap);
		}
		memcpy(s->pend, p + used, n - used);
		s->pend_len = n - used;
	}
	return r;
}

int ws_bscan_read_fd(int fd, const struct ws_limits *lim, struct ws_bscan *ret, pd_err *err)
{
	static uint8_t buf[256 * 1024];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return pd_error(err, errno, "cannot read the box's scan");
		if (n == 0)
			return pd_error_msg(err, EPIPE, "the box's scan ended early");
		int r = ws_bscan_feed(ret, buf, (size_t)n, lim, err);
		if (r != 0)
			return r < 0 ? r : 0;
	}
}

int ws_bscan_load(int dirfd, const char *name, const struct ws_limits *lim, struct ws_bscan *ret, pd_err *err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : pd_error(err, errno, "cannot open %s", name);
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r = read_fd_all(fd, BSCAN_FILE_MAX, &buf, &len);
	if (r < 0)
		return pd_error(err, r, "cannot read %s", name);
	r = ws_bscan_feed(ret, (const uint8_t *)buf, len, lim, err);
	if (r == 0)
		return pd_error_msg(err, EBADMSG, "%s: no end record", name);
	return r < 0 ? r : 0;
}

void ws_bscan_keep_unchanged(struct ws_bscan *s, const struct ws_manifest *restored, const struct ws_manifest *base)
{
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct ws_bstat *r = &s->v[i];
		const struct ws_entry *a = r->kind == WSSCAN_FILE ? ws_manifest_find(restored, r->path) : NULL;
		const struct ws_entry *b = a ? ws_manifest_find(base, r->path) : NULL;
		if (a && b && a->type == WS_FILE && b->type == WS_FILE && a->size == b->size &&
		    a->mode == b->mode && memcmp(a->sha256, b->sha256, WS_SHA256_LEN) == 0) {
			s->v[k++] = *r;
			continue;
		}
		free(r->path);
		free(r->target);
	}
	s->n = k;
}

size_t ws_bscan_encode(const struct ws_bscan *s, uint8_t **ret)
{
	size_t cap = WSSCAN_HDR, len = 0;
	for (size_t i = 0; i < s->n; i++)
		cap += WSSCAN_HDR + strlen(s->v[i].path) + (s->v[i].target ? strlen(s->v[i].target) : 0);
	uint8_t *out = xmalloc(cap);
	for (size_t i = 0; i < s->n; i++) {
		const struct ws_bstat *b = &s->v[i];
		struct wsscan_rec r = {
			.kind = b->kind, .mode = b->mode, .size = b->size, .ino = b->ino,
			.mtime_s = b->mtime_s, .mtime_ns = b->mtime_ns, .ctime_s = b->ctime_s, .ctime_ns = b->ctime_ns,
			.path = b->path, .path_len = strlen(b->path),
			.target = b->target, .target_len = b->target ? strlen(b->target) : 0,
		};
		len += wsscan_encode(out + len, cap - len, &r);
	}
	struct wsscan_rec end = {.kind = WSSCAN_END, .size = s->n};
	len += wsscan_encode(out + len, cap - len, &end);
	*ret = out;
	return len;
}

/* --- the plan ------------------------------------------------------------------------------ */

void ws_bplan_free(struct ws_bplan *p)
{
	ws_manifest_free(&p->same);
	ws_manifest_free(&p->unread);
	ws_manifest_free(&p->ignored);
	free(p->fetch);
	*p = (struct ws_bplan){0};
}

static const struct ws_bstat *bfind(const struct ws_bscan *s, const char *path)
{
	struct ws_bstat key = {.path = (char *)path};
	return s ? bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_bstat) : NULL;
}

static bool same_inode_state(const struct ws_bstat *a, const struct ws_bstat *b)
{
	return a->kind == b->kind && a->mode == b->mode && a->size == b->size && a->ino == b->ino &&
	       a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns && a->ctime_s == b->ctime_s &&
	       a->ctime_ns == b->ctime_ns;
}

/* The copy-in entry the box still holds unchanged at r's path, or NULL. */
static const struct ws_entry *unchanged(const struct ws_bstat *r, const struct ws_bscan *baseline,
					const struct ws_manifest *base)
{
	const struct ws_entry *e = ws_manifest_find(base, r->path);
	if (!e)
		return NULL;
	if (r->kind == WSSCAN_LINK) /* a link is all metadata: its target says it all */
		return e->type == WS_SYMLINK && streq(e->target, r->target) ? e : NULL;
	if (r->kind != WSSCAN_FILE || e->type != WS_FILE || e->size != r->size || e->mode != r->mode)
		return NULL;
	const struct ws_bstat *b = bfind(baseline, r->path);
	return b && same_inode_state(r, b) ? e : NULL;
}

static void add_fetch(struct ws_bplan *p, const char *path, size_t *cap)
{
	size_t n = strlen(path) + 3;
	if (p->fetch_len + n > *cap) {
		*cap = (p->fetch_len + n) * 2;
		p->fetch = xrealloc(p->fetch, *cap);
	}
	memcpy(p->fetch + p->fetch_len, "./", 2);
	memcpy(p->fetch + p->fetch_len + 2, path, n - 2); /* with its NUL */
	p->fetch_len += n;
	p->n_fetch++;
}

void ws_bplan_make(const struct ws_bscan *now, const struct ws_bscan *baseline, const struct ws_manifest *base,
		   const struct ws_ignore *ig, const struct ws_limits *lim, struct ws_bplan *ret,
		   struct ws_notes *notes)
{
	*ret = (struct ws_bplan){0};
	size_t cap = 0;
	for (size_t i = 0; i < now->n; i++) {
		const struct ws_bstat *r = &now->v[i];
		enum ws_reason why = ws_path_check(r->path, strlen(r->path), lim);
		if (r->kind == WSSCAN_NOTE) {
			/* the box could not read this directory (or went no deeper): what the host
			 * has beneath it is unknown, not gone */
			if (why == WS_OK)
				ws_manifest_add(&ret->unread, &(struct ws_entry){.path = r->path, .type = WS_REFUSED,
										 .reason = WS_R_NOT_READ});
			else
				ws_notes_add(notes, WS_R_TOO_DEEP, r->path, "not read: too deep or too long beneath");
			continue;
		}
		if (why != WS_OK) {
			ws_notes_add(notes, why, r->path, NULL);
			continue;
		}
		/* an unchanged entry is the host's own copy-in entry: the ignore rules kept it then */
		const struct ws_entry *e = unchanged(r, baseline, base);
		/* the ignore rules (as they are now) keep new entries out, never one the copy-in
		 * gave the box: a rule added since would turn it and its tree into deletions */
		if (e)
			ws_manifest_add(&ret->same, e);
		else if (!ig || ws_manifest_find(base, r->path) ||
			 ws_ignore_match(ig, r->path, r->kind == WSSCAN_DIR) == WS_OK)
			add_fetch(ret, r->path, &cap);
		else if (r->kind == WSSCAN_FILE && ret->ignored.n < WS_BPLAN_IGNORED_MAX)
			ws_manifest_add(&ret->ignored, &(struct ws_entry){.path = r->path, .type = WS_FILE, .size = r->size});
	}
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* by file name, then size */
static int cmp_name_size(const void *a, const void *b)
{
	const struct ws_entry *x = *(const struct ws_entry *const *)a, *y = *(const struct ws_entry *const *)b;
	int c = strcmp(base_name(x->path), base_name(y->path));
	return c ? c : (x->size > y->size) - (x->size < y->size);
}

void ws_bplan_note_moves(const struct ws_bplan *plan, const struct ws_manifest *base, const struct ws_manifest *box,
			 struct ws_notes *notes)
{
	if (!plan->ignored.n)
		return;
	_cleanup_free_ const struct ws_entry **by = xmalloc(plan->ignored.n * sizeof(*by));
	for (size_t i = 0; i < plan->ignored.n; i++)
		by[i] = &plan->ignored.v[i];
	qsort(by, plan->ignored.n, sizeof(*by), cmp_name_size);
	for (size_t i = 0; i < base->n; i++) {
		const struct ws_entry *gone = &base->v[i], *key = gone, *const *hit;
		if (gone->type != WS_FILE || ws_manifest_find(box, gone->path))
			continue;
		hit = bsearch(&key, by, plan->ignored.n, sizeof(*by), cmp_name_size);
		if (!hit)
			continue;
		/* both names come from the box: the note shows them escaped */
		_cleanup_free_ char *was = ws_escape_name(gone->path);
		_cleanup_free_ char *detail = xasprintf("new here and not shown; '%s', which the box deleted, had this name "
							"and size: apply would delete it on the host",
							was);
		ws_notes_add(notes, WS_R_IGNORED, (*hit)->path, detail);
	}
}

static void refuse(struct ws_manifest *m, const char *path)
{
	ws_manifest_add(m, &(struct ws_entry){.path = (char *)path, .type = WS_REFUSED, .reason = WS_R_NOT_READ});
}

void ws_bplan_refuse_unread(const struct ws_bplan *plan, struct ws_manifest *fetched)
{
	struct ws_manifest out = {0};
	/* what the stream holds, but an unread directory's own entry: refused instead */
	for (size_t i = 0; i < fetched->n; i++)
		if (!ws_manifest_find(&plan->unread, fetched->v[i].path))
			ws_manifest_add(&out, &fetched->v[i]);
	for (size_t i = 0; i < plan->unread.n; i++)
		refuse(&out, plan->unread.v[i].path);
	for (size_t off = 0; off < plan->fetch_len; off += strlen(plan->fetch + off) + 1) {
		const char *path = plan->fetch + off + 2; /* past "./" */
		if (!ws_manifest_find(fetched, path) && !ws_manifest_find(&plan->unread, path))
			refuse(&out, path);
	}
	ws_manifest_sort(&out);
	ws_manifest_free(fetched);
	*fetched = out;
}

/* --- the merge ---------------------------------------------------------------------------- */

static void keep(struct ws_manifest *out, const struct ws_entry *e, struct ws_notes *notes)
{
	const char *slash = strrchr(e->path, '/');
	if (slash) {
		_cleanup_free_ char *parent = xstrndup(e->path, (size_t)(slash - e->path));
		const struct ws_entry *p = ws_manifest_find(out, parent);
		if (!p || p->type != WS_DIR) {
			ws_notes_add(notes, p ? WS_R_PARENT_NOT_DIR : WS_R_PARENT_REFUSED, e->path, NULL);
			return;
		}
	}
	ws_manifest_add(out, e);
}

void ws_bscan_merge(const struct ws_manifest *fetched, const struct ws_manifest *same, struct ws_manifest *ret,
		    struct ws_notes *notes)
{
	*ret = (struct ws_manifest){0};
	size_t i = 0, j = 0;
	while (i < fetched->n || j < same->n) {
		int c = i == fetched->n ? 1 : j == same->n ? -1 : strcmp(fetched->v[i].path, same->v[j].path);
		if (c <= 0)
			keep(ret, &fetched->v[i++], notes);
		else
			keep(ret, &same->v[j], notes);
		if (c >= 0)
			j++;
	}
}
