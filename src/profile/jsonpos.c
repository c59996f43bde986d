/* jsonpos.c — text positions for cJSON nodes (see jsonpos.h). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "profile/jsonpos.h"

struct scan {
	const char *s;
	size_t n, i;
};

static void skip_ws(struct scan *sc)
{
	while (sc->i < sc->n && (sc->s[sc->i] == ' ' || sc->s[sc->i] == '\t' ||
				 sc->s[sc->i] == '\n' || sc->s[sc->i] == '\r'))
		sc->i++;
}

static void skip_string(struct scan *sc)
{
	sc->i++; /* opening quote */
	while (sc->i < sc->n && sc->s[sc->i] != '"')
		sc->i += sc->s[sc->i] == '\\' ? 2 : 1;
	if (sc->i < sc->n)
		sc->i++;
}

static void skip_scalar(struct scan *sc)
{
	if (sc->i < sc->n && sc->s[sc->i] == '"') {
		skip_string(sc);
		return;
	}
	while (sc->i < sc->n && !strchr(",]} \t\r\n", sc->s[sc->i]))
		sc->i++;
}

/* Expects c (after whitespace); false when the text does not match the tree. */
static bool expect(struct scan *sc, char c)
{
	skip_ws(sc);
	if (sc->i >= sc->n || sc->s[sc->i] != c)
		return false;
	sc->i++;
	return true;
}

static int walk(struct scan *sc, const cJSON *node, const cJSON *target, size_t *key, size_t *val);

/* Walks the members of an object or the elements of an array, in text order. */
static int walk_children(struct scan *sc, const cJSON *node, const cJSON *target, size_t *key,
			 size_t *val)
{
	bool object = cJSON_IsObject(node);
	if (!expect(sc, object ? '{' : '['))
		return -ENOENT;
	for (const cJSON *c = node->child; c; c = c->next) {
		skip_ws(sc);
		size_t key_off = sc->i;
		if (object) {
			if (sc->i >= sc->n || sc->s[sc->i] != '"')
				return -ENOENT;
			skip_string(sc);
			if (!expect(sc, ':'))
				return -ENOENT;
		}
		skip_ws(sc);
		if (c == target) {
			*key = key_off;
			*val = sc->i;
			return 0;
		}
		int r = walk(sc, c, target, key, val);
		if (r != -EAGAIN)
			return r;
		if (c->next && !expect(sc, ','))
			return -ENOENT;
	}
	return expect(sc, object ? '}' : ']') ? -EAGAIN : -ENOENT;
}

/* 0 when found, -EAGAIN when target is not below node (keep going), -ENOENT on mismatch. */
static int walk(struct scan *sc, const cJSON *node, const cJSON *target, size_t *key, size_t *val)
{
	skip_ws(sc);
	if (cJSON_IsObject(node) || cJSON_IsArray(node))
		return walk_children(sc, node, target, key, val);
	skip_scalar(sc);
	return -EAGAIN;
}

int json_locate(const char *text, size_t len, const cJSON *root, const cJSON *target,
		size_t *ret_key, size_t *ret_value)
{
	struct scan sc = { .s = text, .n = len, .i = 0 };
	size_t key = 0, val = 0;
	skip_ws(&sc);
	if (root == target) {
		key = val = sc.i;
	} else {
		int r = walk(&sc, root, target, &key, &val);
		if (r < 0)
			return r == -EAGAIN ? -ENOENT : r;
	}
	if (ret_key)
		*ret_key = key;
	*ret_value = val;
	return 0;
}

void json_linecol(const char *text, size_t len, size_t off, unsigned *ret_line, unsigned *ret_col)
{
	unsigned line = 1, col = 1;
	for (size_t i = 0; i < off && i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == '\n') {
			line++;
			col = 1;
		} else if ((c & 0xC0) != 0x80) {
			col++;
		}
	}
	*ret_line = line;
	*ret_col = col;
}

/* ---- strict syntax check ---- */

struct syn {
	struct scan sc;
	unsigned max_depth;
	const char *what;
};

static int syn_fail(struct syn *y, const char *what)
{
	y->what = what;
	return -EINVAL;
}

static bool at(const struct syn *y, char c)
{
	return y->sc.i < y->sc.n && y->sc.s[y->sc.i] == c;
}

static bool is_digit(const struct syn *y)
{
	return y->sc.i < y->sc.n && y->sc.s[y->sc.i] >= '0' && y->sc.s[y->sc.i] <= '9';
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
}

