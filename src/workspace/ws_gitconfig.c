/* ws_gitconfig.c — remove credentials from a git config before it is copied into a box
 * (pure). Removed: every [credential] / [credential "url"] section, every extraHeader line
 * (http.extraHeader carries "Authorization: ..." in CI checkouts), and the userinfo of
 * http(s) URLs ("https://user:token@host/..." -> "https://host/...") or the password part of
 * other URLs. Everything else is kept byte for byte so the box's git works the same. */
#include <strings.h>

#include "ws_ignore.h"

struct buf {
	char *p;
	size_t len;
};

static void append(struct buf *b, const char *s, size_t n)
{
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static const char *skip_ws(const char *s, const char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	return s;
}

/* For a "[section ...]" line, whether the section is a credential section. */
static bool credential_header(const char *s, const char *end)
{
	s = skip_ws(s, end);
	if (s >= end || *s != '[')
		return false;
	s = skip_ws(s + 1, end);
	return (size_t)(end - s) >= 10 && strncasecmp(s, "credential", 10) == 0;
}

static bool is_header(const char *s, const char *end)
{
	s = skip_ws(s, end);
	return s < end && *s == '[';
}

static bool extraheader_key(const char *s, const char *end)
{
	s = skip_ws(s, end);
	static const char key[] = "extraheader";
	size_t k = sizeof(key) - 1;
	if ((size_t)(end - s) < k || strncasecmp(s, key, k) != 0)
		return false;
	s = skip_ws(s + k, end);
	return s == end || *s == '=' || *s == '\r';
}

/* Copies one line, dropping URL userinfo; returns whether it removed something. */
static bool copy_stripping_userinfo(struct buf *out, const char *s, const char *end)
{
	bool changed = false;
	while (s < end) {
		const char *sep = memmem(s, (size_t)(end - s), "://", 3);
		if (!sep) {
			append(out, s, (size_t)(end - s));
			break;
		}
		const char *auth = sep + 3, *a = auth;
		while (a < end && !strchr("/ \t\"'\r;#", *a))
			a++;
		const char *at = memrchr(auth, '@', (size_t)(a - auth));
		const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		bool http = (sep - s >= 4 && strncasecmp(sep - 4, "http", 4) == 0) ||
			    (sep - s >= 5 && strncasecmp(sep - 5, "https", 5) == 0);
		append(out, s, (size_t)(auth - s));
		if (at && (http || colon)) {
			if (!http) /* ssh://user:pass@ -> ssh://user@ */
				append(out, auth, (size_t)(colon - auth)), append(out, "@", 1);
			changed = true;
			s = at + 1;
		} else {
			s = auth;
		}
	}
	return changed;
}

static bool continues(const char *s, const char *end)
{
	size_t n = 0;
	while (end > s && (end[-1] == '\r' || end[-1] == '\n'))
		end--;
	while (end > s && end[-1] == '\\')
		end--, n++;
	return n % 2 == 1;
}

/* For a "[section "sub"] key = value" line (git takes a key after the header on the same
 * line), where the header ends (just past its ']'); NULL when it does not close. */
static const char *header_end(const char *s, const char *end)
{
	s = skip_ws(s, end) + 1; /* past '[' */
	bool quoted = false;
	for (; s < end; s++) {
		if (quoted && *s == '\\' && s + 1 < end)
			s++;
		else if (*s == '"')
			quoted = !quoted;
		else if (!quoted && *s == ']')
			return s + 1;
	}
	return NULL;
}

char *ws_gitconfig_filter(const char *in, size_t len, size_t *ret_len, bool *ret_changed)
{
	struct buf out = {.p = xmalloc(len + 1)};
	bool in_cred = false, drop = false, cont = false, changed = false;
	for (const char *s = in, *end = in + len; s < end;) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl + 1 : end; /* the line with its newline */
		const char *keep_to = NULL; /* a header line whose own key goes: the header stays */
		if (!cont) { /* a continuation line shares the fate of the line it continues */
			const char *he = is_header(s, e) ? header_end(s, e) : NULL;
			if (is_header(s, e))
				in_cred = credential_header(s, e);
			drop = in_cred || extraheader_key(s, e) || (he && extraheader_key(he, e));
			if (drop && !in_cred && he)
				keep_to = he;
		}
		if (keep_to) {
			append(&out, s, (size_t)(keep_to - s));
			if (e > s && e[-1] == '\n')
				append(&out, "\n", 1);
			changed = true;
		} else if (drop) {
			changed = true;
		} else {
			changed |= copy_stripping_userinfo(&out, s, e);
		}
		cont = continues(s, e);
		s = e;
	}
	out.p[out.len] = '\0';
	*ret_len = out.len;
	*ret_changed = changed;
	return out.p;
}
