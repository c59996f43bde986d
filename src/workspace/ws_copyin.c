/* ws_copyin.c — the project's tar stream into a box, and its manifest (see ws_copyin.h). */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>

#include "util/fdio.h"
#include "ws_copyin.h"
#include "ws_dirwriter.h"
#include "ws_ignore.h"
#include "ws_scan.h"

#define GITCONFIG_MAX (1u << 20)
#define COPYIN_BLOCK (256 * 1024)

struct copyin {
	struct archive *a;
	struct ws_ignore *ig;
	struct ws_notes *notes;
	char *buf;
	int out_fd;      /* the tar stream, or -1 */
	struct ws_dirwriter *dw; /* the direct copy's writing thread, or NULL */
	bool dw_failed;  /* it stopped on an error (described by ws_dirwriter_finish) */
	const struct ws_copyin_opts *o;
	uint64_t read;   /* bytes of the project read so far */
	bool cut;        /* the copy failed: what libarchive still writes (its end) goes nowhere */
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

/* The next want bytes of a file into buf, hashed. A file that shrank while being read is
 * padded with zeros (hashed as sent) and noted; one that grew is cut at the size in the
 * header (the caller asks for no more than e->size in all). */
static int read_chunk(struct copyin *c, const struct ws_entry *e, int fd, char *buf, size_t want,
		      bool *shrank, ws_hasher *h, pd_err *err)
{
	size_t got = 0;
	while (got < want && !*shrank) {
		ssize_t n = read(fd, buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ws_err_path(err, errno, "cannot read", e->path);
		if (n == 0) {
			ws_notes_add(c->notes, WS_R_CHANGED_WHILE_READ, e->path, NULL);
			*shrank = true;
		}
		got += (size_t)n;
	}
	memset(buf + got, 0, want - got);
	ws_hasher_update(h, buf, want);
	c->read += want;
	if (c->o && c->o->progress)
		c->o->progress(c->o->progress_ud, c->read);
	return 0;
}

/* the tar sink: exactly e->size bytes of the file (or of its filtered config) */
static int tar_file(struct copyin *c, struct ws_entry *e, int fd, const char *cfg, pd_err *err)
{
	ws_hasher *h = ws_hasher_new();
	bool shrank = false;
	int r = 0;
	for (uint64_t left = e->size; left > 0 && r == 0;) {
		size_t want = left < WS_IO_CHUNK ? (size_t)left : WS_IO_CHUNK;
		const char *p = cfg ? cfg + (e->size - left) : c->buf;
		if (!cfg)
			r = read_chunk(c, e, fd, c->buf, want, &shrank, h, err);
		else
			ws_hasher_update(h, p, want);
		if (r == 0 && archive_write_data(c->a, p, want) != (la_ssize_t)want)
			r = tar_error(c, err, e->path);
		left -= want;
	}
	ws_hasher_final(h, e->sha256);
	return r;
}

/* the direct sink: the entry, and a file's bytes in chunks of their own, queued for the
 * writing thread (ws_dirwriter) */
#define DIRECT_CHUNK (256u * 1024u)

static int direct_put(struct copyin *c, struct ws_dw_item *it)
{
	int r = ws_dirwriter_put(c->dw, it);
	c->dw_failed |= r < 0;
	return r;
}

/* e's item: its path only on a file's first chunk (the later ones continue it) */
static struct ws_dw_item item_of(const struct ws_entry *e, const struct stat *st, bool first)
{
	return (struct ws_dw_item){.path = first ? xstrdup(e->path) : NULL, .type = e->type, .mode = e->mode & 0777,
				   .atim = st->st_atim, .mtim = st->st_mtim};
}

static int direct_entry(struct copyin *c, struct ws_entry *e, int fd, const struct stat *st, char *cfg, pd_err *err)
{
	struct ws_dw_item it = item_of(e, st, true);
	if (e->type == WS_SYMLINK)
		it.target = xstrdup(e->target);
	if (e->type != WS_FILE)
		return direct_put(c, &it);
	ws_hasher *h = ws_hasher_new();
	if (cfg) {
		ws_hasher_update(h, cfg, e->size);
		ws_hasher_final(h, e->sha256);
		it.data = cfg, it.len = e->size, it.last = true;
		return direct_put(c, &it);
	}
	bool shrank = false;
	int r = 0;
	for (uint64_t left = e->size; r == 0;) {
		size_t want = left < DIRECT_CHUNK ? (size_t)left : DIRECT_CHUNK;
		if (left != e->size)
			it = item_of(e, st, false);
		it.data = xmalloc(want ? want : 1);
		it.len = want;
		it.last = left == want;
		r = read_chunk(c, e, fd, it.data, want, &shrank, h, err);
		if (r == 0)
			r = direct_put(c, &it); /* takes the buffers, also when it fails */
		else
			free(it.path), free(it.data);
		if ((left -= want) == 0)
			break;
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

static struct archive *open_writer(struct copyin *c, pd_err *err);

static int ci_emit(void *ud, struct ws_entry *e, int fd, const struct stat *st, pd_err *err)
{
	struct copyin *c = ud;
	/* the writer (and with it libarchive, loaded on first use) only once there is an entry */
	if (!c->dw && !c->a && !(c->a = open_writer(c, err)))
		return -EIO;
	_cleanup_free_ char *cfg = NULL;
	size_t cfglen = 0;
	if (e->type == WS_FILE && is_git_config(e) && !(cfg = filtered_config(c, e, fd, &cfglen))) {
		e->type = WS_TYPE_INVALID; /* left out */
		return 0;
	}
	if (e->type == WS_FILE)
		e->size = cfg ? cfglen : (uint64_t)st->st_size;
	if (c->dw)
		return direct_entry(c, e, fd, st, TAKE_PTR(cfg), err);
	struct archive_entry *ae = archive_entry_new();
	int r = header(c, ae, e, st, err);
	archive_entry_free(ae);
	if (r < 0 || e->type != WS_FILE)
		return r;
	return tar_file(c, e, fd, cfg, err);
}

/* The stream's sink: out_fd, until the copy is cut. A failed copy must not end with the
 * end-of-archive marker (a cut stream would look complete), and archive_write_fail() skips
 * the close that frees libarchive's block buffer (256 KiB leaked per failed copy-in): so the
 * writer is closed normally and this sink drops what comes after the cut. */
static la_ssize_t ci_write(struct archive *a, void *ud, const void *buf, size_t n)
{
	struct copyin *c = ud;
	if (c->cut)
		return (la_ssize_t)n;
	ssize_t w;
	while ((w = write(c->out_fd, buf, n)) < 0 && errno == EINTR)
		;
	if (w < 0)
		archive_set_error(a, errno, "cannot write the tar stream");
	return w;
}

static struct archive *open_writer(struct copyin *c, pd_err *err)
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
	    archive_write_open(a, c, NULL, ci_write, NULL) != ARCHIVE_OK) {
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
	struct copyin c = {.notes = notes, .out_fd = -1, .o = o};
	int r = ws_dirwriter_start(dst_fd, o ? o->baseline : NULL, &c.dw, err);
	if (r < 0)
		return r;
	r = walk(&c, rootfd, o, ret_manifest, notes, err);
	/* the writer's own failure is described by it; a failed walk drops what is queued */
	int q = ws_dirwriter_finish(c.dw, r == 0, r == 0 || c.dw_failed ? err : NULL);
	if (c.dw_failed || (r == 0 && q < 0)) {
		r = q < 0 ? q : -EIO;
		ws_manifest_free(ret_manifest);
	}
	ws_ignore_free(c.ig);
	free(c.buf);
	return r;
}

int ws_copyin(int rootfd, int out_fd, const struct ws_copyin_opts *o,
	      struct ws_manifest *ret_manifest, struct ws_notes *notes, pd_err *err)
{
	struct copyin c = {.notes = notes, .out_fd = out_fd};
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
	} else if (r < 0) { /* no end-of-archive marker: a cut stream must not look complete */
		c.cut = true;
		(void)archive_write_close(c.a);
	} else if (archive_write_close(c.a) != ARCHIVE_OK) {
		r = tar_error(&c, err, "the end of the stream");
		ws_manifest_free(ret_manifest);
	}
	if (c.a)
		archive_write_free(c.a);
	ws_ignore_free(c.ig);
	free(c.buf);
	return r;
}
