/* util.c — allocation helpers (abort on OOM) and string vectors. */
#include <stdarg.h>
#include <time.h>

#include "util.h"

static _noreturn_ void oom(void)
{
	static const char msg[] = "paddock: out of memory\n";
	ssize_t r = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)r;
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *r = strdup(s);
	if (!r)
		oom();
	return r;
}

char *xstrndup(const char *s, size_t n)
{
	char *r = strndup(s, n);
	if (!r)
		oom();
	return r;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *r;
	va_start(ap, fmt);
	int n = vasprintf(&r, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	return r;
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

bool strv_contains(char *const *v, const char *s)
{
	for (; v && *v; v++)
		if (streq(*v, s))
			return true;
	return false;
}

char **strv_append_unique(char **v, const char *s)
{
	return strv_contains(v, s) ? v : strv_append(v, s);
}

int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

void hex_encode(const uint8_t *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int hex_decode(const char *hex, uint8_t *out, size_t n)
{
	if (strlen(hex) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

size_t strv_len(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

char **strv_append(char **v, const char *s)
{
	size_t n = strv_len(v);
	v = xrealloc(v, (n + 2) * sizeof(char *));
	v[n] = xstrdup(s);
	v[n + 1] = NULL;
	return v;
}

char **strv_copy(char *const *v)
{
	size_t n = strv_len(v);
	char **r = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		r[i] = xstrdup(v[i]);
	return r;
}

bool box_target_path_valid(const char *path)
{
	if (!path || path[0] != '/' || path[1] == '\0' || strlen(path) >= PATH_MAX)
		return false;
	for (const char *c = path; *c;) {
		c++; /* skip the '/' */
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c += n;
	}
	return !path_under(path, "/proc") && !path_under(path, "/dev") && !path_under(path, "/sys");
}
