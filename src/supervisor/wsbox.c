/* wsbox.c — copying the workspace into a box at boot. */
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sys/stat.h>

#include "supervisor/wsbox.h"
#include "proto/tarfmt.h"
#include "proto/wsscan.h"
#include "util/fdio.h"
#include "util/log.h"
#include "util/thread.h"
#include "workspace/ws_boxscan.h"
#include "workspace/ws_copyin.h"
#include "workspace/ws_progress.h"

struct fed {
	struct proto_conn conn;
	struct proto_flow flow;
	uint32_t stream;
	int status;
	bool done;
	char *errbuf;
	size_t errlen, errcap;
	int out_fd;          /* the session's stdout goes here; -1: dropped */
	uint64_t out_left;   /* bytes out_fd may still take */
	bool out_failed;
};

static int fed_frame(struct fed *f, const struct proto_frame *fr, pd_err *err)
{
	int e;
	const char *msg;
	if (fr->hdr.stream != f->stream)
		return pd_error_msg(err, EPROTO, "unexpected frame from paddock-init during copy-in");
	int fl = proto_flow_recv(&f->flow, fr);
	if (fl != 0)
		return fl < 0 ? pd_error_msg(err, EPROTO, "paddock-init broke the flow control") : 0;
	/* output is taken at once (kept, written or dropped): granted again as it comes */
	if (fr->hdr.type == PROTO_STDOUT || fr->hdr.type == PROTO_STDERR)
		proto_flow_delivered(&f->flow, &f->conn, f->stream, fr->hdr.type == PROTO_STDERR, fr->hdr.len);
	switch (fr->hdr.type) {
	case PROTO_STDERR:
		if (f->errcap > f->errlen + 1) {
			size_t n = fr->hdr.len < f->errcap - f->errlen - 1 ? fr->hdr.len : f->errcap - f->errlen - 1;
			memcpy(f->errbuf + f->errlen, fr->payload, n);
			f->errlen += n;
			f->errbuf[f->errlen] = '\0';
		}
		return 0;
	case PROTO_EXIT:
		if (proto_decode_u32(fr, (uint32_t *)&f->status) < 0)
			return pd_error_msg(err, EPROTO, "malformed exit status");
		f->done = true;
		return 0;
	case PROTO_ERROR:
		if (proto_decode_error(fr, &e, &msg) < 0)
			return pd_error_msg(err, EPROTO, "malformed error");
		return pd_error_msg(err, e, "%s", msg);
	case PROTO_STDOUT:
		if (f->out_fd < 0)
			return 0;
		if (fr->hdr.len > f->out_left || fd_write_all(f->out_fd, fr->payload, fr->hdr.len) < 0) {
			f->out_failed = true;
			f->out_fd = -1;
		} else
			f->out_left -= fr->hdr.len;
		return 0;
	default:
		return 0; /* STARTED, EOF */
	}
}

static int fed_pump(struct fed *f, pd_err *err)
{
	struct proto_frame fr;
	int r = proto_conn_read(&f->conn);
	while (proto_conn_next(&f->conn, &fr) == 1 && !f->done)
		if ((r = fed_frame(f, &fr, err)) < 0)
			return r;
	if (!f->done && (f->conn.eof || (r < 0 && r != -EAGAIN)))
		return pd_error_msg(err, EPIPE, "paddock-init went away during copy-in");
	return 0;
}

#define WSBOX_IDLE_MS 60000

/* box_run_fed with the session's stdout written to out_fd (at most out_max bytes; past that,
 * or when a write fails, the status is -EFBIG). */
