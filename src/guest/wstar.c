/* wstar.c — paddock-init's tar built-in: the box's end of every tar stream paddock sends or
 * takes (copy-in, `paddock diff`/`apply`'s fetch, `paddock cp`, a workspace saved on stop),
 * so none of them depends on the image having a tar, or GNU tar's options (busybox, distroless
 * and scratch images have neither).
 *
 *     paddock-init:tar -c DIR [NAME...]   NAMEs (default ".") beneath DIR, each with its tree
 *     paddock-init:tar -c DIR --list      the NUL-separated names on stdin, each alone
 *     paddock-init:tar -x DIR [--mkdir]   the archive on stdin, extracted beneath DIR
 *
 * -c writes ustar/pax (tarfmt.c) to stdout: files, directories (named with a trailing slash,
 * as GNU tar does), symlinks, FIFOs and device nodes as such; sockets are left out; a file
 * with several links is sent whole each time. -x keeps permission bits and mtimes, takes no
 * owner from the archive (everything is the caller's), leaves a directory that already
 * exists as it is, replaces anything else in an entry's way, and refuses ".." components
 * and device nodes. Exit status as GNU tar's: 0; 1 when a file changed while it was read in a
 * whole-tree -c (the stream is still whole), or with --list when an entry could not be read
 * for want of permission (left out; the host refuses it); 2 on any other failure — with
 * --list a file that changed while it was read is one (stderr says which entry).
 *
 * Runs as an exec session with that session's credentials (after child_privileges), on the
 * box's own file system only: nothing here can reach the host, whose side parses what -c
 * writes as hostile input (libarchive, src/workspace/ws_tar.c). -x resolves every entry
 * beneath DIR one component at a time without following a symlink, so a link the box
 * planted cannot redirect a write elsewhere in the box (paddock cp into a running box). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/param.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "guest/wstar.h"
#include "proto/tarfmt.h"
#include "util/fdio.h"

/* Reads come in big chunks; writes go out in small ones: stdout is a pipe, and writes far
 * past its 64 KiB made `-c | cat` 2.2x slower than GNU tar's 10 KiB records here (16 KiB:
 * the same as tar), while reads of any size cost the same. */
#define IO_CHUNK (256u * 1024)
#define OUT_CHUNK (16u * 1024)
#define LIST_MAX (256u * 1024 * 1024)
#define CREATE_MAX_DEPTH 256

static int usage(void)
{
	dprintf(STDERR_FILENO, "usage: %s -c DIR [NAME...|--list] | -x DIR [--mkdir]\n", WSTAR_BUILTIN);
	return 2;
}

static void warn(const char *path, const char *what, int e)
{
	dprintf(STDERR_FILENO, "paddock-init tar: %s: %s%s%s\n", path, what, e ? ": " : "", e ? strerror(e) : "");
}

/* --- -c ----------------------------------------------------------------------------------- */

struct out {
	uint8_t *buf; /* OUT_CHUNK */
	size_t len;
	int err;      /* the first write error: everything after it is dropped */
	int status;
	bool listed;  /* --list (the host's fetch) */
};

/* Something about path failed with errno e: status 2, but in --list mode 1 for an entry this
 * session may not read — left out, the rest still sent: the host's fetch refuses what is
 * missing (never takes it for deleted). A whole tree (a workspace saved on stop, cp) must be
 * whole: there it is 2, and a stop keeps the box running rather than lose the entry. */
static void failed(struct out *o, const char *path, const char *what, int e)
{
	bool denied = o->listed && (e == EACCES || e == EPERM);
	warn(path, denied ? "not readable here: left out" : what, denied ? 0 : e);
	o->status = MAX(o->status, denied ? 1 : 2);
}

static void out_flush(struct out *o)
{
	if (o->len && !o->err)
		o->err = fd_write_all(STDOUT_FILENO, o->buf, o->len);
	o->len = 0;
}

