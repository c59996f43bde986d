/* ws_copyin.c — the project's tar stream into a box, and its manifest (see ws_copyin.h). */
#include <fcntl.h>
#include <sys/stat.h>
#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "util/fdio.h"
#include "ws_copyin.h"
#include "ws_ignore.h"
#include "ws_scan.h"

#define GITCONFIG_MAX (1u << 20)
#define COPYIN_BLOCK (256 * 1024)

/* a directory made by the direct copy: its mode and mtime are set once its entries exist */
struct made_dir {
	char *path;
	mode_t mode;
	struct timespec mtime;
};

struct copyin {
	struct archive *a;
	struct ws_ignore *ig;
	struct ws_notes *notes;
	char *buf;
	int out_fd;      /* the tar stream, or -1 */
	int dst_fd;      /* the direct copy's destination directory, or -1 */
	int file_fd;     /* the direct copy: the file being written */
	struct made_dir *dirs;
	size_t n_dirs, cap_dirs;
	char *pdir;               /* the direct copy's cached parent directory, and its fd */
	int pdir_fd;
	const struct ws_copyin_opts *o;
	uint64_t written;
	bool as_owner;            /* creations under the destination owner's ids (setfsuid) */
	uid_t owner_uid, my_uid;
	gid_t owner_gid, my_gid;
};

static int tar_error(struct copyin *c, pd_err *err, const char *path)
{
	const char *s = archive_error_string(c->a);
	int e = archive_errno(c->a);
	_cleanup_free_ char *esc = ws_escape_name(path), *msg = ws_escape_name(s ? s : "unknown error");
	return pd_error_msg(err, e > 0 ? e : EIO, "cannot write %s to the tar stream: %s", esc, msg);
}

static enum ws_reason ci_exclude(void *ud, const char *path, bool is_dir)
{
	struct copyin *c = ud;
	return ws_ignore_match_one(c->ig, path, is_dir);
}

static int put_data(struct copyin *c, const void *buf, size_t n, ws_hasher *h)
{
	ws_hasher_update(h, buf, n);
	if (c->dst_fd >= 0) {
		int r = fd_write_all(c->file_fd, buf, n);
		c->written += n;
		if (r == 0 && c->o && c->o->progress)
			c->o->progress(c->o->progress_ud, c->written);
		return r;
	}
	return archive_write_data(c->a, buf, n) == (la_ssize_t)n ? 0 : -EIO;
}

static int sink_error(struct copyin *c, pd_err *err, const char *path, int r)
{
	if (c->dst_fd >= 0)
		return ws_err_path(err, -r, "cannot copy into the box:", path);
	return tar_error(c, err, path);
}

/* Streams exactly e->size bytes; a file that shrank while being read is padded with zeros
 * (hashed as sent) and noted, one that grew is cut at the size in the header. */
static int put_file(struct copyin *c, struct ws_entry *e, int fd, pd_err *err)
{
	ws_hasher *h = ws_hasher_new();
	uint64_t left = e->size;
	bool shrank = false;
	int r = 0;
	while (left > 0 && r == 0) {
		size_t want = left < WS_IO_CHUNK ? (size_t)left : WS_IO_CHUNK;
		ssize_t n = read(fd, c->buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = ws_err_path(err, errno, "cannot read", e->path);
			break;
		}
		if (n == 0) { /* shrank: pad */
			if (!shrank)
				ws_notes_add(c->notes, WS_R_CHANGED_WHILE_READ, e->path, NULL);
			shrank = true;
			memset(c->buf, 0, want);
			n = (ssize_t)want;
		}
		int w = put_data(c, c->buf, (size_t)n, h);
		r = w < 0 ? sink_error(c, err, e->path, w) : 0;
		left -= (uint64_t)n;
	}
	ws_hasher_final(h, e->sha256);
	return r;
}

static bool is_git_config(const struct ws_entry *e)
{
	return ws_path_exec_class(e->path, false) == WS_EXEC_GIT_CONFIG;
}

/* Reads a git config whole and filters it; too large or unreadable is left out. */
static char *filtered_config(struct copyin *c, struct ws_entry *e, int fd, size_t *ret_len)
{
	_cleanup_free_ char *raw = NULL;
	size_t len = 0;
	bool changed = false;
	if (read_fd_all(fd, GITCONFIG_MAX, &raw, &len) < 0) {
		ws_notes_add(c->notes, WS_R_CREDENTIALS_REMOVED, e->path, "too large to filter: left out");
		return NULL;
	}
	char *out = ws_gitconfig_filter(raw, len, ret_len, &changed);
	if (changed)
		ws_notes_add(c->notes, WS_R_CREDENTIALS_REMOVED, e->path, NULL);
	return out;
}

