/* name.c — host name canonicalisation (see name.h for the rules and why). */
#include <errno.h>
#include <string.h>

#include "egress/name.h"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_hex(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* A label that inet_aton() or the WHATWG URL host parser would read as a number: decimal,
 * octal (leading 0, still all digits) or hex ("0x" then zero or more hex digits). */
static bool label_is_numeric(const char *l, size_t n)
{
	if (n == 0)
		return false;
	if (n >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X')) {
		for (size_t i = 2; i < n; i++)
			if (!is_hex(l[i]))
				return false;
		return true;
	}
	for (size_t i = 0; i < n; i++)
		if (!is_digit(l[i]))
			return false;
	return true;
}

bool egress_name_is_ip_literal(const char *in, size_t inlen)
{
	if (memchr(in, ':', inlen) || memchr(in, '[', inlen))
		return true; /* IPv6 in any spelling, bracketed or not, incl. ::ffff:a.b.c.d */
	if (inlen > 0 && in[inlen - 1] == '.')
		inlen--;
	size_t start = inlen;
	while (start > 0 && in[start - 1] != '.')
		start--;
	/* Only the last label decides: no real TLD is numeric, and both inet_aton() and URL
	 * parsers treat "x.y.123" style names as (invalid) addresses, never as host names. */
	return label_is_numeric(in + start, inlen - start);
}

static int check_char(unsigned char c)
{
	if (c >= 0x80)
		return -EILSEQ;
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit((char)c) || c == '-' ||
	    c == '_' || c == '.')
		return 0;
	return -EINVAL;
}

static int check_label(const char *l, size_t n)
{
	if (n == 0)
		return -EINVAL;
	if (n > EGRESS_LABEL_MAX)
		return -ENAMETOOLONG;
	if (l[0] == '-' || l[n - 1] == '-')
		return -EINVAL;
	return 0;
}

/* Validates characters and label structure of in[0..len) (trailing dot already removed). */
static int check_structure(const char *in, size_t len)
{
	size_t start = 0;
	for (size_t i = 0; i <= len; i++) {
		if (i < len && in[i] != '.') {
			int r = check_char((unsigned char)in[i]);
			if (r < 0)
				return r;
			continue;
		}
		int r = check_label(in + start, i - start);
		if (r < 0)
			return r;
		start = i + 1;
	}
	return 0;
}

int egress_name_canon_n(const char *in, size_t inlen, char *out, size_t outlen)
{
	if (inlen > EGRESS_NAME_MAX + 1)
		return -ENAMETOOLONG;
	if (egress_name_is_ip_literal(in, inlen))
		return -EADDRNOTAVAIL;
	size_t len = inlen;
	if (len > 0 && in[len - 1] == '.')
		len--; /* exactly one: "a.example.." keeps an empty label and is refused below */
	if (len == 0)
		return -EINVAL;
	int r = check_structure(in, len);
	if (r < 0)
		return r;
	if (len > EGRESS_NAME_MAX)
		return -ENAMETOOLONG;
	if (outlen < len + 1)
		return -ENOBUFS;
	for (size_t i = 0; i < len; i++)
		out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] - 'A' + 'a') : in[i];
	out[len] = '\0';
	return (int)len;
}

int egress_name_canon(const char *in, char *out, size_t outlen)
{
	return egress_name_canon_n(in, strnlen(in, EGRESS_NAME_MAX + 2), out, outlen);
}

const char *egress_name_strerror(int r)
{
	switch (r) {
	case -EINVAL:
		return "not a valid host name";
	case -ENAMETOOLONG:
		return "host name or label too long";
	case -EILSEQ:
		return "non-ASCII host name (write internationalised names as xn-- A-labels)";
	case -EADDRNOTAVAIL:
		return "IP address literals are not host names";
	case -ENOBUFS:
		return "host name buffer too small";
	default:
		return r >= 0 ? "valid host name" : "invalid host name";
	}
}