static void out_put(struct out *o, const void *p, size_t n)
{
	while (n) {
		size_t k = MIN(n, OUT_CHUNK - o->len);
		memcpy(o->buf + o->len, p, k);
		o->len += k, p = (const uint8_t *)p + k, n -= k;
		if (o->len == OUT_CHUNK)
			out_flush(o);
	}
}

static void out_zeros(struct out *o, size_t n)
{
	static const uint8_t z[TARFMT_BLOCK];
	while (n) {
		size_t k = MIN(n, sizeof(z));
		out_put(o, z, k);
		n -= k;
	}
}

static bool put_header(struct out *o, struct tarfmt_entry *e)
{
	uint8_t hdr[TARFMT_HDR_MAX];
	size_t n = tarfmt_encode(hdr, e);
	if (n == 0) {
		warn(e->path, "cannot be archived (name too long?)", 0);
		o->status = 2;
		return false;
	}
	out_put(o, hdr, n);
	return true;
}

/* A file that changed while it was read: its entry may be torn. For the host's fetch that
 * fails the stream (the box was paused: something is wrong, and a torn file must never be
 * applied); a whole-tree save of a running box takes it, as GNU tar does (status 1). */
static void changed(struct out *o, const char *path, const char *how)
{
	warn(path, how, 0);
	o->status = MAX(o->status, o->listed ? 2 : 1);
}

static bool same_times(const struct stat *a, const struct stat *b)
{
	return a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec && a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* A file's content: exactly e->size bytes, zeros for what it lost while it was read; before
 * is its fstat from before the read. */
static void put_content(struct out *o, int fd, const struct tarfmt_entry *e, const struct stat *before)
{
	uint64_t left = e->size;
	while (left) {
		if (o->len == OUT_CHUNK)
			out_flush(o);
		size_t want = (size_t)MIN(left, (uint64_t)(OUT_CHUNK - o->len));
		ssize_t n = fd_read(fd, o->buf + o->len, want);
		if (n <= 0) {
			if (n < 0)
				warn(e->path, "read failed", (int)-n), o->status = 2;
			else
				changed(o, e->path, "file shrank while it was read");
			out_zeros(o, (size_t)left);
			out_zeros(o, tarfmt_pad(e->size));
			return;
		}
		o->len += (size_t)n, left -= (uint64_t)n;
	}
	out_zeros(o, tarfmt_pad(e->size));
	struct stat after;
	if (fstat(fd, &after) < 0 || !same_times(before, &after))
		changed(o, e->path, "file changed while it was read");
}

static void add(struct out *o, int dirfd, const char *name, char *path, size_t plen, bool recurse, int depth);

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The entries of directory fd, sorted (the stream is the same for the same tree). */
static void add_children(struct out *o, int fd, char *path, size_t plen, int depth)
{
	_cleanup_closedir_ DIR *d = fdopendir(fd);
	if (!d) {
		failed(o, path, "cannot read the directory", errno);
		close(fd);
		return;
	}
	_cleanup_strv_ char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n + 1 >= cap)
			names = xrealloc(names, (cap = cap ? 2 * cap : 32) * sizeof(*names));
		names[n++] = xstrdup(de->d_name);
		names[n] = NULL;
	}
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	/* path ends in '/' (a directory's name); the child's name replaces what follows it */
	for (size_t i = 0; i < n; i++)
		add(o, dirfd(d), names[i], path, plen, true, depth + 1);
}

static void fill_entry(struct tarfmt_entry *e, const struct stat *st)
{
	e->mode = st->st_mode & 07777;
	e->uid = st->st_uid, e->gid = st->st_gid;
	e->mtime_s = st->st_mtim.tv_sec, e->mtime_ns = (uint32_t)st->st_mtim.tv_nsec;
	e->size = 0;
	e->link[0] = 0;
}