static int header(struct copyin *c, struct archive_entry *ae, const struct ws_entry *e,
		  const struct stat *st, pd_err *err)
{
	static const mode_t types[WS_TYPE_MAX] = {[WS_FILE] = AE_IFREG, [WS_DIR] = AE_IFDIR, [WS_SYMLINK] = AE_IFLNK};
	archive_entry_copy_pathname(ae, e->path);
	archive_entry_set_filetype(ae, types[e->type]);
	archive_entry_set_perm(ae, e->mode & 0777);
	archive_entry_set_mtime(ae, st->st_mtim.tv_sec, st->st_mtim.tv_nsec);
	archive_entry_set_uid(ae, 0);
	archive_entry_set_gid(ae, 0);
	if (e->type == WS_SYMLINK)
		archive_entry_copy_symlink(ae, e->target);
	if (e->type == WS_FILE)
		archive_entry_set_size(ae, (la_int64_t)e->size);
	return archive_write_header(c->a, ae) == ARCHIVE_OK ? 0 : tar_error(c, err, e->path);
}

static struct archive *open_writer(int out_fd, pd_err *err);

/* --- the direct copy: entries written beneath a directory of the box ----------------------
 * Every name is resolved beneath dst_fd with no symlink followed (ws_open_parent: openat2
 * RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS, or a component walk with O_NOFOLLOW) and created
 * exclusively, so nothing already in the destination — an image's own /workspace content —
 * can redirect a write. */

/* The box's files belong to the box's user: its /workspace's owner as this host sees it. A
 * root caller's boxes map no host id 0 (their ids are shifted), so what root creates there
 * must carry the owner's ids (else EOVERFLOW). For the copy, this thread's filesystem ids
 * become the owner's (setfsuid/setfsgid act on the calling thread only: the rest of the
 * process keeps its identity), and the file-access capabilities the kernel drops with fsuid 0
 * are raised again from the permitted set, so the project is still read with root's access.
 * Back to the caller's ids at the end (which restores the capabilities). An ordinary caller
 * owns /workspace already and switches nothing. Once per copy: a switch allocates new
 * credentials, four per entry cost a tenth of a 50,000-file copy. */
static int owner_begin(struct copyin *c)
{
	if (!c->as_owner)
		return 0;
	syscall(SYS_setfsgid, c->owner_gid);
	syscall(SYS_setfsuid, c->owner_uid);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	const uint32_t fs = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER);
	d[0].effective |= d[0].permitted & fs;
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

static void owner_end(struct copyin *c)
{
	if (!c->as_owner)
		return;
	syscall(SYS_setfsuid, c->my_uid);
	syscall(SYS_setfsgid, c->my_gid);
}

/* Something the destination already had where an entry goes (an image's own /workspace
 * content): removed if it is not a directory, as tar -x would; the entry is then created
 * exclusively. A directory stays (EISDIR for a file entry). */
static int replace(int pfd, const char *name)
{
	struct stat st;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (S_ISDIR(st.st_mode)) {
		errno = EISDIR;
		return -1;
	}
	return unlinkat(pfd, name, 0);
}

/* The parent directory of e beneath the destination (borrowed: cached for the next entry,
 * which in a depth-first walk is most often a sibling), and e's last component. */
static int direct_open(struct copyin *c, const struct ws_entry *e, int *ret_pfd, const char **ret_name, pd_err *err)
{
	const char *slash = strrchr(e->path, '/');
	size_t plen = slash ? (size_t)(slash - e->path) : 0;
	*ret_name = slash ? slash + 1 : e->path;
	if (c->pdir_fd >= 0 && strlen(c->pdir) == plen && memcmp(c->pdir, e->path, plen) == 0) {
		*ret_pfd = c->pdir_fd;
		return 0;
	}
	if (c->pdir_fd >= 0)
		close(c->pdir_fd);
	free(c->pdir);
	c->pdir = xstrndup(e->path, plen);
	c->pdir_fd = -1;
	int r = ws_open_beneath(c->dst_fd, c->pdir, O_RDONLY | O_DIRECTORY, &c->pdir_fd);
	if (r < 0)
		return ws_err_path(err, -r, "cannot open the parent in the box of", e->path);
	*ret_pfd = c->pdir_fd;
	return 0;
}

