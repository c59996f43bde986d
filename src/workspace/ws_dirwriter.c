/* ws_dirwriter.c — the direct copy-in's writing thread (see ws_dirwriter.h). */
#include <fcntl.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/fdio.h"
#include "util/thread.h"
#include "ws_boxscan.h"
#include "ws_dirwriter.h"
#include "ws_io.h"

/* the queue's bounds: enough to ride out a burst of small files or one slow large write,
 * small enough that a 1 GiB project never sits in memory */
#define DW_SLOTS 512
#define DW_MAX_BYTES (16u << 20)

/* a directory made by the copy: its mode and mtime are set once its entries exist */
struct made_dir {
	char *path;
	mode_t mode;
	struct timespec mtime;
};

struct ws_dirwriter {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t has_items, has_room;
	struct ws_dw_item q[DW_SLOTS];
	size_t head, n;          /* ring: the oldest item and how many are queued */
	size_t bytes;            /* queued data bytes */
	bool closing;            /* no more items; drain and stop */
	bool dropping;           /* stop without draining */
	bool failed;             /* the thread has stopped on an error (in err) */
	bool reader_waits, writer_waits;

	/* the thread's own state */
	int dst_fd;
	int file_fd;             /* the file being written */
	char *file_path;
	char *pdir;              /* the cached parent directory of the last entry, and its fd */
	int pdir_fd;
	struct made_dir *dirs;
	size_t n_dirs, cap_dirs;
	struct ws_bscan *scan;   /* the copy's own scan, or NULL */
	bool as_owner;
	uid_t owner_uid;
	gid_t owner_gid;
	pd_err err;
	int r;
};

static void item_free(struct ws_dw_item *it)
{
	free(it->path);
	free(it->target);
	free(it->data);
	*it = (struct ws_dw_item){0};
}

/* The box's files belong to the box's user: its /workspace's owner as this host sees it. A
 * root caller's boxes map no host id 0 (their ids are shifted), so what root creates there
 * must carry the owner's ids (else EOVERFLOW). This thread's filesystem ids become the
 * owner's — setfsuid/setfsgid act on the calling thread only, so the reading thread and the
 * rest of the process keep their identity — and the file-access capabilities the kernel drops
 * with fsuid 0 are raised again from the permitted set, so replacing an image's own
 * /workspace content still works as it does for tar -x as root. Safe: every name is resolved
 * beneath the destination without following symlinks and no process of the box runs yet.
 * Once per copy: a switch allocates new credentials (four per entry cost a tenth of a
 * 50,000-file copy). An ordinary caller owns /workspace already and switches nothing. The
 * ids end with the thread. */