/* Archives name (in dirfd) as path[0..plen) + name; path has room for TARFMT_MAX_PATH + 2. */
static void add(struct out *o, int dirfd, const char *name, char *path, size_t plen, bool recurse, int depth)
{
	size_t nl = strlen(name);
	if (plen + nl + 1 > TARFMT_MAX_PATH) {
		path[plen] = 0;
		dprintf(STDERR_FILENO, "paddock-init tar: %s%s: name too long, left out\n", path, name);
		o->status = 2;
		return;
	}
	memcpy(path + plen, name, nl + 1);
	_cleanup_free_ struct tarfmt_entry *e = xcalloc(1, sizeof(*e));
	struct stat st;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		failed(o, path, "cannot stat", errno);
		return;
	}
	fill_entry(e, &st);
	memcpy(e->path, path, plen + nl + 1);
	if (S_ISREG(st.st_mode)) {
		_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			failed(o, path, "cannot open", fd < 0 ? errno : EINVAL);
			return;
		}
		fill_entry(e, &st);
		e->type = TARFMT_FILE;
		e->size = (uint64_t)st.st_size;
		if (put_header(o, e))
			put_content(o, fd, e, &st);
	} else if (S_ISDIR(st.st_mode)) {
		e->type = TARFMT_DIR;
		if (plen + nl + 1 < TARFMT_MAX_PATH) /* "dir/", as GNU tar names it */
			strcat(e->path, "/");
		if (!put_header(o, e) || !recurse)
			return;
		if (depth >= CREATE_MAX_DEPTH) {
			warn(path, "too deep, not descended into", 0);
			o->status = 2;
			return;
		}
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0) {
			failed(o, path, "cannot open the directory", errno);
			return;
		}
		size_t cl = strlen(e->path);
		memcpy(path, e->path, cl + 1);
		add_children(o, fd, path, cl, depth);
	} else if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlinkat(dirfd, name, e->link, TARFMT_MAX_PATH);
		if (n <= 0 || n >= (ssize_t)TARFMT_MAX_PATH) {
			warn(path, "cannot read the link", n < 0 ? errno : ENAMETOOLONG);
			o->status = 2;
			return;
		}
		e->link[n] = 0;
		e->type = TARFMT_SYMLINK;
		put_header(o, e);
	} else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		e->type = S_ISFIFO(st.st_mode) ? TARFMT_FIFO : S_ISCHR(st.st_mode) ? TARFMT_CHR : TARFMT_BLK;
		e->devmajor = major(st.st_rdev), e->devminor = minor(st.st_rdev);
		put_header(o, e);
	} else {
		warn(path, "socket ignored", 0);
	}
}

/* The NUL-separated names on stdin (the host's list of entries to fetch). */
static char **read_list(void)
{
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	if (read_fd_all(STDIN_FILENO, LIST_MAX, &buf, &len) < 0)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += buf[i] == 0;
	char **v = xcalloc(n + 2, sizeof(*v));
	n = 0;
	for (size_t i = 0; i < len;) {
		size_t l = strnlen(buf + i, len - i);
		if (l)
			v[n++] = xstrndup(buf + i, l);
		i += l + 1;
	}
	return v;
}

static int create(const char *dir, char **names, bool list)
{
	_cleanup_close_ int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		warn(dir, "cannot open", errno);
		return 2;
	}
	_cleanup_strv_ char **listed = list ? read_list() : NULL;
	if (list && !listed) {
		warn("stdin", "cannot read the list of names", errno);
		return 2;
	}
	char *dot[] = {".", NULL};
	char **v = list ? listed : names[0] ? names : dot;
	struct out o = {.buf = xmalloc(OUT_CHUNK), .listed = list};
	_cleanup_free_ char *path = xmalloc(TARFMT_MAX_PATH + 2);
	for (; *v; v++)
		add(&o, root, *v, path, 0, !list, 0);
	out_zeros(&o, 2 * TARFMT_BLOCK); /* the end of the archive */
	out_flush(&o);
	free(o.buf);
	if (o.err) {
		warn("stdout", "cannot write the archive", -o.err);
		return 2;
	}
	return o.status;
}