static int direct_header(struct copyin *c, struct ws_entry *e, const struct stat *st, pd_err *err)
{
	int pfd = -1;
	const char *name;
	int r = direct_open(c, e, &pfd, &name, err);
	if (r < 0)
		return r;
	const struct timespec times[2] = {st->st_atim, st->st_mtim};
	switch (e->type) {
	case WS_DIR: {
		struct stat have;
		/* 0700 while its entries are made (a 0555 directory would refuse them) */
		r = mkdirat(pfd, name, 0700) < 0 ? -errno : 0;
		if (r == -EEXIST && fstatat(pfd, name, &have, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(have.st_mode))
			r = replace(pfd, name) < 0 ? -errno : mkdirat(pfd, name, 0700) < 0 ? -errno : 0;
		else if (r == -EEXIST)
			r = 0; /* a directory already (an image's own /workspace content) */
		if (r < 0)
			return ws_err_path(err, -r, "cannot create in the box:", e->path);
		if (c->n_dirs == c->cap_dirs) {
			c->cap_dirs = c->cap_dirs ? 2 * c->cap_dirs : 64;
			c->dirs = xrealloc(c->dirs, c->cap_dirs * sizeof(*c->dirs));
		}
		c->dirs[c->n_dirs++] = (struct made_dir){xstrdup(e->path), e->mode & 0777, st->st_mtim};
		return 0;
	}
	case WS_SYMLINK:
		r = symlinkat(e->target, pfd, name) < 0 ? -errno : 0;
		if (r == -EEXIST)
			r = replace(pfd, name) < 0 ? -errno : symlinkat(e->target, pfd, name) < 0 ? -errno : 0;
		if (r < 0)
			return ws_err_path(err, -r, "cannot create in the box:", e->path);
		(void)utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW);
		return 0;
	case WS_FILE:
		c->file_fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (c->file_fd < 0 && errno == EEXIST && replace(pfd, name) == 0)
			c->file_fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		r = c->file_fd < 0 ? -errno : 0;
		return r < 0 ? ws_err_path(err, -r, "cannot create in the box:", e->path) : 0;
	default:
		return 0;
	}
}

/* after the content: the project's permission bits (not the umask's) and mtime */
static int direct_finish_file(struct copyin *c, const struct ws_entry *e, const struct stat *st, pd_err *err)
{
	const struct timespec times[2] = {st->st_atim, st->st_mtim};
	int r = 0;
	if (fchmod(c->file_fd, e->mode & 0777) < 0 || futimens(c->file_fd, times) < 0)
		r = ws_err_path(err, errno, "cannot set the mode of", e->path);
	close(c->file_fd);
	c->file_fd = -1;
	return r;
}

/* Directories last, deepest first: their modes and mtimes (adding entries changed them). */
static int direct_finish_dirs(struct copyin *c, pd_err *err)
{
	int r = 0;
	for (size_t i = c->n_dirs; i-- > 0;) {
		struct made_dir *d = &c->dirs[i];
		_cleanup_close_ int fd = -1;
		int q = r == 0 ? ws_open_beneath(c->dst_fd, d->path, O_RDONLY | O_DIRECTORY, &fd) : 0;
		const struct timespec times[2] = {d->mtime, d->mtime};
		if (r == 0 && (q < 0 || fchmod(fd, d->mode) < 0 || futimens(fd, times) < 0))
			r = ws_err_path(err, q < 0 ? -q : errno, "cannot set the mode of", d->path);
		free(d->path);
	}
	free(c->dirs);
	c->dirs = NULL;
	c->n_dirs = c->cap_dirs = 0;
	return r;
}

static int ci_emit(void *ud, struct ws_entry *e, int fd, const struct stat *st, pd_err *err)
{
	struct copyin *c = ud;
	/* the writer (and with it libarchive, loaded on first use) only once there is an entry */
	if (c->dst_fd < 0 && !c->a && !(c->a = open_writer(c->out_fd, err)))
		return -EIO;
	_cleanup_free_ char *cfg = NULL;
	size_t cfglen = 0;
	if (e->type == WS_FILE && is_git_config(e) && !(cfg = filtered_config(c, e, fd, &cfglen))) {
		e->type = WS_TYPE_INVALID; /* left out */
		return 0;
	}
	if (e->type == WS_FILE)
		e->size = cfg ? cfglen : (uint64_t)st->st_size;
	int r;
	if (c->dst_fd >= 0) {
		r = direct_header(c, e, st, err);
	} else {
		struct archive_entry *ae = archive_entry_new();
		r = header(c, ae, e, st, err);
		archive_entry_free(ae);
	}
	if (r < 0 || e->type != WS_FILE)
		return r;
	if (!cfg) {
		r = put_file(c, e, fd, err);
	} else {
		ws_hasher *h = ws_hasher_new();
		int w = put_data(c, cfg, cfglen, h);
		ws_hasher_final(h, e->sha256);
		r = w < 0 ? sink_error(c, err, e->path, w) : 0;
	}
	if (c->dst_fd >= 0) {
		int q = direct_finish_file(c, e, st, err);
		if (r == 0)
			r = q;
	}
	return r;
}

