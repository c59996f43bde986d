/* vm_console.c — sanitised tails of the guest console and QEMU's log (see vm_console.h). */
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
	_cleanup_free_ char *q = read_tail(state_dir, "qemu.log", &ql), *c = read_tail(state_dir, VM_CONSOLE_FILE, &cl);
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
		if (fd_write_all(l->fd, buf, k) < 0) {
			closep(&l->fd);
			return;
		}
		l->cur += k, buf += k, n -= k;
	}
}

void vm_console_log_close(struct vm_console_log *l) { closep(&l->fd); }

struct console_thread {
	int sock, dir_fd;
};

static void *console_copy(void *arg)
{
	struct console_thread *t = arg;
	struct vm_console_log l = {.dir_fd = t->dir_fd, .fd = -1, .cap = VM_CONSOLE_CAP};
	char buf[16384];
	ssize_t n;
	while ((n = read(t->sock, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR))
		if (n > 0)
			vm_console_log_write(&l, buf, (size_t)n);
	vm_console_log_close(&l);
	close(t->sock);
	close(t->dir_fd);
	free(t);
	return NULL;
}

int vm_console_start(int sock, const char *state_dir, pthread_t *ret, pd_err *err)
{
	struct console_thread *t = xcalloc(1, sizeof(*t));
	t->sock = sock;
	t->dir_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (t->dir_fd < 0) {
		int e = errno;
		close(sock);
		free(t);
		return pd_error(err, e, "cannot open %s", state_dir);
	}
	/* a fresh log per boot: the old one would otherwise count against nothing */
	(void)unlinkat(t->dir_fd, VM_CONSOLE_OLD, 0);
	(void)unlinkat(t->dir_fd, VM_CONSOLE_FILE, 0);
	int r = thread_start_quiet(ret, NULL, console_copy, t);
	if (r < 0) {
		close(sock);
		close(t->dir_fd);
		free(t);
		return pd_error(err, -r, "cannot start the console thread");
	}
	return 0;
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