/* --- -x ----------------------------------------------------------------------------------- */

struct in {
	int fd;
	uint8_t *buf; /* IO_CHUNK */
	size_t off, len;
};

/* tarfmt's read function over stdin: whole requests, fewer bytes only at its end */
static ssize_t in_read(void *ud, void *dst, size_t want)
{
	struct in *in = ud;
	size_t got = 0;
	while (got < want) {
		if (in->off == in->len) {
			/* big content goes straight into place; headers come out of the buffer */
			bool direct = want - got >= IO_CHUNK;
			ssize_t n = direct ? fd_read(in->fd, (uint8_t *)dst + got, want - got) : fd_read(in->fd, in->buf, IO_CHUNK);
			if (n <= 0)
				return n < 0 ? n : (ssize_t)got;
			if (direct) {
				got += (size_t)n;
				continue;
			}
			in->off = 0, in->len = (size_t)n;
		}
		size_t k = MIN(want - got, in->len - in->off);
		memcpy((uint8_t *)dst + got, in->buf + in->off, k);
		in->off += k, got += k;
	}
	return (ssize_t)got;
}

struct made_dir {
	char *path;
	uint32_t mode;
	struct timespec mtime;
};

struct x {
	int root;
	int status;
	struct tarfmt_reader rd;
	struct in in;
	char *cache_path; /* the parent directory last opened, and its fd */
	int cache_fd;
	int broken;       /* the stream failed inside a file's content: nothing more can be read */
	struct made_dir *dirs; /* made by this run, to get their modes and times at the end */
	size_t n_dirs, cap_dirs;
	uint8_t *buf;
};

static void cache_drop(struct x *x)
{
	free(TAKE_PTR(x->cache_path));
	if (x->cache_fd >= 0)
		close(TAKE_FD(x->cache_fd));
}

/* Opens the directory rel ("" is the root) beneath x->root one component at a time, never
 * following a symlink; with mk, missing ones are made (0777 less the umask, as tar does).
 * An O_PATH fd, or -errno. */
static int open_beneath(int root, const char *rel, bool mk)
{
	int fd = fcntl(root, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	_cleanup_free_ char *copy = xstrdup(rel);
	char *save = NULL;
	for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
		int n = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (n < 0 && errno == ENOENT && mk && (mkdirat(fd, c, 0777) == 0 || errno == EEXIST))
			n = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int e = errno;
		close(fd);
		if (n < 0)
			return -e;
		fd = n;
	}
	return fd;
}

/* The parent of path (cleaned, not ""), borrowed, and the last component in *ret_name. */
static int parent_of(struct x *x, char *path, const char **ret_name)
{
	char *slash = strrchr(path, '/');
	const char *parent = slash ? path : "";
	if (slash)
		*slash = 0;
	*ret_name = slash ? slash + 1 : path;
	if (!x->cache_path || !streq(x->cache_path, parent)) {
		cache_drop(x);
		int fd = open_beneath(x->root, parent, true);
		if (fd >= 0)
			x->cache_fd = fd, x->cache_path = xstrdup(parent);
		if (slash)
			*slash = '/';
		return fd;
	}
	if (slash)
		*slash = '/';
	return x->cache_fd;
}

/* Removes what is in an entry's way (an empty directory too); the cached parent may have
 * been it or beneath it. */
static int clear(struct x *x, int pfd, const char *name)
{
	int r = unlinkat(pfd, name, 0) == 0 || (errno == EISDIR && unlinkat(pfd, name, AT_REMOVEDIR) == 0) ? 0 : -errno;
	cache_drop(x); /* pfd with it */
	return r;
}

#define HOLE_BLOCK 4096u

static bool zero_block(const uint8_t *p, size_t n) { return p[0] == 0 && memcmp(p, p + 1, n - 1) == 0; }

