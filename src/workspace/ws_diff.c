/* ws_diff.c — compare the copy-in manifest with the box's manifest (pure), and the usual
 * content source for renderers. */
#include <fcntl.h>
#include <sys/stat.h>

#include "util/fdio.h"
#include "ws_diff.h"

struct dlist {
	struct ws_delta *v;
	size_t n, cap;
};

static struct ws_delta *push(struct dlist *l, enum ws_change k, const struct ws_entry *base,
			     const struct ws_entry *box)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n] = (struct ws_delta){.kind = k, .base = base, .box = box};
	return &l->v[l->n++];
}

const char *ws_change_str(enum ws_change c)
{
	static const char *const names[WS_CHG_MAX] = {
		[WS_CHG_ADDED] = "added", [WS_CHG_DELETED] = "deleted", [WS_CHG_MODIFIED] = "modified",
		[WS_CHG_MODE] = "mode", [WS_CHG_SYMLINK] = "symlink", [WS_CHG_TYPE] = "type",
		[WS_CHG_RENAMED] = "renamed", [WS_CHG_REFUSED] = "refused",
	};
	return c > 0 && c < WS_CHG_MAX ? names[c] : "invalid";
}

const char *ws_delta_path(const struct ws_delta *d)
{
	return d->box ? d->box->path : d->base->path;
}

/* Both sides present: what changed, if anything. */
static void compare(struct dlist *l, const struct ws_entry *a, const struct ws_entry *b)
{
	if (b->type == WS_REFUSED) {
		push(l, WS_CHG_REFUSED, a, b)->refused = b->reason;
	} else if (a->type != b->type) {
		push(l, WS_CHG_TYPE, a, b);
	} else if (a->type == WS_FILE) {
		bool content = memcmp(a->sha256, b->sha256, WS_SHA256_LEN) != 0;
		bool mode = a->mode != b->mode;
		if (content || mode)
			push(l, content ? WS_CHG_MODIFIED : WS_CHG_MODE, a, b)->mode_changed = mode;
	} else if (a->type == WS_SYMLINK && !streq(a->target, b->target)) {
		push(l, WS_CHG_SYMLINK, a, b);
	}
}

static void only_box(struct dlist *l, const struct ws_entry *b)
{
	if (b->type == WS_REFUSED)
		push(l, WS_CHG_REFUSED, NULL, b)->refused = b->reason;
	else
		push(l, WS_CHG_ADDED, NULL, b);
}

/* A base entry gone from the box is deleted, unless the box put something refused in the
 * way (then deleting what lies beneath would apply half of a change we refuse). */
static void only_base(struct dlist *l, const struct ws_entry *a, const struct ws_manifest *box)
{
	_cleanup_free_ char *p = xstrdup(a->path);
	for (char *s; (s = strrchr(p, '/'));) {
		*s = '\0';
		const struct ws_entry *up = ws_manifest_find(box, p);
		if (up && up->type == WS_REFUSED) {
			push(l, WS_CHG_REFUSED, a, NULL)->refused = WS_R_PARENT_REFUSED;
			return;
		}
	}
	push(l, WS_CHG_DELETED, a, NULL);
}

static int cmp_delta_sha(const void *x, const void *y)
{
	const struct ws_delta *a = *(struct ws_delta *const *)x, *b = *(struct ws_delta *const *)y;
	int c = memcmp(a->base->sha256, b->base->sha256, WS_SHA256_LEN);
	return c ? c : strcmp(a->base->path, b->base->path);
}

static int cmp_sha_key(const void *key, const void *y)
{
	const struct ws_delta *b = *(struct ws_delta *const *)y;
	return memcmp(key, b->base->sha256, WS_SHA256_LEN);
}

static bool renameable(const struct ws_entry *e)
{
	return e && e->type == WS_FILE && e->size > 0; /* empty files are all alike: no renames */
}

