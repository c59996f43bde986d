/* vm_console.c — the capped console and QEMU logs and their sanitised tails (see vm_console.h). */
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>

#include "util/fdio.h"
#include "util/thread.h"
#include "runtime/vm/vm_console.h"

#define DIAG_READ_MAX (64u * 1024u)

char *vm_console_tail(const char *text, size_t len, unsigned max_lines, size_t max_bytes)
{
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		len--;
	size_t start = len;
	for (unsigned lines = 0; start > 0 && len - start < max_bytes; start--)
		if (text[start - 1] == '\n' && ++lines == max_lines)
			break;
	char *out = xmalloc(len - start + 1), *o = out;
	for (size_t i = start; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\r' && i + 1 < len && text[i + 1] == '\n')
			continue;
		*o++ = c == '\n' || (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	*o = '\0';
	return out;
}

static bool explains(const char *line, size_t n)
{
	static const char *const keys[] = {"paddock-init:", "Kernel panic"};
	for (size_t k = 0; k < ARRAY_SIZE(keys); k++)
		if (memmem(line, n, keys[k], strlen(keys[k])))
			return true;
	return false;
}

char *vm_console_explain(const char *text, size_t len, unsigned max_lines, size_t max_bytes)
{
	_cleanup_free_ char *picked = xmalloc(len + 1);
	size_t n = 0;
	for (size_t pos = 0; pos < len;) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (text + pos)) + 1 : len - pos;
		if (explains(text + pos, l)) {
			memcpy(picked + n, text + pos, l);
			n += l;
			if (!nl)
				picked[n++] = '\n';
		}
		pos += l;
	}
	return n ? vm_console_tail(picked, n, max_lines, max_bytes) : vm_console_tail(text, len, max_lines, max_bytes);
}

/* The last DIAG_READ_MAX bytes of a file (the file is the guest's or QEMU's: never trusted to
 * be small). */
static char *read_tail(const char *dir, const char *name, size_t *ret_len)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	off_t off = st.st_size > (off_t)DIAG_READ_MAX ? st.st_size - (off_t)DIAG_READ_MAX : 0;
	char *buf = xmalloc(DIAG_READ_MAX);
	ssize_t n = pread(fd, buf, DIAG_READ_MAX, off);
	*ret_len = n > 0 ? (size_t)n : 0;
	return buf;
}

char *vm_box_diagnose(const char *state_dir)
{
	size_t ql = 0, cl = 0;
	_cleanup_free_ char *q = read_tail(state_dir, VM_QEMU_LOG_FILE, &ql), *c = read_tail(state_dir, VM_CONSOLE_FILE, &cl);
	_cleanup_free_ char *qt = vm_console_tail(q ? q : "", ql, 3, 600), *ct = vm_console_explain(c ? c : "", cl, 8, 1200);
	return xasprintf("QEMU said: %s\nguest console:%s%s", qt[0] ? qt : "(nothing)", ct[0] ? "\n" : " ",
			 ct[0] ? ct : "(nothing)");
}

/* ---- the capped console files ---------------------------------------------------------- */

static void log_rotate(struct vm_console_log *l)
{
	closep(&l->fd);
	(void)renameat(l->dir_fd, VM_CONSOLE_FILE, l->dir_fd, VM_CONSOLE_OLD);
	l->fd = openat(l->dir_fd, VM_CONSOLE_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	l->cur = 0;
}

void vm_console_log_write(struct vm_console_log *l, const char *buf, size_t n)
{
	size_t half = l->cap / 2;
	while (n > 0) {
		if (l->fd < 0 || l->cur >= half)
			log_rotate(l);
		if (l->fd < 0)
			return;
		size_t k = n < half - l->cur ? n : half - l->cur;
		/* closep leaves the number: forgotten here, or the next write would go to, and the
		 * close at the end would close, whatever file reuses it */
		if (fd_write_all(l->fd, buf, k) < 0) {
			closep(&l->fd);
			l->fd = -1;
			return;
		}
		l->cur += k, buf += k, n -= k;
	}
}

void vm_console_log_close(struct vm_console_log *l) { closep(&l->fd); }

/* ---- QEMU's capped log ------------------------------------------------------------------ */

static int pwrite_all(int fd, const char *buf, size_t n, size_t off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		buf += w, n -= (size_t)w, off += (size_t)w;
	}
	return 0;
}

/* The file is full: the marker after the head, then the newest half of what followed it
 * moved down behind the marker (forward, chunk by chunk: every chunk is read before anything
 * at or above it is written, as the destination lies below the source). */