/* the four hex digits at s[i], or above 0xffff when they are not */
static unsigned hex4(const struct scan *sc, size_t i)
{
	unsigned v = 0;
	for (size_t k = 0; k < 4; k++) {
		if (i + k >= sc->n || !is_hex(sc->s[i + k]))
			return 0x10000;
		char c = sc->s[i + k];
		v = v * 16 + (unsigned)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	return v;
}

static int syn_escape(struct syn *y)
{
	struct scan *sc = &y->sc;
	sc->i++; /* the backslash */
	if (sc->i >= sc->n)
		return syn_fail(y, "unterminated string");
	if (sc->s[sc->i] && strchr("\"\\/bfnrt", sc->s[sc->i])) {
		sc->i++;
		return 0;
	}
	if (sc->s[sc->i] != 'u')
		return syn_fail(y, "invalid escape in string");
	unsigned v = hex4(sc, sc->i + 1);
	if (v > 0xffff)
		return syn_fail(y, "invalid \\u escape in string");
	/* UTF-16 surrogates come in pairs (cJSON refuses a lone one, without saying where) */
	if (v >= 0xdc00 && v <= 0xdfff)
		return syn_fail(y, "a \\u escape of a low surrogate without a high one before it");
	if (v >= 0xd800 && v <= 0xdbff) {
		size_t j = sc->i + 5;
		unsigned lo = j + 1 < sc->n && sc->s[j] == '\\' && sc->s[j + 1] == 'u' ? hex4(sc, j + 2) : 0x10000;
		if (lo < 0xdc00 || lo > 0xdfff)
			return syn_fail(y, "a \\u escape of a high surrogate without a low one after it");
		sc->i += 6;
	}
	sc->i += 5;
	return 0;
}

/* The length of the UTF-8 sequence at s (n bytes left), or 0 when it is not well-formed
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (len == 0 || len > n)
		return 0;
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

static int syn_string(struct syn *y)
{
	struct scan *sc = &y->sc;
	sc->i++; /* opening quote */
	while (sc->i < sc->n && sc->s[sc->i] != '"') {
		unsigned char c = (unsigned char)sc->s[sc->i];
		if (c < 0x20)
			return syn_fail(y, "control character in string (escape it)");
		if (c == '\\') {
			int r = syn_escape(y);
			if (r < 0)
				return r;
		} else if (c >= 0x80) {
			size_t len = utf8_len((const unsigned char *)sc->s + sc->i, sc->n - sc->i);
			if (len == 0)
				return syn_fail(y, "invalid UTF-8 in string");
			sc->i += len;
		} else {
			sc->i++;
		}
	}
	if (sc->i >= sc->n)
		return syn_fail(y, "unterminated string");
	sc->i++;
	return 0;
}

static int syn_digits(struct syn *y)
{
	if (!is_digit(y))
		return syn_fail(y, "invalid number");
	while (is_digit(y))
		y->sc.i++;
	return 0;
}

static int syn_number(struct syn *y)
{
	struct scan *sc = &y->sc;
	if (at(y, '-'))
		sc->i++;
	if (at(y, '0'))
		sc->i++;
	else if (syn_digits(y) < 0)
		return -EINVAL;
	if (at(y, '.')) {
		sc->i++;
		if (syn_digits(y) < 0)
			return -EINVAL;
	}
	if (at(y, 'e') || at(y, 'E')) {
		sc->i++;
		if (at(y, '+') || at(y, '-'))
			sc->i++;
		if (syn_digits(y) < 0)
			return -EINVAL;
	}
	return 0;
}

static int syn_literal(struct syn *y)
{
	static const char *const lits[] = { "true", "false", "null" };
	struct scan *sc = &y->sc;
	for (size_t k = 0; k < 3; k++) {
		size_t l = strlen(lits[k]);
		if (sc->n - sc->i >= l && !memcmp(sc->s + sc->i, lits[k], l)) {
			sc->i += l;
			return 0;
		}
	}
	return syn_fail(y, "expected a value");
}

static int syn_value(struct syn *y, unsigned depth);

static int syn_member(struct syn *y, bool object, unsigned depth)
{
	struct scan *sc = &y->sc;
	skip_ws(sc);
	if (object) {
		if (!at(y, '"'))
			return syn_fail(y, "expected a key in double quotes");
		int r = syn_string(y);
		if (r < 0)
			return r;
		skip_ws(sc);
		if (!at(y, ':'))
			return syn_fail(y, "expected ':' after the key");
		sc->i++;
	}
	return syn_value(y, depth + 1);
}

static int syn_container(struct syn *y, unsigned depth)
{
	struct scan *sc = &y->sc;
	bool object = at(y, '{');
	char close = object ? '}' : ']';
	if (depth >= y->max_depth)
		return syn_fail(y, "nested too deeply");
	sc->i++;
	skip_ws(sc);
	if (at(y, close)) {
		sc->i++;
		return 0;
	}
	for (;;) {
		int r = syn_member(y, object, depth);
		if (r < 0)
			return r;
		skip_ws(sc);
		if (at(y, close)) {
			sc->i++;
			return 0;
		}
		if (!at(y, ','))
			return syn_fail(y, object ? "expected ',' or '}'" : "expected ',' or ']'");
		sc->i++;
	}
}

static int syn_value(struct syn *y, unsigned depth)
{
	struct scan *sc = &y->sc;
	skip_ws(sc);
	if (sc->i >= sc->n)
		return syn_fail(y, "unexpected end of text");
	char c = sc->s[sc->i];
	if (c == '{' || c == '[')
		return syn_container(y, depth);
	if (c == '"')
		return syn_string(y);
	if (c == '-' || (c >= '0' && c <= '9'))
		return syn_number(y);
	return syn_literal(y);
}

int json_check_syntax(const char *text, size_t len, unsigned max_depth, size_t *ret_off,
		      const char **ret_what)
{
	struct syn y = { .sc = { .s = text, .n = len, .i = 0 }, .max_depth = max_depth };
	int r = syn_value(&y, 0);
	if (r == 0) {
		skip_ws(&y.sc);
		if (y.sc.i < len)
			r = syn_fail(&y, "unexpected text after the end");
	}
	if (r < 0) {
		*ret_off = y.sc.i;
		*ret_what = y.what;
	}
	return r;
}

ssize_t json_find_nul(const char *s, size_t len)
{
	const char *nul = memchr(s, '\0', len);
	if (nul)
		return nul - s;
	for (size_t i = 0; i + 1 < len; i++) {
		if (s[i] != '\\')
			continue;
		if (i + 6 <= len && s[i + 1] == 'u' && !memcmp(s + i + 2, "0000", 4))
			return (ssize_t)i;
		i++; /* skip the escaped character ("\\u0000" is not an escaped NUL) */
	}
	return -1;
}
