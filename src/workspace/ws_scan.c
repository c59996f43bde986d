/* ws_scan.c — manifest of a host tree (and the walk copy-in rides on). Never follows a
 * symlink: links are recorded as links, files are opened O_NOFOLLOW and checked to be the
 * inode that was stat'ed, special files are skipped with a note. */
#include <fcntl.h>

#include "ws_scan.h"

struct scan {
	const struct ws_limits *lim;
	const struct ws_scan_ops *ops;
	struct ws_manifest m;
	struct ws_notes *notes;
	pd_err *err;
};

static int scan_symlink(struct scan *s, const struct ws_walk_entry *we, struct ws_entry *e)
{
	_cleanup_free_ char *buf = xmalloc(s->lim->max_path + 2);
	ssize_t n = readlinkat(we->dirfd, we->name, buf, s->lim->max_path + 1);
	if (n < 0)
		return ws_err_path(s->err, errno, "cannot read symlink", we->path);
	if (n == 0 || (size_t)n > s->lim->max_path) {
		ws_notes_add(s->notes, WS_R_PATH_TOO_LONG, we->path, "symlink target");
		return 0;
	}
	buf[n] = '\0';
	e->type = WS_SYMLINK;
	e->target = TAKE_PTR(buf);
	e->mode = 0777;
	return s->ops->emit(s->ops->ud, e, -1, we->st, s->err);
}

/* O_NOFOLLOW|O_NONBLOCK: a symlink or FIFO swapped in after the fstatat neither redirects nor
 * blocks us, and the inode check catches any swap. */
static int scan_file(struct scan *s, const struct ws_walk_entry *we, struct ws_entry *e)
{
	_cleanup_close_ int fd = openat(we->dirfd, we->name,
					O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return ws_err_path(s->err, errno, "cannot open", we->path);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return ws_err_path(s->err, errno, "cannot stat", we->path);
	if (!S_ISREG(st.st_mode) || st.st_ino != we->st->st_ino || st.st_dev != we->st->st_dev)
		return ws_err_path_msg(s->err, EAGAIN, "changed while the tree was read:", we->path);
	e->type = WS_FILE;
	return s->ops->emit(s->ops->ud, e, fd, &st, s->err);
}

static int scan_entry(struct scan *s, const struct ws_walk_entry *we, struct ws_entry *e)
{
	mode_t t = we->st->st_mode & S_IFMT;
	if (t == S_IFDIR) {
		e->type = WS_DIR;
		return s->ops->emit(s->ops->ud, e, -1, we->st, s->err);
	}
	if (t == S_IFLNK)
		return scan_symlink(s, we, e);
	if (t == S_IFREG)
		return scan_file(s, we, e);
	ws_notes_add(s->notes, WS_R_SPECIAL_SKIPPED, we->path, NULL);
	return 0;
}

static enum ws_reason precheck(struct scan *s, const struct ws_walk_entry *we)
{
	if (startswith(we->name, WS_TMP_PREFIX))
		return WS_R_RESERVED_NAME; /* apply's leftovers: never part of a tree */
	enum ws_reason r = ws_path_check(we->path, strlen(we->path), s->lim);
	if (r == WS_OK && s->ops->exclude)
		r = s->ops->exclude(s->ops->ud, we->path, S_ISDIR(we->st->st_mode));
	return r;
}

static int scan_visit(void *ud, const struct ws_walk_entry *we)
{
	struct scan *s = ud;
	enum ws_reason why = precheck(s, we);
	if (why != WS_OK) {
		ws_notes_add(s->notes, why, we->path, NULL);
		return 0;
	}
	if (s->m.n >= s->lim->max_entries)
		return pd_error_msg(s->err, EFBIG, "more than %llu files in the tree",
				    (unsigned long long)s->lim->max_entries);
	struct ws_entry e = {.path = (char *)we->path, .mode = we->st->st_mode & 0777};
	int r = scan_entry(s, we, &e);
	if (r == 0 && e.type != WS_TYPE_INVALID)
		ws_manifest_add(&s->m, &e);
	free(e.target);
	return r < 0 ? r : (e.type == WS_DIR);
}

int ws_scan(int rootfd, const struct ws_limits *lim, const struct ws_scan_ops *ops,
	    struct ws_manifest *ret, struct ws_notes *notes, pd_err *err)
{
	struct scan s = {.lim = lim ? lim : &WS_LIMITS_DEFAULT, .ops = ops, .notes = notes, .err = err};
	int r = ws_walk(rootfd, scan_visit, &s, err);
	if (r < 0) {
		ws_manifest_free(&s.m);
		return r;
	}
	ws_manifest_sort(&s.m);
	*ret = s.m;
	return 0;
}

static int hash_emit(void *ud, struct ws_entry *e, int fd, const struct stat *st, pd_err *err)
{
	if (e->type != WS_FILE)
		return 0;
	int r = ws_hash_fd(fd, UINT64_MAX, e->sha256, &e->size);
	return r < 0 ? ws_err_path(err, r, "cannot read", e->path) : 0;
}

int ws_manifest_from_dir(int rootfd, const struct ws_limits *lim, struct ws_manifest *ret,
			 struct ws_notes *notes, pd_err *err)
{
	struct ws_scan_ops ops = {.emit = hash_emit};
	return ws_scan(rootfd, lim, &ops, ret, notes, err);
}