static int owner_begin(struct ws_dirwriter *w)
{
	if (!w->as_owner)
		return 0;
	syscall(SYS_setfsgid, w->owner_gid);
	syscall(SYS_setfsuid, w->owner_uid);
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	const uint32_t fs = (1u << CAP_DAC_OVERRIDE) | (1u << CAP_DAC_READ_SEARCH) | (1u << CAP_FOWNER);
	d[0].effective |= d[0].permitted & fs;
	return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
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

/* The copy's own scan: the record the box's would make of an entry just written (its final
 * mode, times and so ctime). An entry it misses is only fetched by diff, never trusted. */
static void record_at(struct ws_dirwriter *w, int pfd, const char *name, const char *path, const char *target)
{
	struct stat st;
	if (w->scan && fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		ws_bscan_add_stat(w->scan, path, target, &st);
}

/* The parent directory of path beneath the destination (cached for the next entry, which in
 * a depth-first walk is most often a sibling), and path's last component. */
static int open_parent(struct ws_dirwriter *w, const char *path, int *ret_pfd, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	size_t plen = slash ? (size_t)(slash - path) : 0;
	*ret_name = slash ? slash + 1 : path;
	if (w->pdir_fd >= 0 && strlen(w->pdir) == plen && memcmp(w->pdir, path, plen) == 0) {
		*ret_pfd = w->pdir_fd;
		return 0;
	}
	if (w->pdir_fd >= 0)
		close(w->pdir_fd);
	free(w->pdir);
	w->pdir = xstrndup(path, plen);
	w->pdir_fd = -1;
	int r = ws_open_beneath(w->dst_fd, w->pdir, O_RDONLY | O_DIRECTORY, &w->pdir_fd);
	if (r < 0)
		return ws_err_path(&w->err, -r, "cannot open the parent in the box of", path);
	*ret_pfd = w->pdir_fd;
	return 0;
}

static int make_dir(struct ws_dirwriter *w, int pfd, const char *name, const struct ws_dw_item *it)
{
	struct stat have;
	/* 0700 while its entries are made (a 0555 directory would refuse them) */
	int r = mkdirat(pfd, name, 0700) < 0 ? -errno : 0;
	if (r == -EEXIST && fstatat(pfd, name, &have, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(have.st_mode))
		r = replace(pfd, name) < 0 ? -errno : mkdirat(pfd, name, 0700) < 0 ? -errno : 0;
	else if (r == -EEXIST)
		r = 0; /* a directory already (an image's own /workspace content) */
	if (r < 0)
		return ws_err_path(&w->err, -r, "cannot create in the box:", it->path);
	if (w->n_dirs == w->cap_dirs) {
		w->cap_dirs = w->cap_dirs ? 2 * w->cap_dirs : 64;
		w->dirs = xrealloc(w->dirs, w->cap_dirs * sizeof(*w->dirs));
	}
	w->dirs[w->n_dirs++] = (struct made_dir){xstrdup(it->path), it->mode & 0777, it->mtim};
	return 0;
}

static int begin_entry(struct ws_dirwriter *w, const struct ws_dw_item *it)
{
	int pfd = -1;
	const char *name;
	int r = open_parent(w, it->path, &pfd, &name);
	if (r < 0)
		return r;
	switch (it->type) {
	case WS_DIR:
		return make_dir(w, pfd, name, it);
	case WS_SYMLINK: {
		const struct timespec times[2] = {it->atim, it->mtim};
		r = symlinkat(it->target, pfd, name) < 0 ? -errno : 0;
		if (r == -EEXIST)
			r = replace(pfd, name) < 0 ? -errno : symlinkat(it->target, pfd, name) < 0 ? -errno : 0;
		if (r < 0)
			return ws_err_path(&w->err, -r, "cannot create in the box:", it->path);
		(void)utimensat(pfd, name, times, AT_SYMLINK_NOFOLLOW);
		record_at(w, pfd, name, it->path, it->target);
		return 0;
	}
	case WS_FILE:
		w->file_fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (w->file_fd < 0 && errno == EEXIST && replace(pfd, name) == 0)
			w->file_fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (w->file_fd < 0)
			return ws_err_path(&w->err, errno, "cannot create in the box:", it->path);
		free(w->file_path);
		w->file_path = xstrdup(it->path);
		return 0;
	default:
		return 0;
	}
}

/* One item: a new entry, a file's bytes, and after its last bytes the project's permission
 * bits (not the umask's) and mtime. */
static int write_item(struct ws_dirwriter *w, const struct ws_dw_item *it)
{
	if (it->path) {
		int r = begin_entry(w, it);
		if (r < 0 || it->type != WS_FILE)
			return r;
	}
	if (w->file_fd < 0) /* a continuation with no file begun: a caller's bug */
		return pd_error(&w->err, EINVAL, "cannot copy into the box: data with no file");
	int r = fd_write_all(w->file_fd, it->data, it->len);
	if (r < 0)
		return ws_err_path(&w->err, -r, "cannot copy into the box:", w->file_path);
	if (!it->last)
		return 0;
	const struct timespec times[2] = {it->atim, it->mtim};
	struct stat st;
	if (fchmod(w->file_fd, it->mode & 0777) < 0 || futimens(w->file_fd, times) < 0)
		r = ws_err_path(&w->err, errno, "cannot set the mode of", w->file_path);
	else if (w->scan && fstat(w->file_fd, &st) == 0)
		ws_bscan_add_stat(w->scan, w->file_path, NULL, &st);
	close(w->file_fd);
	w->file_fd = -1;
	return r;
}

/* Directories last, deepest first: their modes and mtimes (adding entries changed them). */
static int finish_dirs(struct ws_dirwriter *w)
{
	for (size_t i = w->n_dirs; i-- > 0;) {
		struct made_dir *d = &w->dirs[i];
		_cleanup_close_ int fd = -1;
		int q = ws_open_beneath(w->dst_fd, d->path, O_RDONLY | O_DIRECTORY, &fd);
		const struct timespec times[2] = {d->mtime, d->mtime};
		if (q < 0 || fchmod(fd, d->mode) < 0 || futimens(fd, times) < 0)
			return ws_err_path(&w->err, q < 0 ? -q : errno, "cannot set the mode of", d->path);
		struct stat st;
		if (w->scan && *d->path && fstat(fd, &st) == 0)
			ws_bscan_add_stat(w->scan, d->path, NULL, &st);
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct ws_dirwriter *w = arg;
	int r = owner_begin(w);
	if (r < 0)
		pd_error(&w->err, r, "cannot take the box user's ids for the copy");
	pthread_mutex_lock(&w->mu);
	while (r == 0 && !w->dropping) {
		while (w->n == 0 && !w->closing && !w->dropping) {
			w->writer_waits = true;
			pthread_cond_wait(&w->has_items, &w->mu);
			w->writer_waits = false;
		}
		if (w->dropping || w->n == 0)
			break;
		struct ws_dw_item it = w->q[w->head];
		w->q[w->head] = (struct ws_dw_item){0};
		w->head = (w->head + 1) % DW_SLOTS;
		w->n--;
		w->bytes -= it.len;
		if (w->reader_waits)
			pthread_cond_signal(&w->has_room);
		pthread_mutex_unlock(&w->mu);
		r = write_item(w, &it);
		item_free(&it);
		pthread_mutex_lock(&w->mu);
	}
	bool complete = !w->dropping && r == 0;
	if (r < 0) {
		w->failed = true;
		if (w->reader_waits)
			pthread_cond_signal(&w->has_room);
	}
	pthread_mutex_unlock(&w->mu);
	if (complete)
		r = finish_dirs(w);
	w->r = r;
	return NULL;
}

/* Everything w holds, once its thread is joined (or never started). */
static void dw_free(struct ws_dirwriter *w)
{
	for (size_t i = 0; i < w->n; i++)
		item_free(&w->q[(w->head + i) % DW_SLOTS]);
	for (size_t i = 0; i < w->n_dirs; i++)
		free(w->dirs[i].path);
	free(w->dirs);
	if (w->file_fd >= 0)
		close(w->file_fd);
	if (w->pdir_fd >= 0)
		close(w->pdir_fd);
	free(w->pdir);
	free(w->file_path);
	pthread_mutex_destroy(&w->mu);
	pthread_cond_destroy(&w->has_items);
	pthread_cond_destroy(&w->has_room);
	free(w);
}

int ws_dirwriter_start(int dst_fd, struct ws_bscan *scan, struct ws_dirwriter **ret, pd_err *err)
{
	struct stat dst;
	if (fstat(dst_fd, &dst) < 0)
		return pd_error(err, errno, "cannot inspect the destination");
	struct ws_dirwriter *w = xmalloc(sizeof(*w));
	*w = (struct ws_dirwriter){.dst_fd = dst_fd, .file_fd = -1, .pdir_fd = -1,
				   .owner_uid = dst.st_uid, .owner_gid = dst.st_gid, .scan = scan};
	w->as_owner = dst.st_uid != geteuid() || dst.st_gid != getegid();
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->has_items, NULL);
	pthread_cond_init(&w->has_room, NULL);
	/* signals stay with the caller's threads (a SIGPIPE-free write, a Ctrl-C handler) */
	int r = thread_start_quiet(&w->thread, NULL, writer_main, w);
	if (r < 0) {
		dw_free(w);
		return pd_error(err, r, "cannot start the copy's writer");
	}
	*ret = w;
	return 0;
}

int ws_dirwriter_put(struct ws_dirwriter *w, struct ws_dw_item *item)
{
	pthread_mutex_lock(&w->mu);
	while (!w->failed && (w->n == DW_SLOTS || (w->n > 0 && w->bytes + item->len > DW_MAX_BYTES))) {
		w->reader_waits = true;
		pthread_cond_wait(&w->has_room, &w->mu);
		w->reader_waits = false;
	}
	if (w->failed) {
		pthread_mutex_unlock(&w->mu);
		item_free(item);
		return -ECANCELED;
	}
	w->q[(w->head + w->n) % DW_SLOTS] = *item;
	*item = (struct ws_dw_item){0};
	w->n++;
	w->bytes += w->q[(w->head + w->n - 1) % DW_SLOTS].len;
	if (w->writer_waits)
		pthread_cond_signal(&w->has_items);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

int ws_dirwriter_finish(struct ws_dirwriter *w, bool complete, pd_err *err)
{
	pthread_mutex_lock(&w->mu);
	if (complete)
		w->closing = true;
	else
		w->dropping = true;
	pthread_cond_signal(&w->has_items);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	int r = w->r;
	if (r < 0 && err)
		*err = w->err;
	dw_free(w);
	return r;
}