/* Writes buf at the file's offset, leaving whole zero blocks as holes (the stream carries a
 * sparse file's holes as zeros: a 1 GiB `truncate -s` must come back as 1 GiB of hole, or a
 * saved workspace no longer fits the box it came from). */
static int write_sparse(int fd, const uint8_t *buf, size_t len)
{
	size_t off = 0;
	while (off < len) {
		size_t n = MIN((size_t)HOLE_BLOCK, len - off);
		bool hole = zero_block(buf + off, n);
		size_t run = n;
		while (off + run < len) {
			size_t k = MIN((size_t)HOLE_BLOCK, len - off - run);
			if (zero_block(buf + off + run, k) != hole)
				break;
			run += k;
		}
		int r = hole ? (lseek(fd, (off_t)run, SEEK_CUR) < 0 ? -errno : 0) : fd_write_all(fd, buf + off, run);
		if (r < 0)
			return r;
		off += run;
	}
	return 0;
}

static int write_file(struct x *x, int pfd, const char *name, const struct tarfmt_entry *e)
{
	_cleanup_close_ int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int werr = 0;
	for (;;) {
		ssize_t n = tarfmt_read_data(&x->rd, x->buf, IO_CHUNK);
		if (n < 0)
			return x->broken = (int)n;
		if (n == 0)
			break;
		if (!werr)
			werr = write_sparse(fd, x->buf, (size_t)n);
	}
	/* a hole at the end: the size comes from here */
	if (!werr && ftruncate(fd, (off_t)e->size) < 0)
		werr = -errno;
	if (werr)
		return werr;
	struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, {e->mtime_s, e->mtime_ns}};
	if (fchmod(fd, e->mode) < 0 || futimens(fd, t) < 0)
		return -errno;
	return 0;
}

