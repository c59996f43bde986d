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

/* a digit's value + 1 (0: not a lowercase hex digit); a table, because manifests hold a
 * 64-digit hash for every file and their parse was a fifth of a large apply's CPU time */
static const uint8_t hex_plus1[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6, ['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
};

int hex_digit(char c)
{
	return (int)hex_plus1[(unsigned char)c] - 1;
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
		unsigned hi = hex_plus1[(unsigned char)hex[2 * i]], lo = hex_plus1[(unsigned char)hex[2 * i + 1]];
		if (!hi || !lo)
			return -EINVAL;
		out[i] = (uint8_t)((hi - 1) << 4 | (lo - 1));
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
