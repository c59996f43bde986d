/* error.c — the pd_err error object. */
#include <stdarg.h>

#include "error.h"

static int __attribute__((format(printf, 4, 0))) set(pd_err *err, int errnum, bool with_strerror, const char *fmt, va_list ap)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum == 0)
		errnum = EIO;
	if (!err)
		return -errnum;
	err->code = errnum;
	int n = vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	if (with_strerror && n >= 0 && (size_t)n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - (size_t)n, ": %s", strerror(errnum));
	return -errnum;
}

int pd_error(pd_err *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = set(err, errnum, true, fmt, ap);
	va_end(ap);
	return r;
}

int pd_error_msg(pd_err *err, int errnum, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int r = set(err, errnum, false, fmt, ap);
	va_end(ap);
	return r;
}

int pd_err_prefix(pd_err *err, const char *fmt, ...)
{
	if (!err)
		return -EIO;
	char prefix[512], old[sizeof(err->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	size_t pl = strnlen(prefix, sizeof(prefix) - 1);
	memcpy(err->msg, prefix, pl);
	err->msg[pl] = ':';
	err->msg[pl + 1] = ' ';
	size_t room = sizeof(err->msg) - pl - 3;
	size_t ol = strnlen(old, room);
	memcpy(err->msg + pl + 2, old, ol);
	err->msg[pl + 2 + ol] = '\0';
	return -(err->code ? err->code : EIO);
}

/* The length of the well-formed UTF-8 sequence at s, or 0. */
static size_t utf8_seq(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Length of what at s must not reach a terminal raw — a C0/C1 control, DEL, a bidi or line
 * control (LRM, RLM, ALM, LRE..RLO, LRI..PDI, U+2028/9), a byte that is not well-formed
 * UTF-8 — else 0. */
static size_t control_len(const unsigned char *s)
{
	if (s[0] < 0x20 || s[0] == 0x7f)
		return 1;
	size_t n = utf8_seq(s);
	if (n == 0)
		return 1;
	if (n == 2 && ((s[0] == 0xc2 && s[1] <= 0x9f) || (s[0] == 0xd8 && s[1] == 0x9c)))
		return 2;
	if (n == 3 && s[0] == 0xe2 &&
	    ((s[1] == 0x80 && ((s[2] >= 0x8e && s[2] <= 0x8f) || (s[2] >= 0xa8 && s[2] <= 0xae))) ||
	     (s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)))
		return 3;
	return 0;
}

void pd_fputs_escaped(const char *s, FILE *f)
{
	pd_fwrite_escaped(s, strlen(s), f);
}

void pd_fwrite_escaped(const char *s, size_t len, FILE *f)
{
	const unsigned char *end = (const unsigned char *)s + len;
	for (const unsigned char *p = (const unsigned char *)s; p < end;) {
		size_t n = control_len(p); /* a NUL is a control: 1 */
		if (!n) {
			size_t k = utf8_seq(p); /* a whole character at a time */
			fwrite(p, 1, k, f);
			p += k;
			continue;
		}
		for (size_t i = 0; i < n; i++)
			fprintf(f, "\\x%02x", p[i]);
		p += n;
	}
}

void pd_err_print(const pd_err *err)
{
	/* messages carry names from untrusted places (an archive's entries, a box's paths): a
	 * terminal escape or a bidi control in one is shown as \xNN, never sent raw */
	fputs("paddock: ", stderr);
	pd_fputs_escaped(err->msg[0] ? err->msg : strerror(err->code), stderr);
	fputc('\n', stderr);
}