static int run_fed_out(int ctl_fd, uint32_t stream, char *const *argv, const char *user, int in_fd,
		       int out_fd, uint64_t out_max, char *ret_stderr, size_t stderr_len, struct ws_progress *bar,
		       pd_err *err)
{
	uint64_t fed = 0;
	struct fed f = {.stream = stream, .errbuf = ret_stderr, .errcap = stderr_len, .out_fd = out_fd,
			.out_left = out_max};
	if (ret_stderr && stderr_len)
		ret_stderr[0] = '\0';
	struct proto_buf b = {0};
	proto_encode_exec(&b, argv, NULL, "/", user, false, 0, 0);
	proto_conn_init(&f.conn, ctl_fd);
	proto_conn_send(&f.conn, PROTO_EXEC, 0, stream, b.data, (uint32_t)b.len);
	proto_buf_free(&b);
	bool in_open = in_fd >= 0;
	if (!in_open) {
		uint8_t zero = 0;
		proto_conn_send(&f.conn, PROTO_EOF, 0, stream, &zero, 1);
	}
	proto_flow_start(&f.flow, &f.conn, stream, sup_peer_minor >= PROTO_MINOR_WINDOW);
	int r = 0;
	static uint8_t buf[PROTO_MAX_PAYLOAD]; /* one frame per read: fewer frames, fewer wake-ups */
	/* The program runs in the box: one that stops moving (stopped by a process of the box,
	 * or a guest's own binary that never exits) must not hold the start, or the supervisor,
	 * for ever. Moving is any byte either way; a copy of any size keeps it. */
	int64_t last = mono_ms();
	while (r == 0 && !f.done) {
		bool backlog = proto_conn_pending(&f.conn) > (1u << 20) || !proto_flow_stdin_room(&f.flow, 1);
		struct pollfd p[2] = {
			{.fd = ctl_fd, .events = POLLIN | (proto_conn_pending(&f.conn) ? POLLOUT : 0)},
			{.fd = in_open && !backlog ? in_fd : -1, .events = POLLIN},
		};
		int ready = poll(p, 2, 1000);
		if (ready < 0 && errno != EINTR)
			r = pd_error(err, errno, "poll");
		else if (box_boot_cancel)
			r = pd_error_msg(err, ECANCELED, "interrupted while %s ran in the box", argv[0]);
		else if (ready <= 0 && mono_ms() - last > WSBOX_IDLE_MS)
			r = pd_error_msg(err, ETIMEDOUT, "%s in the box made no progress for %d s", argv[0],
					 WSBOX_IDLE_MS / 1000);
		if (ready <= 0)
			continue;
		last = mono_ms();
		size_t room = proto_flow_stdin_room(&f.flow, sizeof(buf));
		if (p[1].revents && room > 0) {
			ssize_t n = read(in_fd, buf, room);
			if (n > 0) {
				proto_flow_stdin_sent(&f.flow, (size_t)n);
				proto_conn_send(&f.conn, PROTO_STDIN, 0, stream, buf, (uint32_t)n);
				if (bar)
					ws_progress_update(bar, fed += (uint64_t)n);
			}
			else if (n == 0 || errno != EINTR) {
				uint8_t zero = 0;
				in_open = false;
				proto_conn_send(&f.conn, PROTO_EOF, 0, stream, &zero, 1);
			}
		}
		if (p[0].revents & POLLOUT) {
			int q = proto_conn_flush(&f.conn);
			if (q < 0 && q != -EAGAIN)
				r = pd_error(err, q, "cannot write to paddock-init");
		}
		if (r == 0 && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			r = fed_pump(&f, err);
	}
	f.conn.fd = -1; /* the caller owns ctl_fd */
	proto_conn_free(&f.conn);
	if (r == 0 && f.out_failed)
		r = pd_error_msg(err, EFBIG, "the output of %s was too large or could not be written", argv[0]);
	return r < 0 ? r : f.status;
}

int box_run_fed(int ctl_fd, uint32_t stream, char *const *argv, const char *user, int in_fd,
		char *ret_stderr, size_t stderr_len, pd_err *err)
{
	return run_fed_out(ctl_fd, stream, argv, user, in_fd, -1, 0, ret_stderr, stderr_len, NULL, err);
}

/* After a restore (the box got its own saved copy, not the project): keeps the records of
 * files whose saved content is exactly the copy-in content. The saved tar is the box's output,
 * read by the same hostile-input reader as any other (hashed only, nothing staged). */
static int keep_restored_unchanged(int dfd, const char *name, pd_err *err)
{
	struct ws_limits lim = WS_LIMITS_DEFAULT;
	struct ws_manifest base = {0}, restored = {0};
	struct ws_notes notes = {0};
	struct ws_bscan scan = {0};
	_cleanup_close_ int tar = openat(dfd, WSBOX_SAVED_TAR, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	int r = tar < 0 ? pd_error(err, errno, "cannot open %s", WSBOX_SAVED_TAR) : 0;
	struct ws_tar_opts o = {.limits = &lim, .staging_fd = -1};
	if (r == 0)
		r = ws_manifest_load(dfd, WSBOX_BASE_MANIFEST, &lim, &base, err);
	if (r == 0)
		r = ws_manifest_from_tar(tar, &o, &restored, &notes, err);
	if (r == 0)
		r = ws_bscan_load(dfd, name, &lim, &scan, err);
	if (r == 0) {
		ws_bscan_keep_unchanged(&scan, &restored, &base);
		_cleanup_free_ uint8_t *buf = NULL;
		size_t len = ws_bscan_encode(&scan, &buf);
		_cleanup_close_ int fd = openat(dfd, name, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
		r = fd < 0 ? -errno : fd_write_all(fd, buf, len);
		if (r < 0)
			pd_error(err, r, "cannot write %s", name);
	}
	ws_bscan_free(&scan);
	ws_manifest_free(&base);
	ws_manifest_free(&restored);
	ws_notes_free(&notes);
	return r;
}

/* The box's scan of its fresh copy, saved as WSBOX_BASELINE: what "unchanged" looks like
 * inside the box (inode, ctime). Taken before any session of the box has run, so before the
 * agent could touch anything. Best effort: without it, diff fetches every file. */
static void save_baseline(int ctl_fd, const char *box_dir, bool restored)
{
	_cleanup_free_ char *tmp = xasprintf("%s/%s.tmp", box_dir, WSBOX_BASELINE);
	_cleanup_free_ char *dst = xasprintf("%s/%s", box_dir, WSBOX_BASELINE);
	_cleanup_close_ int dfd = open(box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	char *argv[] = {WSSCAN_BUILTIN, "--no-freeze", "/workspace", NULL};
	char msg[512] = "";
	pd_err err = {0};
	int st = fd < 0 || dfd < 0 ? -errno
				   : run_fed_out(ctl_fd, WSBOX_STREAM + 2, argv, "agent", -1, fd, WSBOX_BASELINE_MAX,
						 msg, sizeof(msg), NULL, &err);
	if (st == 0 && restored)
		st = keep_restored_unchanged(dfd, WSBOX_BASELINE ".tmp", &err);
	if (st == 0 && fsync(fd) == 0 && rename(tmp, dst) == 0)
		return;
	pd_debug("no workspace baseline (status %d: %s %s)", st, err.msg, msg);
	unlink(tmp);
	unlink(dst);
}

/* The direct copy's baseline: the writer's own scan of what it made (no session in the box;
 * the host's word, not the box's). Not synced, like the manifest beside it: the copy it
 * describes lives in the box's memory. Without it, diff fetches everything: slower, as safe. */
static void save_own_baseline(int dirfd, const struct ws_bscan *scan)
{
	_cleanup_free_ uint8_t *buf = NULL;
	size_t len = ws_bscan_encode(scan, &buf);
	_cleanup_close_ int fd = openat(dirfd, WSBOX_BASELINE ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 || fd_write_all(fd, buf, len) < 0 || renameat(dirfd, WSBOX_BASELINE ".tmp", dirfd, WSBOX_BASELINE) < 0) {
		pd_debug("no workspace baseline: %s", strerror(errno));
		unlinkat(dirfd, WSBOX_BASELINE ".tmp", 0);
	}
}

/* The producer: walks the project, writes the tar stream to out_fd (and closes it), saves the
 * copy-in manifest and the list of what was left out beside the box. A thread, not a forked
 * child: the supervisor already runs its network thread, and a child forked from a threaded
 * process may only call async-signal-safe functions (one hung on an allocator lock the
 * network thread held at the fork). */
struct wsbox_copy {
	char *project, *box_dir;
	int out_fd;            /* the producer's: it closes it */
	int in_fd;             /* the feeding side's */
	int saved_fd;          /* the copy saved at the last stop, fed instead of the project */
	bool direct;           /* written straight into the box's /workspace (no tar) */
	bool durable;          /* the records are synced (not for a --rm box: it dies with us) */
	pthread_t thread;
	bool producing;
	_Atomic bool produced; /* the walk and the manifest are done */
	size_t entries;        /* entries in the copy-in manifest, once produced */
	int r;
	pd_err err;
};

/* What the box received (the copy-in manifest, for diff/apply) and what was left out. */
static int save_records(int dirfd, const char *box_dir, const struct ws_manifest *m, const struct ws_notes *notes,
			bool durable, pd_err *err)
{
	int r = durable ? ws_manifest_save(m, dirfd, WSBOX_BASE_MANIFEST, err)
			: ws_manifest_save_nosync(m, dirfd, WSBOX_BASE_MANIFEST, err);
	_cleanup_free_ char *notes_path = xasprintf("%s/%s", box_dir, WSBOX_NOTES);
	FILE *nf = r == 0 ? fopen(notes_path, "we") : NULL;
	/* one line each, "REASON<TAB>PATH", the path escaped (a name may hold a newline; the
	 * CLI shows these lines as they are) */
	for (size_t i = 0; nf && i < notes->n; i++) {
		_cleanup_free_ char *path = ws_escape_name(notes->v[i].path);
		fprintf(nf, "%s\t%s\n", ws_reason_str(notes->v[i].reason), path);
	}
	if (nf && notes->dropped)
		fprintf(nf, "and %zu more\t\n", notes->dropped);
	if (nf)
		fclose(nf);
	return r;
}

static void *produce(void *arg)
{
	struct wsbox_copy *p = arg;
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	_cleanup_close_ int rootfd = open(p->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int dirfd = open(p->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r = rootfd < 0 || dirfd < 0 ? pd_error(&p->err, errno, "cannot open %s", p->project)
					: ws_copyin(rootfd, p->out_fd, NULL, &m, &notes, &p->err);
	close(p->out_fd);
	if (r == 0)
		r = save_records(dirfd, p->box_dir, &m, &notes, p->durable, &p->err);
	p->entries = m.n;
	ws_manifest_free(&m);
	ws_notes_free(&notes);
	p->r = r;
	p->produced = true;
	return NULL;
}

static uint64_t tree_sum;
static int tree_add(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)path, (void)ftw;
	if (type == FTW_F && S_ISREG(st->st_mode))
		tree_sum += (uint64_t)st->st_size;
	return 0;
}

/* bytes of regular files beneath dir (never following a symlink); an estimate for the bar */
static uint64_t tree_bytes(const char *dir)
{
	tree_sum = 0;
	(void)nftw(dir, tree_add, 64, FTW_PHYS | FTW_MOUNT);
	return tree_sum;
}

static uint64_t fd_size(int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int open_saved(const char *box_dir)
{
	_cleanup_free_ char *p = xasprintf("%s/%s", box_dir, WSBOX_SAVED_TAR);
	return open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

/* Starts the producer before the box exists: the walk of the project and libarchive's loading
 * overlap the box's own start, and a small tree is all in the pipe by the time paddock-init
 * greets. Nothing reaches the box until box_workspace_copyin feeds it. */
static bool dir_empty(const char *path)
{
	_cleanup_closedir_ DIR *d = opendir(path);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
			return false;
	return d != NULL;
}

static void *warm_up(void *arg)
{
	(void)arg;
	uint8_t sha[WS_SHA256_LEN];
	ws_hasher_final(ws_hasher_new(), sha);
	return NULL;
}

int box_workspace_begin(const struct box_spec *spec, const char *box_dir, bool direct, struct wsbox_copy **ret,
			pd_err *err)
{
	*ret = NULL;
	if (!spec->workspace || !streq(spec->workspace, "copy") || !spec->project)
		return 0;
	struct wsbox_copy *c = xcalloc(1, sizeof(*c));
	c->project = xstrdup(spec->project);
	c->box_dir = xstrdup(box_dir);
	c->out_fd = c->in_fd = -1;
	c->durable = !spec->rm;
	c->saved_fd = open_saved(box_dir);
	/* a saved copy is the box's own output: it goes through tar in the box, never through
	 * the supervisor's hands into the box's tree */
	/* an empty project needs no copy at all: the walk (on the producer thread) finds that
	 * and the box runs nothing (box_workspace_copyin) */
	c->direct = direct && c->saved_fd < 0 && !dir_empty(spec->project);
	if (c->direct) {
		/* libcrypto (the copy's hashes) loads while the box starts, not after */
		if (thread_start_quiet(&c->thread, NULL, warm_up, NULL) == 0)
			c->producing = true;
	} else if (c->saved_fd < 0) {
		int pipefd[2];
		if (pipe2(pipefd, O_CLOEXEC) < 0) {
			int r = pd_error(err, errno, "cannot create a pipe");
			box_workspace_end(c);
			return r;
		}
		(void)fcntl(pipefd[0], F_SETPIPE_SZ, 1 << 20); /* a larger pipe: fewer wake-ups; best effort */
		c->in_fd = pipefd[0];
		c->out_fd = pipefd[1];
		int r = thread_start_quiet(&c->thread, NULL, produce, c);
		if (r < 0) {
			close(c->out_fd);
			box_workspace_end(c);
			return pd_error(err, -r, "cannot start the copy-in thread");
		}
		c->producing = true;
	}
	*ret = c;
	return 0;
}

bool box_workspace_direct(const struct wsbox_copy *c)
{
	return c && c->direct;
}

void box_workspace_end(struct wsbox_copy *c)
{
	if (!c)
		return;
	/* closed first: a producer still writing gets EPIPE (its SIGPIPE is blocked) and ends */
	if (c->in_fd >= 0)
		close(c->in_fd);
	if (c->producing)
		pthread_join(c->thread, NULL);
	if (c->saved_fd >= 0)
		close(c->saved_fd);
	free(c->project);
	free(c->box_dir);
	free(c);
}

static void on_direct_progress(void *ud, uint64_t bytes)
{
	ws_progress_update(ud, bytes);
}

/* ns: the project written straight into the box's /workspace by this process (the backend
 * handed over a directory fd of it; paddock-init is the only process in the box and no
 * session has run), with the workspace library's walk and rules (ws_copyin_to_dir: nothing
 * in the destination is followed). The fd is closed before the box runs anything. */
static int copy_direct(struct box *b, struct wsbox_copy *c, pd_err *err)
{
	if (c->producing) { /* the warm-up */
		pthread_join(c->thread, NULL);
		c->producing = false;
	}
	if (!b->h.has_ws_fd)
		return pd_error_msg(err, EPROTO, "workspace copy-in: the backend did not hand over /workspace");
	_cleanup_close_ int dst = b->h.ws_fd;
	b->h.has_ws_fd = false, b->h.ws_fd = -1;
	_cleanup_close_ int rootfd = open(c->project, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int dirfd = open(c->box_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0 || dirfd < 0)
		return pd_error(err, errno, "cannot open %s", rootfd < 0 ? c->project : c->box_dir);
	struct ws_progress bar;
	ws_progress_start(&bar, "copying the project in", 0, true);
	if (bar.on)
		bar.total = tree_bytes(c->project);
	struct ws_bscan scan = {0};
	struct ws_copyin_opts o = {.progress = bar.on ? on_direct_progress : NULL, .progress_ud = &bar,
				   .baseline = &scan};
	struct ws_manifest m = {0};
	struct ws_notes notes = {0};
	int r = ws_copyin_to_dir(rootfd, dst, &o, &m, &notes, err);
	ws_progress_end(&bar);
	if (r == 0)
		save_own_baseline(dirfd, &scan);
	ws_bscan_free(&scan);
	/* not synced: this copy lives in the box's memory (ns) and dies with the host; a stop
	 * that saves it syncs the manifest with it (wsnap_save_tar) */
	if (r == 0)
		r = save_records(dirfd, c->box_dir, &m, &notes, false, err);
	c->entries = m.n;
	c->produced = true;
	c->r = r;
	ws_manifest_free(&m);
	ws_notes_free(&notes);
	return r < 0 ? pd_err_prefix(err, "cannot copy the project %s into the box", c->project) : 0;
}

int box_workspace_copyin(struct box *b, struct wsbox_copy *c, pd_err *err)
{
	if (!c)
		return 0;
	/* paddock-init's tar: keeps the project's permission bits (the box's umask must not show up
	 * as changes), takes no owner from the stream, leaves /workspace itself as it is */
	char *tar_x[] = {WSTAR_BUILTIN, "-x", "/workspace", NULL};
	char msg[2048];
	bool saved = c->saved_fd >= 0;
	int st = 0;
	if (c->direct) {
		int r = copy_direct(b, c, err);
		if (r < 0)
			return r;
	}
	/* An empty project (no entry in its manifest, which leaves out the root: the stream
	 * holds only that root, which tar would leave alone under --no-overwrite-dir) needs no
	 * tar in the box, and no baseline: everything its diff will see is new, and new entries
	 * are fetched with or without one. (This once said <= 1: a one-file project reached a
	 * vm box empty, and apply deleted the file on the host.) */
	bool empty = c->produced && c->r == 0 && c->entries == 0 && !saved;
	if (c->direct) {
		pd_debug("workspace: %zu entries copied straight in", c->entries);
	} else if (empty) {
		pd_debug("workspace: empty, no tar");
	} else {
		struct ws_progress bar;
		ws_progress_start(&bar, "copying the project in", 0, true);
		if (bar.on) /* the size of the tree, for the bar (only on a terminal: it costs a walk) */
			bar.total = saved ? fd_size(c->saved_fd) : tree_bytes(c->project);
		st = run_fed_out(b->h.ctl_fd, WSBOX_STREAM, tar_x, "agent", saved ? c->saved_fd : c->in_fd, -1, 0, msg,
				 sizeof(msg), &bar, err);
		ws_progress_end(&bar);
	}
	if (c->in_fd >= 0) {
		close(c->in_fd);
		c->in_fd = -1;
	}
	if (c->producing) {
		pthread_join(c->thread, NULL);
		c->producing = false;
		if (c->r < 0 && st >= 0)
			return pd_error_msg(err, -c->r, "cannot copy the project %s into the box: %s", c->project,
					    c->err.msg);
	}
	if (st < 0)
		return pd_err_prefix(err, "workspace copy-in");
	if (st != 0)
		return pd_error_msg(err, EIO, "workspace copy-in: tar inside the box failed (%d): %s", st, msg);
	/* a restored copy is the box's own work, not what it received: its baseline keeps only
	 * the files it holds exactly as they were copied in */
	pd_debug("workspace: copied in");
	if (!empty && !c->direct) {
		save_baseline(b->h.ctl_fd, c->box_dir, saved);
		pd_debug("workspace: baseline saved");
	}
	/* the project also at its host path when the box has a root user to create it; best
	 * effort: /workspace is the path that always works (the ns backend made it already) */
	if (!b->h.ws_alias_made) {
		char *alias[] = {WSALIAS_BUILTIN, c->project, NULL};
		box_run_fed(b->h.ctl_fd, WSBOX_STREAM + 1, alias, "root", -1, msg, sizeof(msg), NULL);
		pd_debug("workspace: host-path alias made");
	}
	return 0;
}
