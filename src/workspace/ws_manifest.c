/* ws_manifest.c — the manifest container, notes, and the manifest-aware exec check. */
#include <fcntl.h>

#include "util/fdio.h"
#include "ws_manifest.h"

#define GITATTR_READ_MAX (1u << 20)

void ws_manifest_free(struct ws_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		free(m->v[i].path);
		free(m->v[i].target);
	}
	free(m->v);
	*m = (struct ws_manifest){0};
}

struct ws_entry *ws_manifest_add(struct ws_manifest *m, const struct ws_entry *e)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->v = xrealloc(m->v, m->cap * sizeof(*m->v));
	}
	struct ws_entry *d = &m->v[m->n++];
	*d = *e;
	d->path = xstrdup(e->path);
	d->target = e->target ? xstrdup(e->target) : NULL;
	return d;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct ws_entry *)a)->path, ((const struct ws_entry *)b)->path);
}

void ws_manifest_sort(struct ws_manifest *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_entry);
}

const struct ws_entry *ws_manifest_find(const struct ws_manifest *m, const char *path)
{
	struct ws_entry key = {.path = (char *)path};
	return m->n ? bsearch(&key, m->v, m->n, sizeof(*m->v), cmp_entry) : NULL;
}

const char *ws_type_str(enum ws_type t)
{
	static const char *const names[WS_TYPE_MAX] = {
		[WS_FILE] = "file", [WS_DIR] = "directory", [WS_SYMLINK] = "symlink",
		[WS_REFUSED] = "refused",
	};
	return t > 0 && t < WS_TYPE_MAX ? names[t] : "invalid";
}

void ws_notes_add(struct ws_notes *n, enum ws_reason r, const char *path, const char *detail)
{
	if (!n)
		return;
	if (n->n >= WS_NOTES_MAX) {
		n->dropped++;
		return;
	}
	if (n->n == n->cap) {
		n->cap = n->cap ? n->cap * 2 : 16;
		n->v = xrealloc(n->v, n->cap * sizeof(*n->v));
	}
	n->v[n->n++] = (struct ws_note){
		.reason = r, .path = xstrdup(path), .detail = detail ? xstrdup(detail) : NULL,
	};
}

void ws_notes_free(struct ws_notes *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		free(n->v[i].path);
		free(n->v[i].detail);
	}
	free(n->v);
	*n = (struct ws_notes){0};
}

/* gitattributes content decides; anything we cannot read and check counts as executing. */
static bool attributes_exec(const struct ws_entry *e, int staging_fd)
{
	if (e->type != WS_FILE)
		return e->type != WS_DIR;
	if (e->size > GITATTR_READ_MAX || staging_fd < 0)
		return true;
	char hex[2 * WS_SHA256_LEN + 1];
	ws_sha256_hex(e->sha256, hex);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	uint8_t sha[WS_SHA256_LEN];
	if (read_file_at(staging_fd, hex, GITATTR_READ_MAX, &buf, &len) < 0)
		return true;
	ws_sha256(buf, len, sha);
	if (memcmp(sha, e->sha256, WS_SHA256_LEN) != 0)
		return true;
	return ws_gitattributes_is_exec(buf, len);
}

/* dir/name is in m as one of the types t1, t2 */
static bool is_type(const struct ws_manifest *m, const char *dir, const char *name, enum ws_type t1,
		    enum ws_type t2)
{
	_cleanup_free_ char *p = dir ? xasprintf("%s/%s", dir, name) : xstrdup(name);
	const struct ws_entry *e = ws_manifest_find(m, p);
	return e && (e->type == t1 || e->type == t2);
}

/* A directory holding HEAD and objects/ is a git directory whatever its name: git finds
 * such a bare repository when the user's shell prompt runs in it. As git sees it: HEAD a
 * file or a symlink (to refs/…), objects a directory or a symlink to one, or instead of
 * objects a commondir file naming where they are (a linked worktree's git directory). */
static enum ws_exec bare_repo_class(const struct ws_manifest *m, const struct ws_entry *e)
{
	_cleanup_free_ char *dir = xstrdup(e->path);
	for (char *slash; (slash = strrchr(dir, '/')) || dir[0];) {
		if (slash)
			*slash = '\0';
		const char *d = slash ? dir : NULL;
		if (is_type(m, d, "HEAD", WS_FILE, WS_SYMLINK) &&
		    (is_type(m, d, "objects", WS_DIR, WS_SYMLINK) || is_type(m, d, "commondir", WS_FILE, WS_SYMLINK))) {
			size_t skip = d ? strlen(d) + 1 : 0;
			_cleanup_free_ char *as_git = xasprintf(".git/%s", e->path + skip);
			return ws_path_exec_class(as_git, e->type == WS_DIR);
		}
		if (!slash)
			break;
	}
	return WS_EXEC_NONE;
}

enum ws_exec ws_manifest_exec(const struct ws_manifest *m, const struct ws_entry *e, int staging_fd)
{
	enum ws_exec x = ws_path_exec_class(e->path, e->type == WS_DIR);
	if (x == WS_EXEC_NONE)
		x = bare_repo_class(m, e);
	if (x == WS_EXEC_GIT_ATTRIBUTES && !attributes_exec(e, staging_fd))
		x = WS_EXEC_NONE;
	return x;
}

void ws_manifest_limit_modes(struct ws_manifest *box, const struct ws_manifest *base, mode_t umask_bits)
{
	for (size_t i = 0; i < box->n; i++) {
		struct ws_entry *e = &box->v[i];
		if (e->type != WS_FILE && e->type != WS_DIR)
			continue;
		const struct ws_entry *b = ws_manifest_find(base, e->path);
		mode_t allowed = b && b->type == e->type ? b->mode : (mode_t)(0777 & ~umask_bits);
		e->mode &= (mode_t)~(022 & ~allowed);
	}
}