static struct archive *open_writer(int out_fd, pd_err *err)
{
	struct archive *a = archive_write_new();
	if (!a)
		abort();
	/* pax keeps long names and big sizes; BINARY header charset: names travel as raw bytes */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") < ARCHIVE_OK ||
	    /* big blocks: one write (and one wake-up of the reader) per 256 KiB, not per 10 KiB */
	    archive_write_set_bytes_per_block(a, COPYIN_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(a, out_fd) != ARCHIVE_OK) {
		pd_error_msg(err, EIO, "cannot start the tar stream: %s", archive_error_string(a));
		archive_write_free(a);
		return NULL;
	}
	return a;
}

/* The walk both sinks share: the ignore rules, then every entry through ci_emit. */
static int walk(struct copyin *c, int rootfd, const struct ws_copyin_opts *o, struct ws_manifest *ret_manifest,
		struct ws_notes *notes, pd_err *err)
{
	int r = ws_ignore_load(rootfd, !(o && o->no_default_excludes), &c->ig, err);
	if (r < 0)
		return r;
	c->buf = xmalloc(WS_IO_CHUNK);
	struct ws_scan_ops ops = {.exclude = ci_exclude, .emit = ci_emit, .ud = c};
	return ws_scan(rootfd, o ? o->limits : NULL, &ops, ret_manifest, notes, err);
}

int ws_copyin_to_dir(int rootfd, int dst_fd, const struct ws_copyin_opts *o,
		     struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err)
{
	struct copyin c = {.notes = notes, .out_fd = -1, .dst_fd = dst_fd, .file_fd = -1, .o = o, .pdir_fd = -1};
	struct stat dst;
	if (fstat(dst_fd, &dst) < 0)
		return pd_error(err, errno, "cannot inspect the destination");
	c.my_uid = geteuid(), c.my_gid = getegid();
	c.owner_uid = dst.st_uid, c.owner_gid = dst.st_gid;
	c.as_owner = c.owner_uid != c.my_uid || c.owner_gid != c.my_gid;
	int r = owner_begin(&c);
	if (r < 0) {
		owner_end(&c);
		return pd_error(err, r, "cannot take the box user's ids for the copy");
	}
	r = walk(&c, rootfd, o, ret_manifest, notes, err);
	if (c.file_fd >= 0)
		close(c.file_fd);
	if (c.pdir_fd >= 0)
		close(c.pdir_fd);
	free(c.pdir);
	int q = direct_finish_dirs(&c, r == 0 ? err : NULL);
	owner_end(&c);
	if (r == 0 && q < 0) {
		r = q;
		ws_manifest_free(ret_manifest);
	}
	ws_ignore_free(c.ig);
	free(c.buf);
	return r;
}

int ws_copyin(int rootfd, int out_fd, const struct ws_copyin_opts *o,
	      struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err)
{
	struct copyin c = {.notes = notes, .out_fd = out_fd, .dst_fd = -1, .file_fd = -1, .pdir_fd = -1};
	int r = walk(&c, rootfd, o, ret_manifest, notes, err);
	if (!c.a) {
		/* nothing to send: an empty archive is its end marker alone, two zero-filled
		 * 512-byte records (POSIX ustar), what libarchive would have written — without
		 * loading it (a few milliseconds of a box's start for an empty project) */
		static const uint8_t end[1024];
		if (r == 0 && (r = fd_write_all(out_fd, end, sizeof(end))) < 0) {
			pd_error(err, r, "cannot write the tar stream");
			ws_manifest_free(ret_manifest);
		}
	} else if (r < 0) /* no end-of-archive marker: a cut stream must not look complete */
		archive_write_fail(c.a);
	else if (archive_write_close(c.a) != ARCHIVE_OK) {
		r = tar_error(&c, err, "the end of the stream");
		ws_manifest_free(ret_manifest);
	}
	if (c.a)
		archive_write_free(c.a);
	ws_ignore_free(c.ig);
	free(c.buf);
	return r;
}