static int qemu_log_cut(struct vm_qemu_log *l)
{
	size_t mark = strlen(VM_QEMU_LOG_MARK), dst = l->head + mark;
	size_t keep = (l->cap - dst) / 2, src = l->size - keep;
	char buf[16384];
	if (!l->cut && pwrite_all(l->fd, VM_QEMU_LOG_MARK, mark, l->head) < 0)
		return -EIO;
	for (size_t done = 0; done < keep;) {
		size_t k = keep - done < sizeof(buf) ? keep - done : sizeof(buf);
		ssize_t n = pread(l->fd, buf, k, (off_t)(src + done));
		if (n <= 0 || pwrite_all(l->fd, buf, (size_t)n, dst + done) < 0)
			return -EIO;
		done += (size_t)n;
	}
	if (ftruncate(l->fd, (off_t)(dst + keep)) < 0)
		return -errno;
	l->cut = true;
	l->size = dst + keep;
	return 0;
}

void vm_qemu_log_write(struct vm_qemu_log *l, const char *buf, size_t n)
{
	while (n > 0 && l->fd >= 0) {
		if (l->size >= l->cap && qemu_log_cut(l) < 0)
			break;
		size_t k = n < l->cap - l->size ? n : l->cap - l->size;
		if (pwrite_all(l->fd, buf, k, l->size) < 0)
			break;
		l->size += k, buf += k, n -= k;
	}
	if (n > 0) {
		closep(&l->fd);
		l->fd = -1;
	}
}

/* ---- the copying threads ----------------------------------------------------------------- */

/* One thread per stream: the console (rotated pair) or QEMU's output (qemu.log). */
struct pump {
	int in;
	struct vm_console_log con; /* con.dir_fd >= 0: the console */
	struct vm_qemu_log qemu;
};

static void *pump_copy(void *arg)
{
	struct pump *t = arg;
	char buf[16384];
	ssize_t n;
	while ((n = read(t->in, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
		if (n > 0 && t->con.dir_fd >= 0)
			vm_console_log_write(&t->con, buf, (size_t)n);
		else if (n > 0)
			vm_qemu_log_write(&t->qemu, buf, (size_t)n);
	}
	vm_console_log_close(&t->con);
	closep(&t->con.dir_fd);
	closep(&t->qemu.fd);
	close(t->in);
	free(t);
	return NULL;
}

/* Takes t over, and t->in with it, whether the thread starts or not. */
static int pump_start(struct pump *t, const char *what, pthread_t *ret, pd_err *err)
{
	int r = thread_start_quiet(ret, NULL, pump_copy, t);
	if (r < 0) {
		close(t->in);
		closep(&t->con.dir_fd);
		closep(&t->qemu.fd);
		free(t);
		return pd_error(err, -r, "cannot start the %s thread", what);
	}
	return 0;
}

static struct pump *pump_new(int in)
{
	struct pump *t = xcalloc(1, sizeof(*t));
	t->in = in;
	t->con = (struct vm_console_log){.dir_fd = -1, .fd = -1, .cap = VM_CONSOLE_CAP};
	t->qemu = (struct vm_qemu_log){.fd = -1, .cap = VM_QEMU_LOG_CAP, .head = VM_QEMU_LOG_HEAD};
	return t;
}

int vm_console_start(int sock, const char *state_dir, pthread_t *ret, pd_err *err)
{
	struct pump *t = pump_new(sock);
	t->con.dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->con.dir_fd < 0) {
		int e = errno;
		close(sock);
		free(t);
		return pd_error(err, e, "cannot open %s", state_dir);
	}
	/* a fresh log per boot: the old one would otherwise count against nothing */
	(void)unlinkat(t->con.dir_fd, VM_CONSOLE_OLD, 0);
	(void)unlinkat(t->con.dir_fd, VM_CONSOLE_FILE, 0);
	return pump_start(t, "console", ret, err);
}

int vm_qemu_log_start(int rd, const char *state_dir, pthread_t *ret, pd_err *err)
{
	_cleanup_free_ char *path = xasprintf("%s/%s", state_dir, VM_QEMU_LOG_FILE);
	struct pump *t = pump_new(rd);
	/* read too: a cut moves the file's newest bytes down */
	t->qemu.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (t->qemu.fd < 0) {
		int e = errno;
		close(rd);
		free(t);
		return pd_error(err, e, "cannot open %s", path);
	}
	return pump_start(t, "QEMU log", ret, err);
}

void vm_console_join(pthread_t t) { pthread_join(t, NULL); }

char *vm_console_read(const char *state_dir)
{
	_cleanup_free_ char *all = xstrdup("");
	size_t len = 0;
	const char *names[] = {VM_CONSOLE_OLD, VM_CONSOLE_FILE};
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		_cleanup_free_ char *path = xasprintf("%s/%s", state_dir, names[i]), *text = NULL;
		size_t n = 0;
		if (read_file_at(AT_FDCWD, path, VM_CONSOLE_CAP, &text, &n) < 0)
			continue;
		all = xrealloc(all, len + n + 1);
		memcpy(all + len, text, n);
		len += n;
		all[len] = '\0';
	}
	return vm_console_tail(all, len, UINT_MAX, SIZE_MAX);
}