/* Pairs each added file with an unpaired deleted file of the same content. */
static void find_renames(struct dlist *l)
{
	_cleanup_free_ struct ws_delta **del = xcalloc(l->n, sizeof(*del));
	size_t nd = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind == WS_CHG_DELETED && renameable(l->v[i].base))
			del[nd++] = &l->v[i];
	if (nd == 0)
		return;
	qsort(del, nd, sizeof(*del), cmp_delta_sha);
	for (size_t i = 0; i < l->n; i++) {
		struct ws_delta *add = &l->v[i];
		if (add->kind != WS_CHG_ADDED || !renameable(add->box))
			continue;
		struct ws_delta **hit = bsearch(add->box->sha256, del, nd, sizeof(*del), cmp_sha_key);
		while (hit && hit > del && cmp_sha_key(add->box->sha256, hit - 1) == 0)
			hit--;
		for (; hit && hit < del + nd && cmp_sha_key(add->box->sha256, hit) == 0; hit++)
			if ((*hit)->kind == WS_CHG_DELETED) {
				(*hit)->kind = WS_CHG_INVALID; /* absorbed into the rename */
				*add = (struct ws_delta){.kind = WS_CHG_RENAMED, .base = (*hit)->base, .box = add->box,
							 .mode_changed = (*hit)->base->mode != add->box->mode};
				break;
			}
	}
}

static void drop_absorbed(struct dlist *l)
{
	size_t j = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].kind != WS_CHG_INVALID)
			l->v[j++] = l->v[i];
	l->n = j;
}

void ws_diff_compute(const struct ws_manifest *base, const struct ws_manifest *box, struct ws_diff *ret)
{
	struct dlist l = {0};
	size_t i = 0, j = 0;
	while (i < base->n || j < box->n) {
		int c = i == base->n ? 1 : j == box->n ? -1 : strcmp(base->v[i].path, box->v[j].path);
		if (c < 0)
			only_base(&l, &base->v[i++], box);
		else if (c > 0)
			only_box(&l, &box->v[j++]);
		else
			compare(&l, &base->v[i++], &box->v[j++]);
	}
	find_renames(&l);
	drop_absorbed(&l);
	*ret = (struct ws_diff){.v = l.v, .n = l.n};
}

void ws_diff_free(struct ws_diff *d)
{
	if (!d)
		return;
	free(d->v);
	*d = (struct ws_diff){0};
}

bool ws_delta_selected(const struct ws_delta *d, char *const *paths)
{
	if (!paths)
		return true;
	for (char *const *p = paths; *p; p++)
		if ((d->box && ws_path_under(d->box->path, *p)) || (d->base && ws_path_under(d->base->path, *p)))
			return true;
	return false;
}

void ws_diff_mark_exec(struct ws_diff *d, const struct ws_manifest *box, int staging_fd)
{
	for (size_t i = 0; i < d->n; i++) {
		struct ws_delta *x = &d->v[i];
		if (x->box && x->box->type != WS_REFUSED)
			x->exec = ws_manifest_exec(box, x->box, staging_fd);
		/* removing gitattributes lines cannot start a driver: deletions go by name, and
		 * a deleted .gitattributes is not flagged */
		if (x->exec == WS_EXEC_NONE && x->base && (x->kind == WS_CHG_DELETED || x->kind == WS_CHG_RENAMED ||
							   x->kind == WS_CHG_TYPE)) {
			enum ws_exec e = ws_path_exec_class(x->base->path, x->base->type == WS_DIR);
			x->exec = e == WS_EXEC_GIT_ATTRIBUTES ? WS_EXEC_NONE : e;
		}
	}
}

static int open_content(const struct ws_content_host *h, const struct ws_entry *e, bool from_box, int *ret_fd)
{
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(e->sha256, hex);
	int fd = h->staging_fd >= 0 ? openat(h->staging_fd, hex, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd >= 0) {
		*ret_fd = fd;
		return 0;
	}
	if (from_box || h->host_rootfd < 0)
		return -ENOENT;
	/* the host side: beneath the root, no symlink followed, no FIFO blocking us */
	return ws_open_beneath(h->host_rootfd, e->path, O_RDONLY | O_NOCTTY | O_NONBLOCK, ret_fd);
}

int ws_content_host_load(void *ud, const struct ws_entry *e, bool from_box, size_t max,
			 char **ret_buf, size_t *ret_len)
{
	if (e->type != WS_FILE)
		return -EINVAL;
	if (e->size > max)
		return -EFBIG;
	_cleanup_close_ int fd = -1;
	int r = open_content(ud, e, from_box, &fd);
	struct stat st;
	if (r < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return r < 0 ? r : -EINVAL;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	uint8_t sha[WS_SHA256_LEN];
	r = read_fd_all(fd, max, &buf, &len);
	if (r < 0)
		return r;
	ws_sha256(buf, len, sha);
	if (memcmp(sha, e->sha256, WS_SHA256_LEN) != 0)
		return -ESTALE; /* the host file changed since copy-in */
	*ret_buf = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}