static int make(struct x *x, int pfd, const char *name, const struct tarfmt_entry *e, char *path)
{
	struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, {e->mtime_s, e->mtime_ns}};
	switch (e->type) {
	case TARFMT_FILE:
		return write_file(x, pfd, name, e);
	case TARFMT_DIR:
		if (mkdirat(pfd, name, 0700) < 0)
			return -errno;
		if (x->n_dirs == x->cap_dirs)
			x->dirs = xrealloc(x->dirs, (x->cap_dirs = x->cap_dirs ? 2 * x->cap_dirs : 64) * sizeof(*x->dirs));
		x->dirs[x->n_dirs++] = (struct made_dir){xstrdup(path), e->mode, t[1]};
		return 0;
	case TARFMT_SYMLINK:
		if (symlinkat(e->link, pfd, name) < 0)
			return -errno;
		return utimensat(pfd, name, t, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	case TARFMT_HARDLINK: {
		_cleanup_free_ char *target = xstrdup(e->link);
		if (!tarfmt_clean_path(target) || !target[0])
			return -EINVAL;
		char *slash = strrchr(target, '/');
		if (slash)
			*slash = 0;
		_cleanup_close_ int tfd = open_beneath(x->root, slash ? target : "", false);
		if (tfd < 0)
			return tfd;
		return linkat(tfd, slash ? slash + 1 : target, pfd, name, 0) < 0 ? -errno : 0;
	}
	case TARFMT_FIFO:
		if (mkfifoat(pfd, name, e->mode) < 0 || fchmodat(pfd, name, e->mode, 0) < 0)
			return -errno;
		return utimensat(pfd, name, t, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	default: /* device nodes: never made, whatever the caller may do */
		return -EPERM;
	}
}

/* One entry; <0 only when the stream cannot go on. */
static int extract_one(struct x *x, struct tarfmt_entry *e)
{
	char shown[TARFMT_MAX_PATH + 1];
	memcpy(shown, e->path, sizeof(shown));
	if (!tarfmt_clean_path(e->path)) {
		warn(shown, "a \"..\" component: left out", 0);
		x->status = 2;
		return 0;
	}
	if (!e->path[0]) /* the root: it exists, and an existing directory is left as it is */
		return 0;
	const char *name;
	int pfd = parent_of(x, e->path, &name);
	int r = pfd < 0 ? pfd : make(x, pfd, name, e, e->path);
	if (r == -EEXIST) {
		struct stat st;
		if (e->type == TARFMT_DIR && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			return 0;
		r = clear(x, pfd, name);
		/* the parent again: clear() may have closed it */
		if (r == 0 && (pfd = parent_of(x, e->path, &name)) < 0)
			r = pfd;
		if (r == 0)
			r = make(x, pfd, name, e, e->path);
	}
	if (x->broken)
		return x->broken;
	if (r < 0) {
		warn(shown, e->type == TARFMT_CHR || e->type == TARFMT_BLK ? "device node refused" : "cannot create", r == -EPERM ? 0 : -r);
		x->status = 2;
	}
	return 0;
}

/* The modes and times of the directories this run made, deepest (latest) first: their
 * entries are in, and a read-only one no longer stops them. */
static void fix_dirs(struct x *x)
{
	while (x->n_dirs) {
		struct made_dir *d = &x->dirs[--x->n_dirs];
		_cleanup_close_ int p = open_beneath(x->root, d->path, false);
		_cleanup_close_ int fd = p < 0 ? -1 : openat(p, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct timespec t[2] = {{.tv_nsec = UTIME_OMIT}, d->mtime};
		if (fd < 0 || fchmod(fd, d->mode) < 0 || futimens(fd, t) < 0) {
			warn(d->path, "cannot set the directory's mode and time", errno);
			x->status = 2;
		}
		free(d->path);
	}
	free(x->dirs);
}

static int extract(const char *dir, bool mk)
{
	if (mk && mkdir_p(dir, 0755) < 0) {
		warn(dir, "cannot create", errno);
		return 2;
	}
	struct x x = {.cache_fd = -1, .in = {.fd = STDIN_FILENO, .buf = xmalloc(IO_CHUNK)}, .buf = xmalloc(IO_CHUNK)};
	x.root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (x.root < 0) {
		warn(dir, "cannot open", errno);
		x.status = 2;
	}
	tarfmt_reader_init(&x.rd, in_read, &x.in);
	_cleanup_free_ struct tarfmt_entry *e = xmalloc(sizeof(*e));
	int r = 0;
	while (x.root >= 0 && (r = tarfmt_next(&x.rd, e)) > 0)
		if ((r = extract_one(&x, e)) < 0)
			break;
	if (r < 0) {
		warn("stdin", r == -EBADMSG ? "not a tar stream paddock can read, or cut short" : "cannot read", r == -EBADMSG ? 0 : -r);
		x.status = 2;
	}
	fix_dirs(&x);
	cache_drop(&x);
	/* what was written is on the box's disk before the stream counts as done: a vm box's
	 * disk outlives its QEMU, and its supervisor records the copy-in as complete after this
	 * (tmpfs: nothing to write back) */
	if (x.root >= 0 && x.status != 2 && syncfs(x.root) < 0) {
		warn(dir, "cannot sync", errno);
		x.status = 2;
	}
	if (x.root >= 0)
		close(x.root);
	free(x.in.buf);
	free(x.buf);
	return x.status;
}

int guest_wstar_main(char *const *argv)
{
	if (!argv[1] || !argv[2])
		return usage();
	const char *dir = argv[2];
	if (streq(argv[1], "-c")) {
		bool list = argv[3] && streq(argv[3], "--list");
		if (list && argv[4])
			return usage();
		return create(dir, (char **)argv + 3, list);
	}
	if (streq(argv[1], "-x")) {
		bool mk = argv[3] && streq(argv[3], "--mkdir");
		if (argv[3] && (!mk || argv[4]))
			return usage();
		return extract(dir, mk);
	}
	return usage();
}
