/* vm_console.c — sanitised tails of the guest console and QEMU's log (see vm_console.h). */
#include <fcntl.h>
#include <sys/stat.h>

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
	_cleanup_free_ char *q = read_tail(state_dir, "qemu.log", &ql), *c = read_tail(state_dir, "console.log", &cl);
	_cleanup_free_ char *qt = vm_console_tail(q ? q : "", ql, 3, 600), *ct = vm_console_explain(c ? c : "", cl, 8, 1200);
	return xasprintf("QEMU said: %s\nguest console:\n%s", qt[0] ? qt : "(nothing)", ct[0] ? ct : "(nothing)");
}
